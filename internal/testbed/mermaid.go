package testbed

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

const (
	// mermaidVersion is the mermaid npm package Gitea 1.26's frontend
	// pins (its package.json), so that the test bed renders what a
	// release build of Gitea renders.
	mermaidVersion = "11.14.0"
	// mermaidIntegrity is the registry's integrity of that package's
	// tarball (npm view mermaid@11.14.0 dist.integrity).
	mermaidIntegrity = "sha512-GSGloRsBs+JINmmhl0JDwjpuezCsHB4WGI4NASHxL3fHo3o/BRXTxhDLKnln8/Q0lRFRyDdEjmk1/d5Sn1Xz8g=="
	// mermaidBundle is the prebuilt browser bundle inside the tarball.
	mermaidBundle = "package/dist/mermaid.min.js"
)

// EnsureMermaid returns Mermaid's browser bundle, mermaid.min.js of the
// npm package mermaid at mermaidVersion, which it fetches once with
// npm pack into .cache/mermaid and checks against the pinned integrity.
// It takes the same lock as EnsureTools.
func EnsureMermaid(ctx context.Context, repoRoot string) (string, error) {
	dir := filepath.Join(repoRoot, ".cache", "mermaid", mermaidVersion)
	bundle := filepath.Join(dir, "mermaid.min.js")
	if _, err := os.Stat(bundle); err == nil {
		return bundle, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fetch mermaid: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(repoRoot, ".cache", "testbed-tools.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bundle); err == nil {
		return bundle, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("fetch mermaid: npm not found on PATH (install Node.js and npm): %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "pack-")
	if err != nil {
		return "", fmt.Errorf("fetch mermaid: %w", err)
	}
	defer os.RemoveAll(tmp)
	end := reportStep("fetching mermaid", "fetched mermaid",
		fmt.Sprintf("fetching mermaid@%s with npm pack (once)...", mermaidVersion))
	cmd := exec.CommandContext(ctx, npm, "pack", "--silent", "mermaid@"+mermaidVersion, "--pack-destination", tmp)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	end(err)
	if err != nil {
		return "", fmt.Errorf("fetch mermaid: npm pack: %w\n%s", err, tailLines(string(out), logTailLines))
	}
	tarball := filepath.Join(tmp, "mermaid-"+mermaidVersion+".tgz")
	if err := checkIntegrity(tarball, mermaidIntegrity); err != nil {
		return "", fmt.Errorf("fetch mermaid: %w", err)
	}
	if err := extractFile(tarball, mermaidBundle, bundle); err != nil {
		return "", fmt.Errorf("fetch mermaid: %w", err)
	}
	return bundle, nil
}

// checkIntegrity checks the file at path against an npm integrity string
// of the form sha512-<base64>.
func checkIntegrity(path, integrity string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)); got != integrity {
		return fmt.Errorf("%s has integrity %s, want %s", filepath.Base(path), got, integrity)
	}
	return nil
}

// extractFile writes the member name of the gzipped tarball at tarball to
// dst, through a temporary file so that a reader never sees half of it.
func extractFile(tarball, name, dst string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(tarball), err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s holds no %s", filepath.Base(tarball), name)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Base(tarball), err)
		}
		if hdr.Name != name || hdr.Typeflag != tar.TypeReg {
			continue
		}
		tmp := dst + ".tmp"
		out, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return fmt.Errorf("extract %s: %w", name, err)
		}
		if err := out.Close(); err != nil {
			return err
		}
		return os.Rename(tmp, dst)
	}
}
