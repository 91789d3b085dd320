package helmsource

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestApplicationSetFastTemplate checks what the Applications of an
// ApplicationSet in fasttemplate's style, Argo CD's default, read, as
// appset expands them: {{env}} is an element's value, {{tier.name}} a
// nested one's, {{values.size}} the generator's values; {{.env}} is
// goTemplate's, which fasttemplate leaves as written, so it stands for any
// text, as do the parameters of a generator that needs more than the
// repository and of the cluster generator when the cluster has no name.
func TestApplicationSetFastTemplate(t *testing.T) {
	const head = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: shop, namespace: argocd}\n"
	const template = `  template:
    metadata: {name: 'shop-{{env}}'}
    spec:
      source:
        repoURL: https://git.example.com/fleet.git
        path: charts/shop
        helm:
          valueFiles: [VALUES]
`
	set := func(generator, values string) string {
		return head + "spec:\n  generators:\n" + generator + strings.Replace(template, "VALUES", values, 1)
	}
	const list = "  - list:\n      elements:\n      - {env: qa, tier: {name: small}}\n      values: {size: big}\n"
	tests := []struct {
		name, appset string
		cluster      string
		reads, not   []string
	}{
		{name: "an element's values, nested values and the generator's values",
			appset: set(list, "'values-{{env}}.yaml', '/tiers/{{tier.name}}.yaml', '/sizes/{{values.size}}.yaml'"),
			reads:  []string{"charts/shop/values-qa.yaml", "tiers/small.yaml", "sizes/big.yaml"},
			not:    []string{"charts/shop/values-prod.yaml", "tiers/large.yaml", "sizes/small.yaml"}},
		{name: "goTemplate's parameter, left as written",
			appset: set(list, "'values-{{.env}}.yaml'"),
			reads:  []string{"charts/shop/values-qa.yaml", "charts/shop/values-prod.yaml"},
			not:    []string{"charts/other/values-qa.yaml"}},
		{name: "a generator that needs more than the repository",
			appset: set("  - pullRequest: {github: {owner: o, repo: r}}\n", "'values-{{env}}.yaml'"),
			reads:  []string{"charts/shop/values-pr-1.yaml"},
			not:    []string{"charts/shop/values.yaml"}},
		{name: "the cluster generator, the cluster not named",
			appset: set("  - clusters: {}\n", "'values-{{name}}.yaml'"),
			reads:  []string{"charts/shop/values-east.yaml", "charts/shop/values-west.yaml"}},
		{name: "the cluster generator, this cluster named", cluster: "east",
			appset: set("  - clusters: {}\n", "'values-{{name}}.yaml'"),
			reads:  []string{"charts/shop/values-east.yaml"},
			not:    []string{"charts/shop/values-west.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Sources{Index: &repoindex.Index{Charts: map[string]bool{"charts/shop": true}}, ClusterName: tt.cluster,
				Edits: docs{"argocd/appset.yaml": tt.appset}}
			apps, err := a.generatedApps(context.Background(), appSetRef("argocd/appset.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			reads := func(file string) bool {
				return slices.ContainsFunc(apps, func(app map[string]any) bool { return a.ReadsValueFile(app, file) })
			}
			for _, f := range tt.reads {
				if !reads(f) {
					t.Errorf("%s: not read, want read", f)
				}
			}
			for _, f := range tt.not {
				if reads(f) {
					t.Errorf("%s: read, want not", f)
				}
			}
		})
	}
}

// helmBomb is an ApplicationSet whose Applications render a chart of a
// chart repository with values files of this repository ($values), made
// to ask for gigabytes: aliases of a 512 KB environment name (2,000 ask for
// 1 GB decoded, as much again filled in), each Application's values file
// path holding it.
func helmBomb(elements int) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bomb, namespace: argocd}
spec:
  generators:
  - list:
      elements:
      - {env: &e ` + strings.Repeat("x", 512<<10) + `}
` + strings.Repeat("      - {env: *e}\n", elements) + `  template:
    metadata: {name: 'shop-{{env}}'}
    spec:
      project: default
      sources:
      - repoURL: https://charts.example.com
        chart: shop
        targetRevision: 1.4.0
        helm:
          valueFiles: ['$values/envs/{{env}}/shop.yaml']
      - repoURL: https://git.example.com/platform/fleet.git
        targetRevision: main
        ref: values
      destination: {server: https://kubernetes.default.svc, namespace: '{{env}}'}
`
}

// helmPrintfBomb is the same ApplicationSet in goTemplate's style, whose
// values file path a printf makes a gigabyte long.
const helmPrintfBomb = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bomb, namespace: argocd}
spec:
  goTemplate: true
  generators: [{list: {elements: [{env: production}]}}]
  template:
    metadata: {name: 'shop-{{.env}}'}
    spec:
      project: default
      sources:
      - repoURL: https://charts.example.com
        chart: shop
        targetRevision: 1.4.0
        helm:
          valueFiles: ['$values/envs/{{.env}}/{{ printf "%0999999999d" 0 }}.yaml']
      - repoURL: https://git.example.com/platform/fleet.git
        targetRevision: main
        ref: values
      destination: {server: https://kubernetes.default.svc, namespace: '{{.env}}'}
`

// TestOwnValueFileBombBounded checks that an ApplicationSet read to learn
// whether a values file is a release's alone is expanded within appset's
// budget: a Helm-source ApplicationSet that asks for gigabytes is refused
// with appset's budget error naming its file, the values file is not
// written, and the check allocates far less than the bomb asks for.
func TestOwnValueFileBombBounded(t *testing.T) {
	tests := []struct{ name, bomb, want string }{
		{"aliases", helmBomb(2000), "the ApplicationSets in argocd/bomb.yaml: above the evaluation budget: its aliases expand to more than 16777216 bytes"},
		{"printf width", helmPrintfBomb, "the ApplicationSets in argocd/bomb.yaml (at ApplicationSet argocd/bomb): generator 1: template: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := &repoindex.Index{Charts: map[string]bool{}, Refs: map[repoindex.IdentKey][]repoindex.DocRef{
				{Group: repoindex.ArgoGroup, Kind: "ApplicationSet", Name: "bomb"}: {{File: "argocd/bomb.yaml",
					Key: repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "ApplicationSet", Name: "bomb"}, Namespace: "argocd"}},
			}}
			a := &Sources{Index: idx, FS: fstest.MapFS{}, RepoURL: "https://git.example.com/platform/fleet.git",
				Edits: docs{"argocd/bomb.yaml": tt.bomb}}
			r := &Release{Kind: "Application", Ref: repoindex.DocRef{File: "argocd/shop-production.yaml",
				Key: repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "Application", Name: "shop-production"}}}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			own, refused := a.ownValueFile(context.Background(), r, "envs/production/shop.yaml")
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if own {
				t.Error("ownValueFile() = true, want false: what the ApplicationSet reads is not known")
			}
			for _, want := range []string{"the values file envs/production/shop.yaml, whose readers are not known: ", tt.want, "above the evaluation budget"} {
				if !strings.Contains(refused, want) {
					t.Errorf("refused = %q, want it to name %q", refused, want)
				}
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB in %v", alloc>>20, took)
			if alloc > 64<<20 {
				t.Errorf("allocated %d MiB, want at most 64 MiB", alloc>>20)
			}
		})
	}
}

// TestChartReadersBomb checks that an ApplicationSet past appset's budget
// counts as a reader of a chart's values.yaml, named with the reason its
// Applications are not known, and that a values file another Application
// reads is refused as read, whatever an ApplicationSet past its budget
// says.
func TestChartReadersBomb(t *testing.T) {
	setKey := repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "ApplicationSet", Name: "bomb"}
	appKey := repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "Application", Name: "shop-staging"}
	idx := &repoindex.Index{Charts: map[string]bool{"charts/shop": true}, Files: map[string]*repoindex.IndexedFile{}, Refs: map[repoindex.IdentKey][]repoindex.DocRef{
		setKey: {{File: "argocd/bomb.yaml", Key: setKey, Namespace: "argocd"}},
		appKey: {{File: "argocd/shop-staging.yaml", Key: appKey, Namespace: "argocd"}},
	}}
	a := &Sources{Index: idx, FS: fstest.MapFS{}, RepoURL: "https://git.example.com/platform/fleet.git", Edits: docs{
		"argocd/bomb.yaml": helmPrintfBomb,
		"argocd/shop-staging.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop-staging, namespace: argocd}
spec:
  source:
    repoURL: https://git.example.com/platform/fleet.git
    path: charts/shop
    helm: {valueFiles: [/envs/shared.yaml]}
`}}
	r := &Release{Kind: "Application", Name: "storefront", Namespace: "storefront", Ref: repoindex.DocRef{File: "argocd/shop-production.yaml",
		Key: repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "Application", Name: "shop-production"}}}
	readers := a.chartReaders(context.Background(), r, "charts/shop")
	want := "ApplicationSet argocd/bomb (argocd/bomb.yaml), whose Applications are not known (the ApplicationSets in argocd/bomb.yaml (at ApplicationSet argocd/bomb): "
	if !slices.ContainsFunc(readers, func(s string) bool {
		return strings.HasPrefix(s, want) && strings.Contains(s, "above the evaluation budget")
	}) {
		t.Errorf("chartReaders() = %q, want one starting %q", readers, want)
	}
	if own, refused := a.ownValueFile(context.Background(), r, "envs/shared.yaml"); own || refused != "" {
		t.Errorf("ownValueFile(envs/shared.yaml) = %v, %q; want false for Application shop-staging's reading it, no other reason", own, refused)
	}
}
