//go:build integration

package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// chartFiles reads the chart of the golden cases as a chart repository
// serves it.
func chartFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join("testdata", "helm-flux-inline", "original", "charts", "shop")
	files := map[string]string{}
	for name, data := range readTree(t, dir) {
		files[name] = string(data)
	}
	// Each version gets its own Chart.yaml.
	delete(files, "Chart.yaml")
	return files
}

// TestApplyChartsFromRepositories renders charts that a real chart
// repository serves: a Flux HelmRelease through its HelmRepository, and a
// multi-source Argo CD Application whose values file comes from this
// repository through $values. Each value lands in the environment's own
// values, and the chart is fetched once for both.
func TestApplyChartsFromRepositories(t *testing.T) {
	repo := helmtest.NewRepo(t)
	repo.Add(t, "shop", "1.4.0", chartFiles(t))
	repo.Add(t, "shop", "1.3.0", chartFiles(t))

	const production = "# Production values of the shop.\nweb:\n  replicas: 3\n"
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"infrastructure/charts.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: shop-charts
  namespace: flux-system
spec:
  interval: 1h
  url: ` + repo.URL + "\n",
		"apps/shop.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: shop
spec:
  interval: 10m
  chart:
    spec:
      chart: shop
      version: "1.4.x"
      sourceRef:
        kind: HelmRepository
        name: shop-charts
        namespace: flux-system
  values:
    web:
      replicas: 2
`,
		"argocd/shop-production.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-production
  namespace: argocd
spec:
  project: default
  sources:
    - repoURL: ` + repo.URL + `
      chart: shop
      targetRevision: 1.4.0
      helm:
        releaseName: storefront
        valueFiles:
          - $values/envs/production/shop.yaml
    - repoURL: https://git.example.com/platform/fleet.git
      targetRevision: main
      ref: values
  destination:
    server: https://kubernetes.default.svc
    namespace: storefront
`,
		"envs/production/shop.yaml": production,
	})
	flux := Change{
		Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "shop-worker",
			Labels:      map[string]string{repoindex.FluxHelmName: "shop", repoindex.FluxHelmNamespace: "shop"},
			Annotations: map[string]string{repoindex.HelmReleaseName: "shop", repoindex.HelmReleaseNS: "shop"}},
		Container: "worker",
		Requests:  quantities(map[string]string{"cpu": "40m"}),
	}
	argo := Change{
		Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "storefront", Name: "storefront-web",
			Annotations: map[string]string{ArgoTrackingID: "shop-production:apps/Deployment:storefront/storefront-web"}},
		Container: "web",
		Requests:  quantities(map[string]string{"cpu": "300m", "memory": "384Mi"}),
	}
	loader := chartfetch.NewLoader()
	out, err := Apply(context.Background(), root, ".", []Change{flux, argo},
		WithCharts(loader), WithRepositoryURL("ssh://git@git.example.com/platform/fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Results {
		if r.Err != nil || !r.Changed {
			t.Fatalf("change %d: changed %v, err %v", i, r.Changed, r.Err)
		}
		if r.Helm == nil || r.Helm.Chart != "shop" || r.Helm.Version != "1.4.0" || !strings.Contains(r.Helm.ChartSource, repo.URL) {
			t.Errorf("change %d: Helm = %+v, want chart shop 1.4.0 from %s", i, r.Helm, repo.URL)
		}
	}
	if got := out.Results[1].Helm.Release; got != "storefront" {
		t.Errorf("the Application's release is %q, want its helm.releaseName", got)
	}
	want := map[string]string{
		"apps/shop.yaml":            "  values:\n    web:\n      replicas: 2\n    worker:\n      resources:\n        requests:\n          cpu: 40m\n",
		"envs/production/shop.yaml": production + "  resources:\n    requests:\n      cpu: 300m\n      memory: 384Mi\n",
	}
	for file, tail := range want {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(data), tail) {
			t.Errorf("%s:\n%s\nwant it to end with:\n%s", file, data, tail)
		}
	}
	if n := repo.Requests(helmtest.ArchiveName("shop", "1.4.0")); n != 1 {
		t.Errorf("the chart was downloaded %d times, want once", n)
	}
	if n := repo.Requests(helmtest.ArchiveName("shop", "1.3.0")); n != 0 {
		t.Errorf("version 1.3.0 was downloaded %d times, want never", n)
	}
}

// TestApplyChartRepositoryUnreachable reports a release whose chart cannot
// be fetched with the reason, and goes on with the other changes.
func TestApplyChartRepositoryUnreachable(t *testing.T) {
	repo := helmtest.NewRepo(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"apps/shop.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
spec:
  source:
    repoURL: ` + repo.URL + `
    chart: shop
    targetRevision: 9.9.9
  destination:
    namespace: shop
`,
		"apps/web.yaml": simple,
	})
	missing := Change{
		Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "shop-web",
			Labels: map[string]string{InstanceLabel: "shop"}},
		Container: "web",
		Requests:  quantities(map[string]string{"cpu": "1"}),
	}
	plain := requests("app", "cpu", "2")
	plain.Target.Namespace = "ns"
	out, err := Apply(context.Background(), root, ".", []Change{missing, plain}, WithCharts(chartfetch.NewLoader()))
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Results[0].Err; !errors.Is(err, ErrHelm) || !errors.Is(err, chartfetch.ErrChartNotFound) || !strings.Contains(err.Error(), "9.9.9") {
		t.Errorf("the missing chart: %v, want ErrHelm wrapping ErrChartNotFound and naming the version", err)
	}
	if r := out.Results[1]; r.Err != nil || !r.Changed {
		t.Errorf("the plain manifest: changed %v, err %v; want it edited", r.Changed, r.Err)
	}
}

// TestApplyArgoChartValueFiles renders Applications whose valueFiles are
// files of a chart from a chart repository: one the chart holds is read,
// one it does not hold fails the release, unless the Application ignores
// missing values files.
func TestApplyArgoChartValueFiles(t *testing.T) {
	repo := helmtest.NewRepo(t)
	files := chartFiles(t)
	files["values-tuned.yaml"] = "web:\n  replicas: 4\n"
	repo.Add(t, "shop", "1.4.0", files)
	app := func(name, valueFile string, ignore bool) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  source:
    repoURL: ` + repo.URL + `
    chart: shop
    targetRevision: 1.4.0
    helm:
      ignoreMissingValueFiles: ` + strconv.FormatBool(ignore) + `
      valueFiles:
        - ` + valueFile + `
  destination:
    namespace: ` + name + `
`
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"apps/tuned.yaml":   app("tuned", "values-tuned.yaml", false),
		"apps/missing.yaml": app("missing", "values-missing.yaml", false),
		"apps/ignored.yaml": app("ignored", "values-missing.yaml", true),
	})
	change := func(ns string) Change {
		return Change{
			Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: ns + "-web",
				Annotations: map[string]string{ArgoTrackingID: ns + ":apps/Deployment:" + ns + "/" + ns + "-web"}},
			Container: "web",
			Requests:  quantities(map[string]string{"cpu": "300m"}),
		}
	}
	out, err := Apply(context.Background(), root, ".", []Change{change("tuned"), change("missing"), change("ignored")}, WithCharts(chartfetch.NewLoader()))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if r := out.Results[i]; r.Err != nil || !r.Changed || r.Helm == nil || !strings.Contains(r.Helm.Layer, "helm.valuesObject") {
			t.Errorf("change %d: changed %v, err %v, helm %+v; want the value in helm.valuesObject", i, r.Changed, r.Err, r.Helm)
		}
	}
	if err := out.Results[1].Err; !errors.Is(err, ErrHelm) || !strings.Contains(err.Error(), "chart shop 1.4.0 has no file values-missing.yaml") {
		t.Errorf("a values file the chart does not hold: %v, want it named", err)
	}
}

// TestApplyFixtureChartsFromARepository renders the charts of package
// helmtest, served by a real chart repository, through a Flux
// HelmRelease: whole resources mappings, one per component, list items,
// scalar keys, and a chart that writes its resources out.
func TestApplyFixtureChartsFromARepository(t *testing.T) {
	repo := helmtest.NewRepo(t)
	for _, name := range []string{"resources", "components", "scalar", "hardcoded"} {
		files := helmtest.Files(name)
		strs := map[string]string{}
		for f, data := range files {
			strs[f] = string(data)
		}
		delete(strs, "Chart.yaml")
		repo.Add(t, name, "1.0.0", strs)
	}
	tests := []struct {
		chart, workload, container string
		requests                   map[string]string
		keys                       map[string]string
		// lines must be in the HelmRelease's file after the edit.
		lines []string
	}{
		{
			chart: "resources", workload: "resources", container: "app",
			requests: map[string]string{"cpu": "120m", "memory": "100Mi"},
			keys:     map[string]string{"requests.cpu": "resources.requests.cpu", "requests.memory": "resources.requests.memory"},
			lines:    []string{"  values:\n    resources:\n      requests:\n        cpu: 120m\n        memory: 100Mi\n"},
		},
		{
			chart: "components", workload: "components-worker", container: "worker",
			requests: map[string]string{"cpu": "70m"},
			keys:     map[string]string{"requests.cpu": "worker.resources.requests.cpu"},
			lines:    []string{"    worker:\n      resources:\n        requests:\n          cpu: 70m\n"},
		},
		{
			chart: "scalar", workload: "scalar", container: "server",
			requests: map[string]string{"cpu": "150m"},
			keys:     map[string]string{"requests.cpu": "cpuRequest"},
			lines:    []string{"  values:\n    cpuRequest: 150m\n"},
		},
		{
			chart: "hardcoded", workload: "hardcoded", container: "app",
			requests: map[string]string{"memory": "200Mi"},
			lines:    []string{"  postRenderers:\n", "                name: hardcoded\n", "                            memory: 200Mi\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{
				"apps/release.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: apps
spec:
  url: ` + repo.URL + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ` + tt.chart + `
  namespace: apps
spec:
  chart:
    spec:
      chart: ` + tt.chart + `
      sourceRef:
        kind: HelmRepository
        name: charts
  values: {}
`,
			})
			c := Change{
				Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: tt.workload,
					Labels: map[string]string{repoindex.FluxHelmName: tt.chart, repoindex.FluxHelmNamespace: "apps"}},
				Container: tt.container,
				Requests:  quantities(tt.requests),
			}
			out, err := Apply(context.Background(), root, ".", []Change{c}, WithCharts(chartfetch.NewLoader()))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if r.Err != nil || !r.Changed || r.File != "apps/release.yaml" {
				t.Fatalf("file %q, changed %v, err %v", r.File, r.Changed, r.Err)
			}
			if diff := cmp.Diff(tt.keys, r.Helm.Keys, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Helm.Keys (-want +got):\n%s", diff)
			}
			data, err := os.ReadFile(filepath.Join(root, "apps", "release.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tt.lines {
				if !strings.Contains(string(data), l) {
					t.Errorf("the HelmRelease lacks %q:\n%s", l, data)
				}
			}
		})
	}
}

// TestApplyChartRefOCIRepository follows a HelmRelease whose spec.chartRef
// names an OCIRepository to a chart of a real OCI registry.
func TestApplyChartRefOCIRepository(t *testing.T) {
	reg := helmtest.NewRegistry(t)
	reg.Push(t, "shop", "1.4.0", chartFiles(t))
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/shop.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: shop
  namespace: shop
spec:
  url: ` + reg.URL + `/shop
  ref:
    semver: "1.x"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: shop
spec:
  chartRef:
    kind: OCIRepository
    name: shop
  values:
    web:
      replicas: 2
`})
	c := Change{
		Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "shop-web",
			Labels: map[string]string{repoindex.FluxHelmName: "shop", repoindex.FluxHelmNamespace: "shop"}},
		Container: "web",
		Requests:  quantities(map[string]string{"cpu": "300m"}),
	}
	out, err := Apply(context.Background(), root, ".", []Change{c}, WithCharts(chartfetch.NewLoader(chartfetch.WithPlainHTTP())))
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if r.Err != nil || !r.Changed || r.Helm == nil || !strings.HasPrefix(r.Helm.ChartSource, reg.URL+"/shop") {
		t.Fatalf("changed %v, err %v, helm %+v; want the chart from %s/shop", r.Changed, r.Err, r.Helm, reg.URL)
	}
	data, err := os.ReadFile(filepath.Join(root, "apps", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "    web:\n      replicas: 2\n      resources:\n        requests:\n          cpu: 300m\n"; !strings.HasSuffix(string(data), want) {
		t.Errorf("apps/shop.yaml:\n%s\nwant it to end with:\n%s", data, want)
	}
}

// TestApplyFluxSourcesAsDeclared follows HelmReleases to their charts as
// Flux declares the sources: an OCIRepository whose spec.insecure says its
// registry speaks plain HTTP (the loader allows none of its own), and a
// spec.chartRef to a HelmChart of a HelmRepository.
func TestApplyFluxSourcesAsDeclared(t *testing.T) {
	reg := helmtest.NewRegistry(t)
	reg.Push(t, "shop", "1.4.0", chartFiles(t))
	repo := helmtest.NewRepo(t)
	repo.Add(t, "shop", "1.4.0", chartFiles(t))
	release := func(name, kind, source string) string {
		return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ` + name + `
  namespace: ` + name + `
spec:
  chartRef:
    kind: ` + kind + `
    name: ` + source + `
    namespace: flux-system
  values:
    web:
      replicas: 2
`
	}
	for _, tt := range []struct {
		name, source, kind, sources string
		want                        string
	}{{
		name: "insecure", kind: "OCIRepository", source: "shop-oci", want: reg.URL + "/shop",
		sources: `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: shop-oci
  namespace: flux-system
spec:
  url: ` + reg.URL + `/shop
  insecure: true
  ref:
    tag: 1.4.0
`,
	}, {
		name: "helmchart", kind: "HelmChart", source: "shop-chart", want: repo.URL,
		sources: `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: shop-chart
  namespace: flux-system
spec:
  chart: shop
  version: 1.4.x
  sourceRef:
    kind: HelmRepository
    name: shop-charts
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: shop-charts
  namespace: flux-system
spec:
  url: ` + repo.URL + "\n",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"infrastructure/sources.yaml": tt.sources, "apps/shop.yaml": release(tt.name, tt.kind, tt.source)})
			c := Change{
				Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: tt.name, Name: tt.name + "-web",
					Labels: map[string]string{repoindex.FluxHelmName: tt.name, repoindex.FluxHelmNamespace: tt.name}},
				Container: "web",
				Requests:  quantities(map[string]string{"cpu": "300m"}),
			}
			out, err := Apply(context.Background(), root, ".", []Change{c}, WithCharts(chartfetch.NewLoader()))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if r.Err != nil || !r.Changed || r.Helm == nil || !strings.HasPrefix(r.Helm.ChartSource, tt.want) {
				t.Fatalf("changed %v, err %v, helm %+v; want the chart from %s", r.Changed, r.Err, r.Helm, tt.want)
			}
			data, err := os.ReadFile(filepath.Join(root, "apps", "shop.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "    web:\n      replicas: 2\n      resources:\n        requests:\n          cpu: 300m\n"; !strings.HasSuffix(string(data), want) {
				t.Errorf("apps/shop.yaml:\n%s\nwant it to end with:\n%s", data, want)
			}
		})
	}
}

// TestApplyOCIRepositoryRef follows HelmReleases to the chart their
// OCIRepository's spec.ref names, as source-controller reads it: a
// digest before a semver range before a tag, the tag latest without any.
func TestApplyOCIRepositoryRef(t *testing.T) {
	reg := helmtest.NewRegistry(t)
	reg.Push(t, "shop", "1.0.0", chartFiles(t))
	reg.Push(t, "shop", "1.4.0", chartFiles(t))
	digest := reg.PushArtifact(t, "shop", "latest", helmtest.Layer{MediaType: registry.ChartLayerMediaType, Data: helmtest.Package(t, "shop", "1.2.0", chartFiles(t))})
	tests := []struct{ name, ref, wantSource string }{
		{"semver before tag", "  ref:\n    tag: 1.0.0\n    semver: 1.x\n", ":1.4.0"},
		{"digest before all", "  ref:\n    tag: 1.0.0\n    semver: 1.x\n    digest: " + digest + "\n", "@" + digest},
		{"tag", "  ref:\n    tag: 1.0.0\n", ":1.0.0"},
		{"no ref: latest", "", ":latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"apps/shop.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: shop
  namespace: shop
spec:
  url: ` + reg.URL + `/shop
` + tt.ref + `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: shop
spec:
  chartRef:
    kind: OCIRepository
    name: shop
  values:
    web:
      replicas: 2
`})
			c := Change{
				Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "shop-web",
					Labels: map[string]string{repoindex.FluxHelmName: "shop", repoindex.FluxHelmNamespace: "shop"}},
				Container: "web",
				Requests:  quantities(map[string]string{"cpu": "300m"}),
			}
			out, err := Apply(context.Background(), root, ".", []Change{c}, WithCharts(chartfetch.NewLoader(chartfetch.WithPlainHTTP())))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if want := reg.URL + "/shop" + tt.wantSource; r.Err != nil || r.Helm == nil || r.Helm.ChartSource != want {
				t.Fatalf("err %v, helm %+v; want the chart from %s", r.Err, r.Helm, want)
			}
		})
	}
}

// TestApplyArgoValuesFileBombedAppSet checks that an ApplicationSet read to
// learn whether a multi-source Application's $values file is its own is
// expanded by appset, within its budget: a Helm-source ApplicationSet (a
// list generator whose template renders the same chart with a $values
// file) that asks for gigabytes, by aliases or by a printf width, leaves
// the values file unwritten, and the change is refused with appset's
// budget error naming the ApplicationSet's file.
func TestApplyArgoValuesFileBombedAppSet(t *testing.T) {
	repo := helmtest.NewRepo(t)
	repo.Add(t, "shop", "1.4.0", chartFiles(t))
	const production = "# Production values of the shop.\nweb:\n  replicas: 3\n"
	app := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-production
  namespace: argocd
spec:
  project: default
  sources:
    - repoURL: ` + repo.URL + `
      chart: shop
      targetRevision: 1.4.0
      helm:
        releaseName: storefront
        valueFiles:
          - $values/envs/production/shop.yaml
        values: |
          web:
            replicas: 3
    - repoURL: https://git.example.com/platform/fleet.git
      targetRevision: main
      ref: values
  destination:
    server: https://kubernetes.default.svc
    namespace: storefront
`
	// bomb renders the chart for each element, env taken from it.
	bomb := func(style, elements, env string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bomb, namespace: argocd}
spec:
` + style + `  generators:
  - list:
      elements:
` + elements + `  template:
    metadata: {name: 'shop-bomb'}
    spec:
      project: default
      sources:
      - repoURL: ` + repo.URL + `
        chart: shop
        targetRevision: 1.4.0
        helm:
          valueFiles: ['$values/envs/` + env + `/shop.yaml']
      - repoURL: https://git.example.com/platform/fleet.git
        targetRevision: main
        ref: values
      destination: {server: https://kubernetes.default.svc, namespace: bomb}
`
	}
	tests := []struct{ name, bomb, want string }{
		// The control: the same ApplicationSet within its budget reads
		// another environment's values file, and the change lands.
		{"within the budget", bomb("", "      - {env: staging}\n", "{{env}}"), ""},
		{"aliases", bomb("", "      - {env: &e "+strings.Repeat("x", 512<<10)+"}\n"+strings.Repeat("      - {env: *e}\n", 2000), "{{env}}"),
			"the ApplicationSets in argocd/bomb.yaml: above the evaluation budget: its aliases expand to more than 16777216 bytes"},
		{"printf width", bomb("  goTemplate: true\n", "      - {env: production}\n", `{{ .env }}{{ printf "%0999999999d" 0 }}`),
			"the ApplicationSets in argocd/bomb.yaml (at ApplicationSet argocd/bomb): generator 1: template: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{
				"argocd/shop-production.yaml": app,
				"argocd/bomb.yaml":            tt.bomb,
				"envs/production/shop.yaml":   production,
				"envs/staging/shop.yaml":      production,
			})
			argo := Change{
				Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "storefront", Name: "storefront-web",
					Annotations: map[string]string{ArgoTrackingID: "shop-production:apps/Deployment:storefront/storefront-web"}},
				Container: "web",
				Requests:  quantities(map[string]string{"cpu": "300m"}),
			}
			out, err := Apply(context.Background(), root, ".", []Change{argo},
				WithCharts(chartfetch.NewLoader()), WithRepositoryURL("ssh://git@git.example.com/platform/fleet"))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if tt.want == "" {
				data, _ := os.ReadFile(filepath.Join(root, "envs/production/shop.yaml"))
				if r.Err != nil || !r.Changed || !strings.HasSuffix(string(data), "  resources:\n    requests:\n      cpu: 300m\n") {
					t.Fatalf("changed %v, err %v, envs/production/shop.yaml:\n%s\nwant the request written there", r.Changed, r.Err, data)
				}
				return
			}
			t.Logf("refused: %v", r.Err)
			if r.Err == nil || r.Changed {
				t.Fatalf("changed %v, err %v; want the change refused", r.Changed, r.Err)
			}
			for _, want := range []string{"the values file envs/production/shop.yaml, whose readers are not known: ", tt.want, "above the evaluation budget"} {
				if !strings.Contains(r.Err.Error(), want) {
					t.Errorf("err = %v\nwant it to hold %q", r.Err, want)
				}
			}
			data, err := os.ReadFile(filepath.Join(root, "envs/production/shop.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != production {
				t.Errorf("envs/production/shop.yaml was written:\n%s", data)
			}
		})
	}
}
