//go:build integration

package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// TestApplyRemoteChartDependency is the golden case helm-argo-file-dependency
// with the umbrella chart's dependency taken from a chart repository (a
// real one, on loopback, behind basic auth) instead of a directory of the
// repository, and not vendored under charts/, as Argo CD and
// source-controller build it: the dependency is fetched, the release
// renders, and the web container's request is written in production's
// values file under the dependency's key.
func TestApplyRemoteChartDependency(t *testing.T) {
	base := filepath.Join("testdata", "helm-argo-file-dependency")
	shop := map[string]string{}
	for name, data := range readTree(t, filepath.Join(base, "original", "charts", "shop")) {
		shop[name] = string(data)
	}
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth("chart-user", "chart-pw"))
	repo.Add(t, "shop", "1.4.0", shop)

	dir := t.TempDir()
	copyTree(t, filepath.Join(base, "original"), dir)
	if err := os.RemoveAll(filepath.Join(dir, "charts", "shop")); err != nil {
		t.Fatal(err)
	}
	chartYAML := filepath.Join(dir, "charts", "storefront", "Chart.yaml")
	data, err := os.ReadFile(chartYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chartYAML, []byte(strings.Replace(string(data), "file://../shop", repo.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := readSpec(t, filepath.Join(base, "changes.yaml"))
	host, _, _ := strings.Cut(strings.TrimPrefix(repo.URL, "http://"), "/")
	loader := chartfetch.NewLoader(chartfetch.WithCredentials(func(u string) (chartfetch.Credentials, bool) {
		return chartfetch.Credentials{Username: "chart-user", Password: "chart-pw"}, u == repo.URL
	}), chartfetch.WithDependencyHosts([]string{host}))
	out, err := Apply(context.Background(), dir, spec.Path, []Change{spec.Changes[0].change()}, WithCharts(loader))
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed || r.File != "charts/storefront/values-production.yaml" {
		t.Fatalf("result: changed %v in %s, err %v; want charts/storefront/values-production.yaml changed", r.Changed, r.File, r.Err)
	}
	want, err := os.ReadFile(filepath.Join(base, "expected", "charts", "storefront", "values-production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "charts", "storefront", "values-production.yaml")); string(got) != string(want) {
		t.Errorf("values-production.yaml:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "charts", "storefront", "charts")); !os.IsNotExist(err) {
		t.Errorf("the dependency landed in the checkout (%v): it must stay out of the repository", err)
	}
}
