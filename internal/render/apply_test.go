package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

const simple = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
  namespace: ns
spec:
  template:
    spec:
      containers:
        - name: app
          image: example/app:1
`

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestApplyPathErrors(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"clusters/prod/x.yaml": simple})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"x.yaml": simple})
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, root, path string
	}{
		{"parent", root, "../x"},
		{"parent after clean", root, "clusters/../../x"},
		{"absolute", root, outside},
		{"symlink out of root", root, "escape"},
		{"missing path", root, "clusters/staging"},
		{"missing root", filepath.Join(root, "nope"), "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Apply(context.Background(), tt.root, tt.path, []Change{requests("app", "cpu", "1")})
			if err == nil {
				t.Fatalf("no error; outcome %+v", out)
			}
		})
	}
	got, err := os.ReadFile(filepath.Join(outside, "x.yaml"))
	if err != nil || string(got) != simple {
		t.Errorf("file outside the root changed: %q, %v", got, err)
	}
}

func TestApplyPathSubdirectory(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"clusters/prod/x.yaml":    simple,
		"clusters/staging/x.yaml": simple,
	})
	c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
	out, err := Apply(context.Background(), root, filepath.FromSlash("clusters/prod"), []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || r.File != "clusters/prod/x.yaml" || !r.Changed {
		t.Fatalf("result %+v", r)
	}
	if got := strings.Join(out.Files, ","); got != "clusters/prod/x.yaml" {
		t.Errorf("Files = %s", got)
	}
}

func TestApplyCanceled(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"x.yaml": simple})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
	if _, err := Apply(ctx, root, ".", []Change{c}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "x.yaml")); string(got) != simple {
		t.Error("file written despite the canceled context")
	}
}

func TestApplyInvalidChanges(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"x.yaml": simple})
	target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}
	tests := []struct {
		name   string
		change Change
	}{
		{"no kind", Change{Target: Target{APIVersion: "apps/v1", Name: "x"}, Container: "app"}},
		{"no container", Change{Target: target}},
		{"bad resource name", Change{Target: target, Container: "app", Requests: quantities(map[string]string{"cpu: 1\nx": "1"})}},
		// Values are quantities, written in their canonical form: no
		// malformed, octal-looking or signed text can reach a file.
		{"negative", Change{Target: target, Container: "app", Limits: quantities(map[string]string{"cpu": "-1"})}},
		// One value per resource: which of two would be written is not
		// the renderer's to choose.
		{"a resource twice", Change{Target: target, Container: "app", Requests: Values{
			{Resource: "cpu", Quantity: resource.MustParse("1")}, {Resource: "cpu", Quantity: resource.MustParse("2")}}}},
		{"out of order", Change{Target: target, Container: "app", Requests: Values{
			{Resource: "memory", Quantity: resource.MustParse("1Gi")}, {Resource: "cpu", Quantity: resource.MustParse("2")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Apply(context.Background(), root, ".", []Change{tt.change})
			if err != nil {
				t.Fatal(err)
			}
			if r := out.Results[0]; !errors.Is(r.Err, ErrInvalidChange) || r.Changed {
				t.Errorf("result %+v, want ErrInvalidChange", r)
			}
			if len(out.Files) > 0 {
				t.Errorf("wrote %v", out.Files)
			}
		})
	}
}

// TestApplyOneBadChange checks that a failing change does not stop the
// others, in the same file or elsewhere.
func TestApplyOneBadChange(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"x.yaml": simple, "y.yaml": strings.ReplaceAll(simple, "name: x", "name: y")})
	changes := []Change{
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "nope", Requests: quantities(map[string]string{"cpu": "1"})},
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})},
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "y"}, Container: "app", Requests: quantities(map[string]string{"cpu": "-1"})},
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "y"}, Container: "app", Requests: quantities(map[string]string{"memory": "1Gi"})},
	}
	out, err := Apply(context.Background(), root, ".", changes)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []error{ErrContainerNotFound, nil, ErrInvalidChange, nil}
	for i, r := range out.Results {
		if !errors.Is(r.Err, wantErr[i]) || (wantErr[i] == nil && (r.Err != nil || !r.Changed)) {
			t.Errorf("change %d: %+v, want error %v", i, r, wantErr[i])
		}
	}
	if got := strings.Join(out.Files, ","); got != "x.yaml,y.yaml" {
		t.Errorf("Files = %s", got)
	}
}

func TestApplyAmbiguousNamesFiles(t *testing.T) {
	root := t.TempDir()
	doc := strings.ReplaceAll(simple, "  namespace: ns\n", "")
	writeFiles(t, root, map[string]string{"a/x.yaml": doc, "b/x.yml": doc})
	c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
	out, err := Apply(context.Background(), root, ".", []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if !errors.Is(r.Err, ErrAmbiguousTarget) || !strings.Contains(r.Err.Error(), "a/x.yaml") || !strings.Contains(r.Err.Error(), "b/x.yml") {
		t.Errorf("error %v, want ErrAmbiguousTarget naming both files", r.Err)
	}
}

// TestApplySymlinks checks that symlinked manifests are not indexed: one
// pointing inside the root would make the target ambiguous, one pointing
// outside would be written through.
func TestApplySymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	other := strings.ReplaceAll(simple, "name: x", "name: y")
	writeFiles(t, root, map[string]string{"x.yaml": simple})
	writeFiles(t, outside, map[string]string{"y.yaml": other})
	if err := os.Symlink("x.yaml", filepath.Join(root, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "y.yaml"), filepath.Join(root, "y.yaml")); err != nil {
		t.Fatal(err)
	}
	changes := []Change{
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})},
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "y"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})},
	}
	out, err := Apply(context.Background(), root, ".", changes)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || r.File != "x.yaml" {
		t.Errorf("x: %+v", r)
	}
	if r := out.Results[1]; !errors.Is(r.Err, ErrTargetNotFound) {
		t.Errorf("y: %+v, want ErrTargetNotFound", r)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "y.yaml")); string(got) != other {
		t.Error("file outside the root was written")
	}
}

func TestApplyKeepsMode(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "x.yaml")
	if err := os.WriteFile(p, []byte(simple), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "x"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
	if _, err := Apply(context.Background(), root, ".", []Change{c}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestApplyNoChanges(t *testing.T) {
	out, err := Apply(context.Background(), t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 0 || len(out.Files) != 0 {
		t.Errorf("outcome %+v", out)
	}
}
