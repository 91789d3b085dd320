package testbed

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// writeTarball writes a gzipped tarball of files to path and returns its
// npm integrity.
func writeTarball(t *testing.T, path string, files map[string]string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestMermaidTarball(t *testing.T) {
	dir := t.TempDir()
	tarball := filepath.Join(dir, "mermaid.tgz")
	integrity := writeTarball(t, tarball, map[string]string{
		"package/README.md": "readme",
		mermaidBundle:       "window.mermaid = {};",
	})
	for _, tt := range []struct {
		name      string
		integrity string
		wantErr   bool
	}{
		{"pinned", integrity, false},
		{"other bytes", "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, sha512.Size)), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkIntegrity(tarball, tt.integrity); (err != nil) != tt.wantErr {
				t.Errorf("checkIntegrity() error = %v, want error %v", err, tt.wantErr)
			}
		})
	}

	dst := filepath.Join(dir, "mermaid.min.js")
	if err := extractFile(tarball, mermaidBundle, dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "window.mermaid = {};" {
		t.Errorf("extracted %q", got)
	}
	if err := extractFile(tarball, "package/dist/missing.js", dst); err == nil {
		t.Error("extractFile() of a member the tarball lacks succeeded")
	}
}
