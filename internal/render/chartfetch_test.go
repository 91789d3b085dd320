package render

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// silentRepository is the URL of a chart repository behind a stalled
// proxy: it accepts connections and never answers.
func silentRepository(t *testing.T) string {
	return "http://" + testbedtest.SilentListener(t) + "/charts"
}

// TestApplyHungChartRepositories renders three releases whose chart
// repositories never answer next to a plain manifest: their charts are
// fetched at the same time, so Apply costs one fetch timeout, not three;
// each release fails with the timeout, and the manifest is edited.
func TestApplyHungChartRepositories(t *testing.T) {
	const timeout = time.Second
	apps := []string{"blog", "pay", "shop"}
	files := map[string]string{"apps/web.yaml": simple}
	var changes []Change
	for _, name := range apps {
		files["apps/"+name+".yaml"] = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  source:
    repoURL: ` + silentRepository(t) + `
    chart: ` + name + `
    targetRevision: 1.0.0
  destination:
    namespace: ` + name + `
`
		changes = append(changes, Change{
			Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: name, Name: name + "-web",
				Annotations: map[string]string{ArgoTrackingID: name + ":apps/Deployment:" + name + "/" + name + "-web"}},
			Container: "web",
			Requests:  quantities(map[string]string{"cpu": "300m"}),
		})
	}
	plain := requests("app", "cpu", "2")
	plain.Target.Namespace = "ns"
	changes = append(changes, plain)
	root := t.TempDir()
	writeFiles(t, root, files)

	start := time.Now()
	out, err := Apply(context.Background(), root, ".", changes, WithCharts(chartfetch.NewLoader(chartfetch.WithFetchTimeout(timeout))))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if limit := time.Duration(len(apps)) * timeout; took < timeout || took >= limit {
		t.Errorf("Apply() took %s, want one fetch timeout (%s), less than one per repository (%s)", took, timeout, limit)
	}
	for i, name := range apps {
		if err := out.Results[i].Err; !errors.Is(err, ErrHelm) || !errors.Is(err, chartfetch.ErrFetchTimeout) {
			t.Errorf("%s: %v, want ErrHelm wrapping ErrFetchTimeout", name, err)
		}
	}
	if r := out.Results[len(apps)]; r.Err != nil || !r.Changed {
		t.Errorf("the plain manifest: changed %v, err %v; want it edited", r.Changed, r.Err)
	}
}
