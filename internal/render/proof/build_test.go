package proof

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// writeTree writes files (slash paths) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const proofWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: app
          resources:
            requests:
              cpu: 300m
`

// TestProveOthers checks the safety net behind the choice of in-place
// edits: an environment that reads an edited file without being built on
// the target's kustomization must render exactly what it did, or the edit
// is refused naming it; one built on the target's kustomization may change.
func TestProveOthers(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml]\n",
		"base/web.yaml":           proofWeb,
		"a/kustomization.yaml":    "namespace: a\nresources: [../base]\n",
		"b/kustomization.yaml":    "namespace: b\nresources: [../base]\n",
		"a/eu/kustomization.yaml": "namespace: a-eu\nresources: [..]\n",
	})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{{Group: "apps", Kind: "Deployment", Name: "web"}: true}, Dir: "."}
	idx, err := repoindex.BuildIndex(context.Background(), root.FS(), ".", w, repoindex.DefaultMaxFileSize)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: abs}
	repo := Repo{Index: idx, Abs: abs, Limit: repoindex.DefaultMaxFileSize}
	web := filepath.Join(abs, "base", "web.yaml")
	edited := map[string][]byte{web: []byte(strings.Replace(proofWeb, "300m", "200m", 1))}
	err = repo.ProveOthers(fsys, "a", []string{"base/web.yaml"}, edited)
	if err == nil || !strings.Contains(err.Error(), "b/kustomization.yaml") || strings.Contains(err.Error(), "a/eu") {
		t.Errorf("an edit b renders too: err = %v, want one naming b/kustomization.yaml only", err)
	}
	// A comment changes no output: b renders what it did.
	edited[web] = []byte("# web\n" + proofWeb)
	if err := repo.ProveOthers(fsys, "a", []string{"base/web.yaml"}, edited); err != nil {
		t.Errorf("an edit that changes no output: %v", err)
	}
}
