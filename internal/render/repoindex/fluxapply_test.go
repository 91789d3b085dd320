package repoindex

import (
	"context"
	"testing"
	"testing/fstest"
)

// TestFluxApplies checks the namespace each Flux Kustomization applies a
// HelmRepository into, and whether that namespace rests on more than the
// file's word: targetNamespace sets it; a Kustomization applying into its
// own namespace, or as Flux's own account, establishes it; a tenant's
// Kustomization (a service account) applying a file that claims another
// namespace does not.
func TestFluxApplies(t *testing.T) {
	ks := func(name, ns, extra string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
			"\nspec:\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n" + extra
	}
	repo := func(ns string) string {
		s := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s + "spec:\n  url: https://charts.example.com\n"
	}
	for _, tc := range []struct {
		name, deployer, file string
		kustomization        string // apps/kustomization.yaml; "" for none
		wantNS               string
		established          bool
	}{
		{"targetNamespace", ks("media", "flux-system", "  targetNamespace: media\n  serviceAccountName: media\n"), repo("victim"), "", "media", true},
		{"the file's, as Flux's own account", ks("apps", "flux-system", ""), repo("monitoring"), "", "monitoring", true},
		{"the file's, a tenant's account", ks("tenant", "tenant", "  serviceAccountName: tenant\n"), repo("victim"), "", "victim", false},
		{"its own, a tenant's account", ks("tenant", "tenant", "  serviceAccountName: tenant\n"), repo("tenant"), "", "tenant", true},
		{"none in the file: the Kustomization's own", ks("tenant", "tenant", "  serviceAccountName: tenant\n"), repo(""), "", "tenant", true},
		{"the kustomization's namespace, a tenant's account", ks("tenant", "tenant", "  serviceAccountName: tenant\n"), repo(""), "namespace: victim\nresources: [repo.yaml]\n", "victim", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"clusters/main/apps.yaml": {Data: []byte(tc.deployer)},
				"apps/repo.yaml":          {Data: []byte(tc.file)},
			}
			if tc.kustomization != "" {
				fsys["apps/kustomization.yaml"] = &fstest.MapFile{Data: []byte(tc.kustomization)}
			}
			key := IdentKey{Group: FluxSourceGroup, Kind: "HelmRepository", Name: "charts"}
			idx, err := BuildIndex(context.Background(), fsys, ".", Wants{Objects: map[IdentKey]bool{key: true}, Dir: ".", Pointers: true, Helm: true}, 0)
			if err != nil {
				t.Fatal(err)
			}
			refs := idx.Refs[key]
			if len(refs) != 1 {
				t.Fatalf("refs = %+v, want the HelmRepository once", refs)
			}
			applies := idx.FluxApplies(refs[0])
			if len(applies) != 1 {
				t.Fatalf("FluxApplies = %+v, want one Kustomization", applies)
			}
			if got := applies[0]; got.Namespace != tc.wantNS || got.Established != tc.established {
				t.Errorf("FluxApplies = %s, established %v; want %s, %v", got.Namespace, got.Established, tc.wantNS, tc.established)
			}
		})
	}
}
