package helmsource

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// repoFiles are Edits of an unedited repository without kustomizations.
type repoFiles struct{ fsys fs.FS }

func (f repoFiles) Doc(file string, i int) (*yaml.Node, error) {
	data, err := fs.ReadFile(f.fsys, file)
	if err != nil {
		return nil, err
	}
	docs, err := yamledit.ParseDocuments(data)
	if err != nil || i >= len(docs) {
		return nil, errors.New("no such document")
	}
	return docs[i], nil
}

func (repoFiles) FileEdits(string) (data, orig []byte, ok bool) { return nil, nil, false }

func (repoFiles) BuildEnv(string, bool) (map[string]map[string]any, error) {
	return nil, errors.New("no kustomizations")
}

// charts serves every remote chart from memory, with the files given, and
// notes what was asked for.
type charts struct {
	files   map[string]string
	fetched []chartfetch.ChartRef
}

func (c *charts) Fetch(_ context.Context, ref chartfetch.ChartRef) (*helm.Chart, error) {
	c.fetched = append(c.fetched, ref)
	files := map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: " + ref.Chart + "\nversion: 1.0.0\n")}
	for name, data := range c.files {
		files[name] = []byte(data)
	}
	return helm.NewChart(ref.RepoURL, files)
}

func (c *charts) LoadDir(_ context.Context, fsys fs.FS, dir string) (*helm.Chart, error) {
	return chartfetch.LoadDir(fsys, dir)
}

const thisRepo = "https://git.example.com/fleet.git"

// load indexes files, finds the release of target and loads it.
func load(t *testing.T, files map[string]string, target repoindex.Target, remote map[string]string) (*Release, Loaded, *charts, error) {
	t.Helper()
	return loadLive(t, files, target, remote, nil)
}

// loadLive is load with the cluster's HelmReleases.
func loadLive(t *testing.T, files map[string]string, target repoindex.Target, remote map[string]string, live []map[string]any) (*Release, Loaded, *charts, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{repoindex.KeyOf(target): true}, Dir: ".", Helm: true}
	for _, obj := range live {
		w.DeployerObjects = append(w.DeployerObjects, repoindex.DeployerObject{Object: obj, Origin: "from the cluster"})
	}
	idx, err := repoindex.BuildIndex(context.Background(), fsys, ".", w, 0)
	if err != nil {
		t.Fatal(err)
	}
	fetcher := &charts{files: remote}
	a := &Sources{Index: idx, FS: fsys, Charts: fetcher, RepoURL: thisRepo, LocalCharts: map[string]*helm.Chart{},
		Fetched: map[chartfetch.ChartRef]FetchedChart{}, Edits: repoFiles{fsys}}
	r, err := a.FindRelease(repoindex.Sought{Target: target, Container: "app"}, ".")
	if err != nil {
		return nil, Loaded{}, fetcher, err
	}
	l, err := a.Load(context.Background(), r, false)
	return r, l, fetcher, err
}

// hrTarget is a Deployment that helm-controller installed for the
// HelmRelease shop/web.
var hrTarget = repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
	Labels: map[string]string{repoindex.FluxHelmName: "web", repoindex.FluxHelmNamespace: "shop"}}

func helmRelease(spec string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: shop\nspec:\n" + spec
}

func fluxSource(kind, ns, spec string) string {
	return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: " + kind + "\nmetadata:\n  name: charts\n  namespace: " + ns + "\nspec:\n" + spec
}

const fromHelmRepo = "  chart:\n    spec:\n      chart: web\n      version: 1.2.3\n      sourceRef: {kind: HelmRepository, name: charts}\n"

// TestFluxRelease checks what a HelmRelease read from the repository says
// of its release: its name and namespace as helm-controller works them
// out, its chart's source, and its values layers in order.
func TestFluxRelease(t *testing.T) {
	repo := fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n")
	tests := []struct {
		name  string
		files map[string]string
		// release is the Helm release's namespace/name, chart the chart
		// fetched, layers what each layer is; err the error wanted
		// instead, and why what it says.
		release string
		chart   chartfetch.ChartRef
		layers  []string
		err     error
		why     string
	}{
		{name: "chart of a HelmRepository",
			files:   map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo + "  values:\n    replicas: 2\n"), "infra/charts.yaml": repo},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "targetNamespace names and places the release",
			files:   map[string]string{"apps/web.yaml": helmRelease("  targetNamespace: prod\n" + fromHelmRepo), "infra/charts.yaml": repo},
			release: "prod/prod-web", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "releaseName",
			files:   map[string]string{"apps/web.yaml": helmRelease("  releaseName: storefront\n" + fromHelmRepo), "infra/charts.yaml": repo},
			release: "shop/storefront", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "a source without a namespace is in the HelmRelease's",
			files: map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo), "infra/charts.yaml": fluxSource("HelmRepository", "flux-system", "  url: https://charts.example.com\n")},
			err:   errAny, why: "the HelmRepository shop/charts is not in the repository"},
		{name: "a source defined twice, differently",
			files: map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo), "a/charts.yaml": repo, "b/charts.yaml": fluxSource("HelmRepository", "shop", "  url: https://evil.example.com\n")},
			err:   errAny, why: "defined differently in a/charts.yaml, b/charts.yaml"},
		{name: "a source's Secrets in another file are not read",
			files: map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo), "infra/charts.yaml": fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n  secretRef: {name: creds}\n")},
			err:   ErrSecretNotBound, why: "not rendered with the HelmRelease"},
		{name: "a source's Secrets beside the HelmRelease, in the namespace the cluster gives it",
			files:   map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo) + "---\n" + fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n  secretRef: {name: creds}\n  insecure: true\n")},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3", PlainHTTP: true, SecretRef: chartfetch.SecretRef{Namespace: "shop", Name: "creds"}},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "an OCIRepository's tag",
			files: map[string]string{
				"apps/web.yaml":     helmRelease("  chartRef: {kind: OCIRepository, name: charts}\n"),
				"infra/charts.yaml": fluxSource("OCIRepository", "shop", "  url: oci://ghcr.io/org/charts/web\n  ref: {tag: 2.0.0}\n"),
			},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "oci://ghcr.io/org/charts", Chart: "web", Tag: "2.0.0"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "an OCIRepository's digest before its semver",
			files: map[string]string{
				"apps/web.yaml":     helmRelease("  chartRef: {kind: OCIRepository, name: charts}\n"),
				"infra/charts.yaml": fluxSource("OCIRepository", "shop", "  url: oci://ghcr.io/org/web\n  ref: {semver: '>=1', digest: 'sha256:abc'}\n"),
			},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "oci://ghcr.io/org", Chart: "web", Digest: "sha256:abc"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "an OCIRepository without a ref: latest",
			files: map[string]string{
				"apps/web.yaml":     helmRelease("  chartRef: {kind: OCIRepository, name: charts}\n"),
				"infra/charts.yaml": fluxSource("OCIRepository", "shop", "  url: oci://ghcr.io/org/web\n"),
			},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "oci://ghcr.io/org", Chart: "web", Tag: "latest"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "a HelmChart's chart of a HelmRepository",
			files: map[string]string{
				"apps/web.yaml":     helmRelease("  chartRef: {kind: HelmChart, name: charts}\n"),
				"infra/chart.yaml":  fluxSource("HelmChart", "shop", "  chart: web\n  version: 3.1.0\n  sourceRef: {kind: HelmRepository, name: charts}\n"),
				"infra/charts.yaml": repo,
			},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "3.1.0"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
		{name: "a HelmChart of a GitRepository",
			files: map[string]string{
				"apps/web.yaml":    helmRelease("  chartRef: {kind: HelmChart, name: charts}\n"),
				"infra/chart.yaml": fluxSource("HelmChart", "shop", "  chart: ./charts/web\n  sourceRef: {kind: GitRepository, name: charts}\n"),
			},
			err: errAny, why: "takes its chart from a GitRepository, which is not supported"},
		{name: "a chartRef of another kind",
			files: map[string]string{"apps/web.yaml": helmRelease("  chartRef: {kind: ExternalArtifact, name: charts}\n")},
			err:   errAny, why: "spec.chartRef to a ExternalArtifact is not supported"},
		{name: "neither chart nor chartRef",
			files: map[string]string{"apps/web.yaml": helmRelease("  values: {}\n")},
			err:   errAny, why: "has neither spec.chart nor spec.chartRef"},
		{name: "a Bucket",
			files: map[string]string{"apps/web.yaml": helmRelease("  chart:\n    spec:\n      chart: web\n      sourceRef: {kind: Bucket, name: charts}\n")},
			err:   errAny, why: "charts from a Bucket are not supported"},
		{name: "a chart of another git repository",
			files: map[string]string{
				"apps/web.yaml":     helmRelease("  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef: {kind: GitRepository, name: charts}\n"),
				"infra/charts.yaml": fluxSource("GitRepository", "shop", "  url: https://git.example.com/other.git\n"),
			},
			err: errAny, why: "is in the git repository https://git.example.com/other.git, not in this one"},
		{name: "valuesFrom a ConfigMap no build renders",
			files: map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo + "  valuesFrom:\n  - {kind: ConfigMap, name: web-values}\n"), "infra/charts.yaml": repo},
			err:   errAny, why: "valuesFrom ConfigMap shop/web-values key values.yaml: the ConfigMap is not rendered with the HelmRelease"},
		{name: "valuesFrom a Secret",
			files: map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo + "  valuesFrom:\n  - {kind: Secret, name: web-values, valuesKey: v.yaml}\n"), "infra/charts.yaml": repo},
			err:   errAny, why: "valuesFrom Secret shop/web-values key v.yaml: only ConfigMaps the repository renders can be read"},
		{name: "optional valuesFrom that cannot be read is left out",
			files:   map[string]string{"apps/web.yaml": helmRelease(fromHelmRepo + "  valuesFrom:\n  - {kind: Secret, name: web-values, optional: true}\n"), "infra/charts.yaml": repo},
			release: "shop/web", chart: chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3"},
			layers: []string{"spec.values of HelmRelease shop/web (apps/web.yaml)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, l, fetcher, err := load(t, tt.files, hrTarget, nil)
			if tt.err != nil {
				if err == nil || tt.err != errAny && !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("Load = %v; want %v saying %q", err, tt.err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Namespace + "/" + r.Name; got != tt.release {
				t.Errorf("release %s, want %s", got, tt.release)
			}
			if len(fetcher.fetched) != 1 || !reflect.DeepEqual(fetcher.fetched[0], tt.chart) {
				t.Errorf("fetched %+v, want %+v", fetcher.fetched, tt.chart)
			}
			checkLayers(t, l.Layers, tt.layers)
			last := l.Layers[len(l.Layers)-1]
			if !last.Writable || !reflect.DeepEqual(last.Prefix, KeysPath("spec", "values")) {
				t.Errorf("spec.values layer writable %v at %v, want writable at spec.values", last.Writable, last.Prefix)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

func checkLayers(t *testing.T, got []Layer, want []string) {
	t.Helper()
	var whats []string
	for _, l := range got {
		whats = append(whats, l.What)
	}
	if strings.Join(whats, "\n") != strings.Join(want, "\n") {
		t.Errorf("layers\n%s\nwant\n%s", strings.Join(whats, "\n"), strings.Join(want, "\n"))
	}
}

// TestFluxLocalChart checks a chart of this repository through a
// GitRepository that bootstrap made, with the valuesFiles Flux makes its
// defaults of, in order, in place of its values.yaml.
func TestFluxLocalChart(t *testing.T) {
	files := map[string]string{
		"charts/web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":      "replicas: 1\nimage: web\n",
		"charts/web/values-prod.yaml": "replicas: 3\n",
		"apps/web.yaml": helmRelease("  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n" +
			"      valuesFiles: [charts/web/values-prod.yaml, charts/web/missing.yaml]\n      ignoreMissingValuesFiles: true\n"),
	}
	r, _, fetcher, err := load(t, files, hrTarget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fetcher.fetched) != 0 || r.Chart == nil || r.Chart.Name != "web" {
		t.Fatalf("chart %+v fetched %v; want the repository's charts/web", r.Chart, fetcher.fetched)
	}
	data, _ := r.Chart.File("values.yaml")
	var defaults map[string]any
	if err := json.Unmarshal(data, &defaults); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(defaults, map[string]any{"replicas": 3.0}) {
		t.Errorf("chart defaults %v, want values-prod.yaml's alone", defaults)
	}
	files["apps/web.yaml"] = strings.Replace(files["apps/web.yaml"], "      ignoreMissingValuesFiles: true\n", "", 1)
	if _, _, _, err := load(t, files, hrTarget, nil); err == nil || !strings.Contains(err.Error(), `valuesFiles "charts/web/missing.yaml"`) {
		t.Errorf("a missing values file = %v, want an error naming it", err)
	}
}

func application(name, spec string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\n  namespace: argocd\nspec:\n  destination: {namespace: shop}\n" + spec
}

// argoTarget is a Deployment that the Argo CD application web tracks.
var argoTarget = repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
	Annotations: map[string]string{repoindex.ArgoTrackingID: "web:apps/Deployment:shop/web"}}

// layerWant is what a test checks of one layer.
type layerWant struct {
	what     string
	writable bool
	values   map[string]any
}

// TestArgoRelease checks what an Application with a Helm source says of
// its release: its chart, its name and namespace, and its values layers
// in Argo CD's order, each writable only when it is the release's alone.
func TestArgoRelease(t *testing.T) {
	const chartsHelm = "  source:\n    repoURL: https://charts.example.com\n    chart: web\n    targetRevision: 1.2.3\n"
	local := map[string]string{
		"charts/web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":      "replicas: 1\n",
		"charts/web/values-prod.yaml": "replicas: 3\n",
	}
	withLocal := func(more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range local {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	const obj = "helm.valuesObject of Application argocd/web (argocd/web.yaml)"
	tests := []struct {
		name    string
		files   map[string]string
		remote  map[string]string
		release string
		chart   *chartfetch.ChartRef // nil: a chart of the repository
		layers  []layerWant
		err     error
		why     string
	}{
		{name: "a chart repository's chart, its own values file read only",
			files: map[string]string{"argocd/web.yaml": application("web", chartsHelm+
				"    helm:\n      releaseName: storefront\n      valueFiles: [values-prod.yaml]\n      valuesObject: {replicas: 2}\n")},
			remote:  map[string]string{"values-prod.yaml": "replicas: 5\n"},
			release: "shop/storefront", chart: &chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web", Version: "1.2.3"},
			layers: []layerWant{
				{what: "the values file values-prod.yaml of chart web 1.0.0", values: map[string]any{"replicas": 5.0}},
				{what: obj, writable: true, values: map[string]any{"replicas": 2.0}},
			}},
		{name: "an OCI registry without a scheme; no helm block",
			files:   map[string]string{"argocd/web.yaml": application("web", "  source:\n    repoURL: ghcr.io/org/charts\n    chart: web\n    targetRevision: 2.0.0\n")},
			release: "shop/web", chart: &chartfetch.ChartRef{RepoURL: "oci://ghcr.io/org/charts", Chart: "web", Version: "2.0.0"},
			layers: []layerWant{{what: obj, writable: true}}},
		{name: "a chart of this repository; values hide valuesObject",
			files: withLocal("argocd/web.yaml", application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n"+
				"    helm:\n      namespace: store\n      valueFiles: [values-prod.yaml]\n      values: 'image: x'\n")),
			release: "store/web",
			layers: []layerWant{
				{what: "the values file charts/web/values-prod.yaml", writable: true, values: map[string]any{"replicas": 3.0}},
				{what: "helm.values of Application argocd/web (argocd/web.yaml)", values: map[string]any{"image": "x"}},
				{what: obj},
			}},
		{name: "a values file another Application reads too",
			files: withLocal(
				"argocd/web.yaml", application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    helm:\n      valueFiles: [values-prod.yaml]\n"),
				"argocd/api.yaml", application("api", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    helm:\n      valueFiles: [values-prod.yaml]\n")),
			release: "shop/web",
			layers: []layerWant{
				{what: "the values file charts/web/values-prod.yaml", values: map[string]any{"replicas": 3.0}},
				{what: obj, writable: true},
			}},
		{name: "the chart's values.yaml is every release's",
			files:   withLocal("argocd/web.yaml", application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    helm:\n      valueFiles: [values.yaml]\n")),
			release: "shop/web",
			layers: []layerWant{
				{what: "the values file charts/web/values.yaml", values: map[string]any{"replicas": 1.0}},
				{what: obj, writable: true},
			}},
		{name: "parameters, as --set and --set-string",
			files: withLocal("argocd/web.yaml", application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    helm:\n      parameters:\n"+
				"      - {name: web.replicas, value: '3'}\n      - {name: tag, value: '1', forceString: true}\n")),
			release: "shop/web",
			layers: []layerWant{
				{what: obj, writable: true},
				{what: "helm.parameters of Application argocd/web (argocd/web.yaml)", values: map[string]any{"web": map[string]any{"replicas": int64(3)}, "tag": "1"}},
			}},
		{name: "a values file of a ref source",
			files: withLocal("envs/prod.yaml", "replicas: 4\n", "argocd/web.yaml", application("web", "  sources:\n  - repoURL: https://charts.example.com\n    chart: web\n"+
				"    helm:\n      valueFiles: [$values/envs/prod.yaml]\n  - repoURL: "+thisRepo+"\n    ref: values\n")),
			release: "shop/web", chart: &chartfetch.ChartRef{RepoURL: "https://charts.example.com", Chart: "web"},
			layers: []layerWant{
				{what: "the values file envs/prod.yaml", writable: true, values: map[string]any{"replicas": 4.0}},
				{what: "helm.valuesObject of Application argocd/web (argocd/web.yaml)", writable: true},
			}},
		{name: "a ref source of another repository",
			files: map[string]string{"argocd/web.yaml": application("web", "  sources:\n  - repoURL: https://charts.example.com\n    chart: web\n"+
				"    helm:\n      valueFiles: [$values/envs/prod.yaml]\n  - repoURL: https://git.example.com/other.git\n    ref: values\n")},
			err: errAny, why: "the source $values is the git repository https://git.example.com/other.git, not this one"},
		{name: "a remote values file",
			files: map[string]string{"argocd/web.yaml": application("web", chartsHelm+"    helm:\n      valueFiles: ['https://example.com/v.yaml']\n")},
			err:   errAny, why: "remote values files are not supported"},
		{name: "a chart of another git repository",
			files: withLocal("argocd/web.yaml", application("web", "  source:\n    repoURL: https://git.example.com/other.git\n    path: charts/web\n")),
			err:   errAny, why: "not in this one"},
		{name: "a kustomize source is no Helm release",
			files: withLocal("argocd/web.yaml", application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    kustomize: {}\n")),
			err:   ErrNotHelm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, l, fetcher, err := load(t, tt.files, argoTarget, tt.remote)
			if tt.err != nil {
				if err == nil || tt.err != errAny && !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("Load = %v; want %v saying %q", err, tt.err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Namespace + "/" + r.Name; got != tt.release {
				t.Errorf("release %s, want %s", got, tt.release)
			}
			switch {
			case tt.chart == nil && len(fetcher.fetched) > 0:
				t.Errorf("fetched %+v, want the repository's chart", fetcher.fetched)
			case tt.chart != nil && (len(fetcher.fetched) != 1 || !reflect.DeepEqual(fetcher.fetched[0], *tt.chart)):
				t.Errorf("fetched %+v, want %+v", fetcher.fetched, *tt.chart)
			}
			if len(l.Layers) != len(tt.layers) {
				checkLayers(t, l.Layers, nil)
				t.Fatalf("%d layers, want %d", len(l.Layers), len(tt.layers))
			}
			for i, want := range tt.layers {
				got := l.Layers[i]
				if got.What != want.what || got.Writable != want.writable || len(want.values)+len(got.Values) > 0 && !reflect.DeepEqual(got.Values, want.values) {
					t.Errorf("layer %d = %q writable %v values %v; want %q writable %v values %v", i, got.What, got.Writable, got.Values, want.what, want.writable, want.values)
				}
			}
		})
	}
}

// TestFindRelease checks which object a target's metadata leads to, and
// the targets no release of the repository renders.
func TestFindRelease(t *testing.T) {
	hr := helmRelease(fromHelmRepo)
	tests := []struct {
		name   string
		files  map[string]string
		target repoindex.Target
		kind   string // of the release found; "" for an error
		err    error
	}{
		{"helm-controller's labels", map[string]string{"apps/web.yaml": hr}, hrTarget, "HelmRelease", nil},
		{"Helm's annotations name the HelmRelease's release", map[string]string{"apps/web.yaml": helmRelease("  targetNamespace: prod\n" + fromHelmRepo)},
			repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web",
				Annotations: map[string]string{repoindex.HelmReleaseName: "prod-web"}}, "HelmRelease", nil},
		{"Helm's annotations of another namespace", map[string]string{"apps/web.yaml": hr},
			repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other", Name: "web",
				Annotations: map[string]string{repoindex.HelmReleaseName: "web"}}, "", ErrNotHelm},
		{"no metadata", map[string]string{"apps/web.yaml": hr}, repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}, "", ErrNotHelm},
		{"a HelmRelease the repository does not hold", map[string]string{"apps/other.yaml": strings.Replace(hr, "name: web\n", "name: other\n", 1)}, hrTarget, "", ErrNotHelm},
		{"an Application", map[string]string{"argocd/web.yaml": application("web", "  source: {repoURL: x, chart: web}\n")}, argoTarget, "Application", nil},
		{"an Application in two files", map[string]string{
			"a/web.yaml": application("web", "  source: {repoURL: x, chart: web}\n"),
			"b/web.yaml": application("web", "  source: {repoURL: x, chart: web}\n"),
		}, argoTarget, "", repoindex.ErrAmbiguousTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{repoindex.KeyOf(tt.target): true}, Dir: ".", Helm: true}
			idx, err := repoindex.BuildIndex(context.Background(), fsys, ".", w, 0)
			if err != nil {
				t.Fatal(err)
			}
			a := &Sources{Index: idx, FS: fsys, Edits: repoFiles{fsys}}
			r, err := a.FindRelease(repoindex.Sought{Target: tt.target, Container: "app"}, ".")
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("FindRelease = %v, %v; want %v", r, err, tt.err)
				}
				return
			}
			if err != nil || r.Kind != tt.kind {
				t.Fatalf("FindRelease = %v, %v; want a %s", r, err, tt.kind)
			}
		})
	}
}
