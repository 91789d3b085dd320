package edits

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources:
          requests:
            cpu: 300m
      - name: sidecar
        image: envoy
`

// repoFiles is a base rendered by one environment, env, in namespace shop.
func repoFiles(extra map[string]string) map[string]string {
	files := map[string]string{
		"base/kustomization.yaml": "resources:\n- web.yaml\n",
		"base/web.yaml":           webManifest,
		"env/kustomization.yaml":  "namespace: shop\nresources:\n- ../base\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// testRepo is a repository on disk with its index and workspace.
type testRepo struct {
	root *os.Root
	abs  string
	w    *Workspace
}

// newTestRepo writes files under a temporary directory and opens a
// workspace of it that indexes Deployment web.
func newTestRepo(t *testing.T, files map[string]string) testRepo {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	want := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{{Group: "apps", Kind: "Deployment", Name: "web"}: true}, Dir: ".", Deployers: true}
	idx, err := repoindex.BuildIndex(context.Background(), root.FS(), ".", want, repoindex.DefaultMaxFileSize)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return testRepo{root: root, abs: abs, w: NewWorkspace(root.FS(), idx, repoindex.DefaultMaxFileSize, abs)}
}

// webChange sets the cpu request of container of Deployment web in shop.
func webChange(container, cpu string) Resources {
	return Resources{
		Target:    repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Container: container,
		Requests:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
	}
}

// resolve finds the document that defines c's target for env.
func (r testRepo) resolve(t *testing.T, c Resources) repoindex.DocRef {
	t.Helper()
	ref, _, err := r.w.Index.Resolve(c.sought(), "env")
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// renderedCPU builds env with the run's edits and returns the cpu request
// of container of web as rendered.
func (r testRepo) renderedCPU(t *testing.T, container string) string {
	t.Helper()
	out, err := r.w.BuildEnv("env", true)
	if err != nil {
		t.Fatalf("env does not build with the edits: %v", err)
	}
	obj := out["apps/Deployment/shop/web"]
	ctr := tree.Item(tree.Dig(obj, "spec", "template", "spec", "containers"), container)
	cpu, _ := tree.Dig(ctr, "resources", "requests", "cpu").(string)
	return cpu
}

// TestPatch covers writing a change as a kustomize patch of the
// environment: a new patch file listed in patches, or an existing patch of
// the object gaining the container's values, and what env then renders.
func TestPatch(t *testing.T) {
	const patchHead = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n"
	withPatch := func(body string) map[string]string {
		return repoFiles(map[string]string{
			"env/kustomization.yaml": "namespace: shop\nresources:\n- ../base\npatches:\n- path: p.yaml\n",
			"env/p.yaml":             patchHead + body,
		})
	}
	newPatch := "env/recommend-job-deployment-web.yaml"
	tests := []struct {
		name      string
		files     map[string]string
		container string
		file      string
		touched   []string
		kustLists string // a line env/kustomization.yaml must hold after
	}{{
		name:      "a new patch file listed in patches",
		files:     repoFiles(nil),
		container: "app",
		file:      newPatch,
		touched:   []string{newPatch, "env/kustomization.yaml"},
		kustLists: "- path: recommend-job-deployment-web.yaml\n",
	}, {
		name:      "an existing patch that sets the container's resources",
		files:     withPatch("      - name: app\n        resources:\n          requests:\n            cpu: 400m\n"),
		container: "app",
		file:      "env/p.yaml",
		touched:   []string{"env/p.yaml"},
	}, {
		name:      "an existing patch of the container without resources",
		files:     withPatch("      - name: app\n        image: nginx:2\n"),
		container: "app",
		file:      "env/p.yaml",
		touched:   []string{"env/p.yaml"},
	}, {
		name:      "an existing patch of another container gains this one",
		files:     withPatch("      - name: sidecar\n        image: envoy:2\n"),
		container: "app",
		file:      "env/p.yaml",
		touched:   []string{"env/p.yaml"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t, tt.files)
			c := webChange(tt.container, "250m")
			file, changed, touched, err := r.w.Patch(c, r.resolve(t, c))
			if err != nil {
				t.Fatal(err)
			}
			if file != tt.file || !changed || !slices.Equal(touched, tt.touched) {
				t.Errorf("Patch = %s, %v, %v; want %s, true, %v", file, changed, touched, tt.file, tt.touched)
			}
			if data, orig, _ := r.w.FileEdits("base/web.yaml"); !bytes.Equal(data, orig) {
				t.Error("the base was edited")
			}
			if got := r.renderedCPU(t, tt.container); got != "250m" {
				t.Errorf("env renders cpu %q, want 250m", got)
			}
			if data, _, _ := r.w.FileEdits("env/kustomization.yaml"); tt.kustLists != "" && !bytes.Contains(data, []byte(tt.kustLists)) {
				t.Errorf("env/kustomization.yaml does not list the patch:\n%s", data)
			}
		})
	}
}

// TestUndo checks that an edit undone leaves every file it touched as it
// was, and that a patch it wrote is dropped from its kustomization too.
func TestUndo(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, r testRepo) []string // the files it touched
	}{{
		name: "in place",
		edit: func(t *testing.T, r testRepo) []string {
			c := webChange("app", "250m")
			changed, err := r.w.InPlace(c, r.resolve(t, c), nil)
			if err != nil || !changed {
				t.Fatalf("InPlace = %v, %v", changed, err)
			}
			return []string{"base/web.yaml"}
		},
	}, {
		name: "a new patch",
		edit: func(t *testing.T, r testRepo) []string {
			c := webChange("app", "250m")
			_, _, touched, err := r.w.Patch(c, r.resolve(t, c))
			if err != nil {
				t.Fatal(err)
			}
			return touched
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t, repoFiles(nil))
			r.w.Begin()
			touched := tt.edit(t, r)
			if len(r.w.Edited()) == 0 {
				t.Fatal("the edit changed nothing")
			}
			r.w.Undo()
			if e := r.w.Edited(); len(e) != 0 {
				t.Errorf("after Undo, files still edited: %v", slices.Collect(maps.Keys(e)))
			}
			for _, f := range touched {
				data, orig, ok := r.w.FileEdits(f)
				if strings.HasPrefix(filepath.Base(f), "recommend-job-") {
					if ok {
						t.Errorf("%s, written by the undone edit, is still open", f)
					}
					continue
				}
				if !bytes.Equal(data, orig) {
					t.Errorf("%s after Undo:\n%s\nwant:\n%s", f, data, orig)
				}
			}
			for _, k := range r.w.Index.Graph.ByDir {
				for _, p := range k.Patches {
					if strings.HasPrefix(filepath.Base(p), "recommend-job-") {
						t.Errorf("%s still lists %s", k.File, p)
					}
				}
			}
			// The same edit can be made again after it was undone.
			r.w.Begin()
			tt.edit(t, r)
			r.w.End()
			r.w.Undo() // the journal is closed: nothing to undo
			if got := r.renderedCPU(t, "app"); got != "250m" {
				t.Errorf("after End, Undo undid the edit: env renders cpu %q", got)
			}
		})
	}
}

// TestWrite checks that only the files whose bytes changed are written,
// new patches included, and that their names come back sorted.
func TestWrite(t *testing.T) {
	r := newTestRepo(t, repoFiles(nil))
	c := webChange("app", "250m")
	if _, _, _, err := r.w.Patch(c, r.resolve(t, c)); err != nil {
		t.Fatal(err)
	}
	// Opened and edited back to its bytes: not written.
	fe, err := r.w.File("base/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fe.SetData([]byte("edited\n"))
	fe.Revert()
	written, err := r.w.Write(r.root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"env/kustomization.yaml", "env/recommend-job-deployment-web.yaml"}
	if !slices.Equal(written, want) {
		t.Errorf("Write = %v, want %v", written, want)
	}
	for _, name := range append(want, "base/web.yaml") {
		disk, err := os.ReadFile(filepath.Join(r.abs, filepath.FromSlash(name)))
		data, _, _ := r.w.FileEdits(name)
		if err != nil || !bytes.Equal(disk, data) {
			t.Errorf("%s on disk = %q (%v), want %q", name, disk, err, data)
		}
	}
}
