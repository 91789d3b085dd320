package helmsource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestLiveLabelsChooseTheEnvironment checks Flux's multi-tenancy layout: a
// HelmRelease in a shared base, patched per environment by staging/ and
// production/, each applied by a Kustomization named apps. The live
// HelmRelease carries kustomize-controller's labels, which name the live
// Kustomization and so its path: the release is staging's.
func TestLiveLabelsChooseTheEnvironment(t *testing.T) {
	kustomization := func(path string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: " + path +
			"\n  sourceRef: {kind: GitRepository, name: flux-system}\n"
	}
	patch := func(replicas string) string {
		return "resources: [../base]\npatches:\n- target: {kind: HelmRelease, name: web}\n  patch: |\n    - op: add\n      path: /spec/values\n      value: {replicaCount: " + replicas + "}\n"
	}
	files := map[string]string{
		"base/kustomization.yaml":       "namespace: shop\nresources: [release.yaml, repo.yaml]\n",
		"base/release.yaml":             helmRelease(fromHelmRepo),
		"base/repo.yaml":                fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n"),
		"staging/kustomization.yaml":    patch("1"),
		"production/kustomization.yaml": patch("3"),
		"clusters/staging/apps.yaml":    kustomization("./staging"),
		"clusters/production/apps.yaml": kustomization("./production"),
	}
	liveApps := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system"},
		"spec":     map[string]any{"path": "./staging", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}}
	liveRelease := map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{
			"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
		"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "web", "version": "1.2.3",
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}, "values": map[string]any{"replicaCount": 1}}}
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	for _, live := range [][]map[string]any{{liveApps, liveRelease}, {liveApps}} {
		w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{repoindex.KeyOf(hrTarget): true}, Dir: ".", Helm: true}
		for _, obj := range live {
			w.DeployerObjects = append(w.DeployerObjects, repoindex.DeployerObject{Object: obj, Origin: "from the cluster"})
		}
		idx, err := repoindex.BuildIndex(context.Background(), fsys, ".", w, 0)
		if err != nil {
			t.Fatal(err)
		}
		a := &Sources{Index: idx, FS: fsys, RepoURL: thisRepo, Edits: repoFiles{fsys}}
		r, err := a.FindRelease(repoindex.Sought{Target: hrTarget, Container: "app"}, ".")
		if len(live) == 1 {
			// Without the live HelmRelease, nothing tells the two apart.
			if !errors.Is(err, ErrHelm) || !strings.Contains(err.Error(), "ambiguous") {
				t.Errorf("without the live HelmRelease: %v, want ambiguous", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FindRelease: %v", err)
		}
		if r.Ref.File != "base/release.yaml" || r.Ref.Chain == nil || r.Ref.Chain.Root().Dir != "staging" {
			t.Errorf("release %s rendered by %v, want base/release.yaml through staging", r.Ref.File, r.Ref.Chain)
		}
	}
}
