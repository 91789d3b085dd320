//go:build integration

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// fluxMarkedRepo is fluxRepo as flux2-kustomize-helm-example's users
// size staging: a $recommend marker on web's resources in staging's
// values patch, and a chart that hard-codes the worker's resources, so
// that only a post-renderer of the HelmRelease can size it.
func fluxMarkedRepo(repoURL string) map[string]string {
	files := fluxRepo(repoURL)
	files["charts/shop/templates/worker.yaml"] = strings.Replace(shopChart["templates/worker.yaml"],
		"          resources:\n            {{- toYaml .Values.worker.resources | nindent 12 }}\n",
		"          # The worker's size is the chart's.\n          resources:\n            requests:\n              cpu: 50m\n              memory: 64Mi\n", 1)
	files["charts/shop/values.yaml"] = strings.Replace(shopChart["values.yaml"],
		"  concurrency: 4\n  resources:\n    requests:\n      cpu: 50m\n      memory: 64Mi\n", "  concurrency: 4\n", 1)
	files["apps/staging/shop-values.yaml"] = fluxValuesPatch("Staging runs one small replica of each.", `    web:
      resources: # {"$recommend": "shop/shop-web:web"}
        requests:
          cpu: 100m
          memory: 128Mi
`)
	return files
}

// TestEndToEndMarkerAndPostRenderer runs the job on staging of a Flux
// repository where web is sized by a marker in staging's values patch and
// the worker, whose chart hard-codes its resources, needs a post-renderer
// written in that same patch: both edits are proved together and land,
// and the report, the commit and its trailers say exactly what the pushed
// branch holds. Before, the post-renderer's proof failed on web's values,
// undid the file, and the report still said web changed (splice), exit 0,
// with nothing pushed.
func TestEndToEndMarkerAndPostRenderer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: helmHistory(now)})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0]); err != nil {
		t.Fatalf("applying the CRD: %v", err)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	files := fluxMarkedRepo(bed.Git.URL("fleet-marked"))
	repoURL := testbedtest.CreateRepo(t, bed, "fleet-marked", files)
	before, _ := checkout(t, repoURL, auth, "main")
	production := fluxRelease(t, before, "apps/production")

	// The cluster: staging's release as helm-controller installed it.
	mark := func(helmrender.Object) (map[string]string, map[string]string) {
		return map[string]string{"helm.toolkit.fluxcd.io/name": "shop", "helm.toolkit.fluxcd.io/namespace": "shop"},
			map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "shop"}
	}
	live := installed(t, fluxRelease(t, before, "apps/staging").render(t, before), mark)
	recommends := layoutsRecommend("shop", "shop-web") + "---\n" + layoutsRecommend("shop", "shop-worker")
	cluster := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), cluster, live, []byte(recommends)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--namespaces", "shop", "--render-paths", "shop=apps/staging"))
	const file = "apps/staging/shop-values.yaml"
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, []string{file}) {
		t.Fatalf("git = %+v, want %s pushed", rep.Git, file)
	}
	after, commit := checkout(t, repoURL, auth, "recommend-job/main")
	pushed := tree(t, after)

	// Every change the report says landed is in the pushed file, and
	// has its trailer; both did land.
	for _, w := range []struct{ target, container, cpu, memory string }{
		{"shop-web", "web", "390m", "65Mi"},
		{"shop-worker", "worker", "26m", "260Mi"},
	} {
		it := entry(t, rep, "shop", w.target)
		if it.Source == nil || !it.Source.Changed || it.Source.Error != "" || it.Source.File != file || it.Source.Method != plan.MethodSplice {
			t.Errorf("%s: source %+v, want %s spliced", w.target, it.Source, file)
			continue
		}
		for res, q := range map[string]string{"cpu": w.cpu, "memory": w.memory} {
			if r := resourceOf(it, w.container, res); quantity(r.Recommended) != q {
				t.Errorf("%s %s: recommended %q, want %s", w.target, res, quantity(r.Recommended), q)
			}
			if !strings.Contains(pushed[file], res+": "+q) {
				t.Errorf("%s: reported changed, but the pushed %s holds no %s: %s:\n%s", w.target, file, res, q, pushed[file])
			}
			trailer := "Recommend-Job-Change: shop/" + w.target + " " + w.container + " " + res + " "
			if !strings.Contains(commit.Message, trailer) {
				t.Errorf("commit message lacks a trailer %q:\n%s", trailer, commit.Message)
			}
		}
	}
	// The marker's edit and the post-renderer share the patch: web's
	// values under the marker, the worker's in a patch of its Deployment.
	for _, s := range []string{
		"      resources: # {\"$recommend\": \"shop/shop-web:web\"}\n        requests:\n          cpu: 390m\n          memory: 65Mi\n",
		"  postRenderers:\n",
		"                name: shop-worker\n",
	} {
		if !strings.Contains(pushed[file], s) {
			t.Errorf("pushed %s lacks %q:\n%s", file, s, pushed[file])
		}
	}
	// Nothing else changed; production builds as before.
	for name, content := range files {
		if name != file && pushed[name] != content {
			t.Errorf("%s changed on the branch", name)
		}
	}
	if got := fluxRelease(t, after, "apps/production"); string(got.inputs) != string(production.inputs) {
		t.Errorf("production's build changed:\n%s\nwas:\n%s", got.inputs, production.inputs)
	}
	if rep.Failed != "" || rep.Interrupted != "" {
		t.Errorf("report: failed %q, interrupted %q", rep.Failed, rep.Interrupted)
	}
}
