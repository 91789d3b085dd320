package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeELF returns a 64-bit little-endian ELF executable header, with one
// PT_INTERP program header when dynamic: enough for debug/elf to read.
func fakeELF(dynamic bool) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	phnum, phoff := uint16(0), uint64(0)
	if dynamic {
		phnum, phoff = 1, 64
	}
	for _, v := range []any{uint16(2), uint16(62), uint32(1), uint64(0), phoff, uint64(0), uint32(0),
		uint16(64), uint16(56), phnum, uint16(64), uint16(0), uint16(0)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	if dynamic {
		for _, v := range []any{uint32(3), uint32(4), uint64(120), uint64(0), uint64(0), uint64(1), uint64(1), uint64(1)} {
			_ = binary.Write(&b, binary.LittleEndian, v)
		}
		b.WriteByte(0)
	}
	return b.Bytes()
}

func writeInputs(t *testing.T, bin []byte) Options {
	t.Helper()
	dir := t.TempDir()
	opts := Options{Binary: filepath.Join(dir, "recommend-job"), CACertificates: filepath.Join(dir, "ca.crt"),
		Name: "recommend-job:test", Version: "v1.2.3", Architecture: "amd64"}
	if err := os.WriteFile(opts.Binary, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(opts.CACertificates, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return opts
}

// readTar returns the regular files and directories of a tar archive by
// name, with their headers.
func readTar(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files, headers := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, headers
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], headers[h.Name] = data, h
	}
}

// blob returns the blob of d from an OCI image layout, after checking
// that its bytes are those its digest and size say.
func blob(t *testing.T, files map[string][]byte, d ocispec.Descriptor) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+d.Digest.Encoded()]
	if !ok {
		t.Fatalf("blob %s is not in the archive", d.Digest)
	}
	if digest.FromBytes(data) != d.Digest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: %d bytes of digest %s, want %d", d.Digest, len(data), digest.FromBytes(data), d.Size)
	}
	return data
}

// TestWrite reads the archive back as a runtime would: layout, index,
// manifest, config and layer, each blob checked against its digest.
func TestWrite(t *testing.T) {
	bin := fakeELF(false)
	opts := writeInputs(t, bin)
	var out bytes.Buffer
	manifestDigest, err := Write(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readTar(t, bytes.NewReader(out.Bytes()))
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != manifestDigest ||
		index.Manifests[0].Annotations["io.containerd.image.name"] != opts.Name || index.Manifests[0].Platform.Architecture != "amd64" {
		t.Fatalf("index = %+v, want the one manifest %s named %s", index, manifestDigest, opts.Name)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(blob(t, files, index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(blob(t, files, manifest.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/recommend-job"}) ||
		len(cfg.Config.Cmd) != 0 || cfg.OS != "linux" || cfg.Config.Labels[ocispec.AnnotationVersion] != "v1.2.3" {
		t.Errorf("config = %+v, want user 65532:65532, entrypoint /recommend-job, no cmd, linux, version v1.2.3", cfg)
	}
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Fatalf("layers = %+v, want one gzipped layer", manifest.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != digest.FromBytes(raw) {
		t.Errorf("diff IDs = %v, want the uncompressed layer's %s", cfg.RootFS.DiffIDs, digest.FromBytes(raw))
	}
	layer, headers := readTar(t, bytes.NewReader(raw))
	checks := []struct {
		name string
		mode int64
		uid  int
	}{
		{"recommend-job", 0o755, 0}, {"tmp/", 0o1777, 0}, {"home/nonroot/", 0o700, 65532},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0}, {"etc/passwd", 0o644, 0},
	}
	for _, c := range checks {
		h, ok := headers[c.name]
		if !ok || h.Mode != c.mode || h.Uid != c.uid {
			t.Errorf("%s: %+v, want mode %o owned by %d", c.name, h, c.mode, c.uid)
		}
	}
	if !bytes.Equal(layer["recommend-job"], bin) {
		t.Error("the layer's /recommend-job is not the binary")
	}
	if !strings.Contains(string(layer["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, want the user 65532", layer["etc/passwd"])
	}
	for name := range layer {
		if strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, "usr/") {
			t.Errorf("the layer holds %s: the image has no shell and no tools", name)
		}
	}

	var again bytes.Buffer
	if _, err := Write(&again, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Error("two writes of the same inputs differ: the image is not reproducible")
	}
}

// TestWriteEntrypoint puts another program where Options.Entrypoint says,
// and runs it from there.
func TestWriteEntrypoint(t *testing.T) {
	bin := fakeELF(false)
	opts := writeInputs(t, bin)
	opts.Entrypoint = "/pause"
	var out bytes.Buffer
	if _, err := Write(&out, opts); err != nil {
		t.Fatal(err)
	}
	files, _ := readTar(t, bytes.NewReader(out.Bytes()))
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(blob(t, files, index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(blob(t, files, manifest.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/pause"}) {
		t.Errorf("entrypoint = %v, want /pause", cfg.Config.Entrypoint)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := readTar(t, zr)
	if !bytes.Equal(layer["pause"], bin) || layer["recommend-job"] != nil {
		t.Errorf("the layer holds %d bytes at /pause and %d at /recommend-job, want the binary at /pause only",
			len(layer["pause"]), len(layer["recommend-job"]))
	}
}

func TestWriteRefusesDynamicBinaries(t *testing.T) {
	opts := writeInputs(t, fakeELF(true))
	if _, err := Write(io.Discard, opts); !errors.Is(err, ErrNotStatic) {
		t.Errorf("Write of a dynamic binary: %v, want %v", err, ErrNotStatic)
	}
	opts = writeInputs(t, []byte("#!/bin/sh\n"))
	if _, err := Write(io.Discard, opts); err == nil || !strings.Contains(err.Error(), "not an ELF binary") {
		t.Errorf("Write of a script: %v, want not an ELF binary", err)
	}
}

// TestDockerfileAgrees holds the image Write makes to the Dockerfile's
// final stage: the binary's place, the user and the entrypoint, on a
// base with nothing to run but the binary; and the binary built static.
func TestDockerfileAgrees(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 && line != "" && !strings.HasPrefix(line, "#") {
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and a final one", len(stages))
	}
	builder, final := strings.Join(stages[len(stages)-2], "\n"), stages[len(stages)-1]
	if !strings.Contains(builder, "CGO_ENABLED=0") {
		t.Error("the builder stage does not build a static binary (CGO_ENABLED=0)")
	}
	want := map[string]bool{
		"base without a shell": false, "COPY " + BinaryPath: false, "USER " + User: false, "ENTRYPOINT": false,
	}
	for _, line := range final {
		fields := strings.Fields(line)
		switch fields[0] {
		case "FROM":
			want["base without a shell"] = strings.HasPrefix(fields[1], "gcr.io/distroless/static") && strings.HasSuffix(fields[1], ":nonroot")
		case "COPY":
			want["COPY "+BinaryPath] = fields[len(fields)-1] == BinaryPath
		case "USER":
			want["USER "+User] = fields[1] == User
		case "ENTRYPOINT":
			var entry []string
			err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT")), &entry)
			want["ENTRYPOINT"] = err == nil && slices.Equal(entry, []string{BinaryPath})
		}
	}
	for what, ok := range want {
		if !ok {
			t.Errorf("the Dockerfile's final stage and the image disagree on %s", what)
		}
	}
}
