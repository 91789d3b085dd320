package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

// livePrint is the print of a live Deployment whose one container app
// runs image, with resources of its own.
func livePrint(t *testing.T, image string) kinds.PodPrint {
	t.Helper()
	p, ok := kinds.PodPrintOf("apps", "Deployment", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": image,
			"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}},
	}}}})
	if !ok {
		t.Fatal("no print")
	}
	return p
}

// TestAmbiguousChosenByLiveTemplate checks that, of two overlays of one
// base, the one whose build runs the live image is where the change
// lands; that none matching, or both, is refused, naming each overlay
// with its first difference.
func TestAmbiguousChosenByLiveTemplate(t *testing.T) {
	const web = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: app
          image: nginx:1.25
          resources:
            requests:
              cpu: 300m
`
	overlay := func(tag string) string {
		return "namespace: shop\nresources: [../../base]\nimages:\n  - name: nginx\n    newTag: \"" + tag + "\"\n"
	}
	tests := []struct {
		name   string
		a, b   string // the overlays' tags
		live   string // the live image
		landed string // the file the change lands in; "" when refused
		want   []string
	}{
		{name: "b runs the live image", a: "1.27", b: "1.26", live: "nginx:1.26", landed: "overlays/b/",
			want: []string{"overlays/a: container app image nginx:1.27, live nginx:1.26", "overlays/b: as live"}},
		{name: "neither", a: "1.27", b: "1.26", live: "nginx:1.24",
			want: []string{"none of them", "overlays/a: container app image nginx:1.27, live nginx:1.24", "overlays/b: container app image nginx:1.26, live nginx:1.24"}},
		{name: "both", a: "1.26", b: "1.26", live: "nginx:1.26",
			want: []string{"2 of them", "via overlays/a/kustomization.yaml", "via overlays/b/kustomization.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"base/kustomization.yaml":       "resources: [web.yaml]\n",
				"base/web.yaml":                 web,
				"overlays/a/kustomization.yaml": overlay(tt.a),
				"overlays/b/kustomization.yaml": overlay(tt.b),
			})
			c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", PodPrint: livePrint(t, tt.live)},
				Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
			out, err := Apply(context.Background(), dir, ".", []Change{c})
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			text := r.Chosen
			if tt.landed == "" {
				if !errors.Is(r.Err, ErrAmbiguousTarget) {
					t.Fatalf("Err = %v, want ErrAmbiguousTarget", r.Err)
				}
				text = r.Err.Error()
			} else if r.Err != nil || !r.Changed || !strings.HasPrefix(r.File, tt.landed) {
				t.Fatalf("File %q, Changed %v, Err %v; want a change in %s", r.File, r.Changed, r.Err, tt.landed)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
		})
	}
}

// TestAmbiguousChosenAsDeployed checks the choice where the candidates are
// a file and a decoy copy of it in another team's directory, each its own
// output, and where two definitions of one Argo CD Application set
// different images through their kustomize overrides: the source whose
// build runs the live image is chosen.
func TestAmbiguousChosenAsDeployed(t *testing.T) {
	deployment := func(image string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  template:\n    spec:\n      containers:\n" +
			"        - name: app\n          image: " + image + "\n          resources:\n            requests:\n              cpu: 300m\n"
	}
	application := func(path, tag string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n" +
			"  destination:\n    namespace: shop\n  source:\n    repoURL: https://git.example.com/gitops.git\n    path: " + path + "\n" +
			"    kustomize:\n      images:\n        - nginx:" + tag + "\n"
	}
	tests := []struct {
		name   string
		files  map[string]string
		target Target
		landed string
	}{
		{name: "a decoy copy", landed: "team-b/web.yaml",
			files:  map[string]string{"team-a/web.yaml": deployment("nginx:1.27"), "team-b/web.yaml": deployment("nginx:1.26")},
			target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{name: "two definitions of one application", landed: "apps/b",
			files: map[string]string{
				"base/kustomization.yaml": "resources: [web.yaml]\n", "base/web.yaml": deployment("nginx:1.25"),
				"apps/a/kustomization.yaml": "resources: [../../base]\n", "apps/b/kustomization.yaml": "resources: [../../base]\n",
				"argocd/a.yaml": application("apps/a", "1.27"), "argocd/b.yaml": application("apps/b", "1.26"),
			},
			target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
				Annotations: map[string]string{ArgoTrackingID: "shop:apps/Deployment:shop/web"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			c := Change{Target: tt.target, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
			out, err := Apply(context.Background(), dir, ".", []Change{c})
			if err != nil {
				t.Fatal(err)
			}
			if r := out.Results[0]; !errors.Is(r.Err, ErrAmbiguousTarget) {
				t.Fatalf("without the live template: Err = %v, want ErrAmbiguousTarget", r.Err)
			}
			c.Target.PodPrint = livePrint(t, "nginx:1.26")
			if out, err = Apply(context.Background(), dir, ".", []Change{c}); err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if r.Err != nil || !r.Changed || !strings.HasPrefix(r.File, tt.landed) || r.Chosen == "" {
				t.Errorf("File %q, Changed %v, Chosen %q, Err %v; want a change in %s", r.File, r.Changed, r.Chosen, r.Err, tt.landed)
			}
		})
	}
}
