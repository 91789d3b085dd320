// Package image writes the job's container image as an OCI image layout
// archive from the static binary alone: the image the Dockerfile's final
// stage describes (the binary at /recommend-job, user 65532, the binary
// as entrypoint, no shell), with no base image to pull and no Docker.
// The Dockerfile stays the way users with a registry build the image;
// this is how the test bed gets one to import into a node's containerd.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // go-digest's SHA-256, registered
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// What the Dockerfile's final stage says; TestDockerfileAgrees holds the
// two together.
const (
	// BinaryPath is where the binary is, and the entrypoint.
	BinaryPath = "/recommend-job"
	// User is the user and group the image runs as: distroless' nonroot.
	User = "65532:65532"
	// CACertificates is where the image keeps the CA bundle, where Go
	// looks for one on Linux.
	CACertificates = "/etc/ssl/certs/ca-certificates.crt"
)

// nonroot is the user 65532's name and home, as distroless names them.
const nonroot = "nonroot"

// ErrNotStatic means the binary needs a dynamic loader, which an image
// with nothing else in it does not have.
var ErrNotStatic = errors.New("not a static binary")

// Options say what goes into the image.
type Options struct {
	// Binary is the path of the job's static Linux binary.
	Binary string
	// CACertificates is the path of the CA bundle the job verifies TLS
	// servers with (Debian's ca-certificates).
	CACertificates string
	// Name is the image's reference name (recommend-job:dev), as
	// containerd imports it.
	Name string
	// Version is the job's version, the image's version label.
	Version string
	// Architecture is the binary's, in Go's spelling (amd64, arm64).
	Architecture string
	// Entrypoint is where the binary goes and runs from; empty means
	// BinaryPath. The test bed's node images its other static programs
	// (the sandbox process) this way.
	Entrypoint string
}

// entrypoint is where opts put the binary.
func (opts Options) entrypoint() string {
	if opts.Entrypoint != "" {
		return opts.Entrypoint
	}
	return BinaryPath
}

// Write writes the image as an OCI image layout archive to w and returns
// the digest of its manifest. Every time in it is the Unix epoch, so the
// same inputs make the same bytes.
func Write(w io.Writer, opts Options) (digest.Digest, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return "", fmt.Errorf("read binary: %w", err)
	}
	if err := checkStatic(bin); err != nil {
		return "", fmt.Errorf("binary %s: %w", opts.Binary, err)
	}
	certs, err := os.ReadFile(opts.CACertificates)
	if err != nil {
		return "", fmt.Errorf("read CA certificates: %w", err)
	}
	layer, diffID, err := rootLayer(opts.entrypoint(), bin, certs)
	if err != nil {
		return "", err
	}
	cfg, err := json.Marshal(config(opts, diffID))
	if err != nil {
		return "", err
	}
	layerDesc := describe(ocispec.MediaTypeImageLayerGzip, layer)
	configDesc := describe(ocispec.MediaTypeImageConfig, cfg)
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: configDesc, Layers: []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return "", err
	}
	manifestDesc := describe(ocispec.MediaTypeImageManifest, manifest)
	manifestDesc.Annotations = map[string]string{
		ocispec.AnnotationRefName:  opts.Name,
		"io.containerd.image.name": opts.Name,
	}
	manifestDesc.Platform = &ocispec.Platform{OS: "linux", Architecture: opts.Architecture}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return "", err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return "", err
	}
	archive := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", index},
		{blobPath(manifestDesc.Digest), manifest},
		{blobPath(configDesc.Digest), cfg},
		{blobPath(layerDesc.Digest), layer},
	} {
		if err := writeFile(archive, f.name, f.data, 0o644, 0); err != nil {
			return "", fmt.Errorf("write image archive: %w", err)
		}
	}
	if err := archive.Close(); err != nil {
		return "", fmt.Errorf("write image archive: %w", err)
	}
	return manifestDesc.Digest, nil
}

// checkStatic refuses an ELF binary that names a dynamic loader.
func checkStatic(bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: it needs a dynamic loader (build it with CGO_ENABLED=0)", ErrNotStatic)
		}
	}
	return nil
}

// config is the image's configuration: what the Dockerfile's final stage
// and its distroless base say.
func config(opts Options, diffID digest.Digest) ocispec.Image {
	epoch := time.Unix(0, 0).UTC()
	return ocispec.Image{
		Created:  &epoch,
		Platform: ocispec.Platform{OS: "linux", Architecture: opts.Architecture},
		Config: ocispec.ImageConfig{
			User:       User,
			Entrypoint: []string{opts.entrypoint()},
			Env:        []string{"PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CACertificates},
			WorkingDir: "/home/" + nonroot,
			Labels:     map[string]string{ocispec.AnnotationVersion: opts.Version},
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{Created: &epoch, CreatedBy: "recommend-job image: " + opts.entrypoint() + " as " + User}},
	}
}

// rootLayer returns the image's one layer, gzipped, and the digest of its
// uncompressed tar (its diff ID): the binary, the CA bundle, the users
// and groups of distroless' base, nonroot's home and /tmp.
func rootLayer(entrypoint string, bin, certs []byte) ([]byte, digest.Digest, error) {
	var raw bytes.Buffer
	t := tar.NewWriter(&raw)
	entries := []struct {
		name string
		data []byte
		mode int64
		uid  int
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			nonroot + ":x:65532:65532:" + nonroot + ":/home/" + nonroot + ":/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\n" + nonroot + ":x:65532:\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CACertificates[1:], mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/" + nonroot + "/", mode: 0o700, uid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, data: bin},
	}
	for _, e := range entries {
		var err error
		if e.dir {
			err = t.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
		} else {
			err = writeFile(t, e.name, e.data, e.mode, e.uid)
		}
		if err != nil {
			return nil, "", fmt.Errorf("write layer: %w", err)
		}
	}
	if err := t.Close(); err != nil {
		return nil, "", fmt.Errorf("write layer: %w", err)
	}
	diffID := digest.FromBytes(raw.Bytes())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", fmt.Errorf("compress layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, "", fmt.Errorf("compress layer: %w", err)
	}
	return gz.Bytes(), diffID, nil
}

// writeFile writes a regular file of data to t, owned by uid.
func writeFile(t *tar.Writer, name string, data []byte, mode int64, uid int) error {
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
		Uid: uid, Gid: uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := t.Write(data)
	return err
}

// describe returns the descriptor of a blob.
func describe(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}

// blobPath is where an OCI image layout keeps a blob.
func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}
