package render

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "inplace": ModeInPlace, "patch": ModePatch} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Patch", "in-place", "x"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) accepted", in)
		}
	}
}

// TestApplyModeErrors checks that a bad mode for the run stops Apply and a
// bad mode or path for one change fails that change only.
func TestApplyModeErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"web.yaml": proofWeb})
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	if _, err := Apply(context.Background(), dir, ".", nil, WithMode("sometimes")); err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("Apply with mode sometimes: err = %v", err)
	}
	out, err := Apply(context.Background(), dir, ".", []Change{
		{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "1"}), Mode: "always"},
		{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "1"}), Path: "../elsewhere"},
		{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "1"}), Path: "nowhere"},
		{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "200m"}), Path: "."},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{ErrInvalidChange, ErrInvalidChange, ErrTargetNotFound, nil} {
		if r := out.Results[i]; !errors.Is(r.Err, want) || (want == nil && r.Err != nil) {
			t.Errorf("change %d: Err = %v, want %v", i, r.Err, want)
		}
	}
	if !out.Results[3].Changed {
		t.Errorf("change 3 not applied")
	}
}

// TestAmbiguousNamesCandidates checks that an ambiguous target lists every
// candidate and says what would tell them apart, and that the kustomization
// rendering each is named.
func TestAmbiguousNamesCandidates(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml]\n",
		"base/web.yaml":           proofWeb,
		"eu/kustomization.yaml":   "namespace: shop\nresources: [../base]\n",
		"us/kustomization.yaml":   "namespace: shop\nresources: [../base]\n",
	})
	c := Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})}
	out, err := Apply(context.Background(), dir, ".", []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if !errors.Is(r.Err, ErrAmbiguousTarget) {
		t.Fatalf("Err = %v, want ErrAmbiguousTarget", r.Err)
	}
	for _, want := range []string{"via eu/kustomization.yaml", "via us/kustomization.yaml", AnnotationPath} {
		if !strings.Contains(r.Err.Error(), want) {
			t.Errorf("error %q does not mention %q", r.Err, want)
		}
	}

	// The path annotation picks one overlay; the base is shared, so it is
	// patched there.
	c.Path = "us"
	out, err = Apply(context.Background(), dir, ".", []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || r.File != "us/recommend-job-deployment-web.yaml" {
		t.Errorf("with path us: File %q, Err %v", r.File, r.Err)
	}
}

// TestWithPaths checks that the run's namespace mapping narrows like a
// change's own path, which wins over it.
func TestWithPaths(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"eu/web.yaml": proofWeb,
		"us/web.yaml": proofWeb,
	})
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	changes := []Change{
		{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "1"})},
		{Target: web, Container: "app", Requests: quantities(map[string]string{"memory": "1Gi"}), Path: "us"},
	}
	out, err := Apply(context.Background(), dir, ".", changes, WithPaths(map[string]string{"shop": "eu"}))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"eu/web.yaml", "us/web.yaml"} {
		if r := out.Results[i]; r.Err != nil || r.File != want || !r.Changed {
			t.Errorf("change %d: File %q, Changed %v, Err %v; want %s changed", i, r.File, r.Changed, r.Err, want)
		}
	}
	if out.Results[0].Change.Path != "" {
		t.Errorf("Result.Change.Path = %q, want the change as given", out.Results[0].Change.Path)
	}
}
