package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDeployerPatchUpdated checks that a later run with other values
// updates the patch it wrote in a deployer in place, value by value,
// rather than adding another, and that a deployer's patch that the job
// did not write is kept before the job's.
func TestDeployerPatchUpdated(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "flux-shared-kustomization", "original"), dir)
	change := func(cpu string) Change {
		return Change{
			Target:    Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "production", Name: "podinfo"},
			Container: "podinfod",
			Requests:  ValuesOf(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}),
		}
	}
	file := filepath.Join(dir, "clusters", "production", "apps.yaml")
	for i, tc := range []struct {
		cpu     string
		changed bool
	}{{"300m", true}, {"300m", false}, {"450m", true}} {
		out, err := Apply(context.Background(), dir, "", []Change{change(tc.cpu)})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Results[0]
		if r.Err != nil || r.Changed != tc.changed || r.File != "clusters/production/apps.yaml" {
			t.Fatalf("run %d: result %+v, want clusters/production/apps.yaml changed %v", i, r, tc.changed)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if n := strings.Count(text, "- patch: |"); n != 2 {
			t.Errorf("run %d: %d patches, want the replicas patch and the job's:\n%s", i, n, text)
		}
		if !strings.Contains(text, "cpu: "+tc.cpu+"\n") || strings.Index(text, "op: replace") > strings.Index(text, "cpu: ") {
			t.Errorf("run %d: want cpu %s in the job's patch after the replicas one:\n%s", i, tc.cpu, text)
		}
	}
}

// TestDeployerProofUndoes checks that a deployer patch whose build
// changes more than the values is undone: the kustomization copies the
// container's request into an annotation with a replacement.
func TestDeployerProofUndoes(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "flux-shared-kustomization", "original"), dir)
	own := filepath.Join(dir, "clusters", "production", "apps.yaml")
	data, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	kust := filepath.Join(dir, "apps", "podinfo", "kustomization.yaml")
	copied := `replacements:
  - source:
      kind: Deployment
      name: podinfo
      fieldPath: spec.template.spec.containers.[name=podinfod].resources.requests.cpu
    targets:
      - select:
          kind: Deployment
          name: podinfo
        fieldPaths:
          - metadata.annotations.cpu
        options:
          create: true
`
	base, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kust, append(base, copied...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Apply(context.Background(), dir, "", []Change{{
		Target:    Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "production", Name: "podinfo"},
		Container: "podinfod",
		Requests:  ValuesOf(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if !errors.Is(r.Err, ErrProofFailed) || !strings.Contains(r.Err.Error(), "flux-system/apps (into production)") || r.Changed || len(out.Files) != 0 {
		t.Fatalf("result %+v, files %v; want the proof as the production Kustomization to fail and nothing written", r, out.Files)
	}
	if now, _ := os.ReadFile(own); string(now) != string(data) {
		t.Errorf("%s changed although the proof failed:\n%s", own, now)
	}
}

// TestDeployedIntoAnotherNamespace checks that a file the repository's
// deployers render into other namespaces only is not the source of a
// target: production's Kustomization is not in the repository, and
// staging's renders the Deployment into staging.
func TestDeployedIntoAnotherNamespace(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "flux-shared-kustomization", "original"), dir)
	if err := os.Remove(filepath.Join(dir, "clusters", "production", "apps.yaml")); err != nil {
		t.Fatal(err)
	}
	out, err := Apply(context.Background(), dir, "", []Change{{
		Target:    Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "production", Name: "podinfo"},
		Container: "podinfod",
		Requests:  ValuesOf(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if r.Changed || !errors.Is(r.Err, ErrTargetNotFound) || !strings.Contains(r.Err.Error(), "flux-system/apps (into staging)") || len(out.Files) != 0 {
		t.Fatalf("result %+v, files %v; want not found, naming staging's Kustomization, and nothing written", r, out.Files)
	}
}
