//go:build integration

package bench

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// queriesPerNamespace is how many range queries the job sends per
// namespace for a week at its defaults: the scrape interval, CPU (one
// range: 10,081 points at the 1m it measures), memory peaks, OOM kills
// and startup peaks; kube-state-metrics ownership is one series listing
// more.
const queriesPerNamespace = 5

// maxAPIRequests bounds the apiserver requests of a run below 500 of each
// object (one page): discovery, the ResourceRecommends, per kind its
// metadata and its objects, the HorizontalPodAutoscalers.
const maxAPIRequests = 16

// TestSmoke runs the benchmark at N = 100, floor and baseline included, and
// the job alone at N = 120, on a week of history, and checks counts, never
// times: the apiserver requests of a run are a few and the same at both
// scales (both have more namespaces than the job lists one by one), the
// job sends queriesPerNamespace queries per namespace, every
// ResourceRecommend gets its values, the branch is pushed with one changed
// file per workload, and the floor and the baseline send what they should.
func TestSmoke(t *testing.T) {
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	job, err := BuildJob(t.Context(), root, filepath.Join(t.TempDir(), "recommend-job"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	run := func(n int, floorAndBaseline bool) *Result {
		t.Helper()
		res, err := Run(t.Context(), Options{
			N: n, RepoRoot: root, CacheDir: cache, WorkDir: t.TempDir(), JobBinary: job,
			NoFloor: !floorAndBaseline, NoBaseline: !floorAndBaseline, Logf: t.Logf,
		})
		if err != nil {
			t.Fatalf("N = %d: %v", n, err)
		}
		var b strings.Builder
		if err := res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		t.Logf("N = %d:\n%s", n, b.String())
		checkRun(t, res)
		return res
	}
	res := run(100, true)
	other := run(120, false)

	if !slices.Equal(res.APICalls, other.APICalls) {
		t.Errorf("apiserver requests differ with N:\nN = 100: %s\nN = 120: %s", strings.Join(res.APICalls, ", "), strings.Join(other.APICalls, ", "))
	}
	if len(res.APICalls) == 0 || len(res.APICalls) > maxAPIRequests {
		t.Errorf("apiserver requests = %d, want 1 to %d: %s", len(res.APICalls), maxAPIRequests, strings.Join(res.APICalls, ", "))
	}

	if len(res.Floor) != 3 {
		t.Fatalf("floor rows = %+v, want list calls, PromQL queries and clone + push", res.Floor)
	}
	if lists, queries := res.Floor[0], res.Floor[1]; lists.APIRequests != res.Total.APIRequests || queries.Queries != res.Total.Queries {
		t.Errorf("floor replayed %d apiserver requests and %d queries, the run sent %d and %d",
			lists.APIRequests, queries.Queries, res.Total.APIRequests, res.Total.Queries)
	}
	if queries := res.Floor[1]; queries.Samples != res.Total.Samples || queries.Samples == 0 {
		t.Errorf("floor queries scanned %d samples, the run's %d; want the same, above zero", queries.Samples, res.Total.Samples)
	}
	if res.Baseline == nil || res.Baseline.Queries != 4*res.N || res.Baseline.Samples == 0 {
		t.Errorf("baseline = %+v, want %d queries (CR x 2 containers x 2 resources) that scanned samples", res.Baseline, 4*res.N)
	}
	if res.StoredTotal == 0 || res.Ratios.ScannedOverStored == 0 {
		t.Errorf("stored samples = %d, scanned/stored = %g; want both above zero", res.StoredTotal, res.Ratios.ScannedOverStored)
	}
}

// checkRun checks the counts of one scale's run.
func checkRun(t *testing.T, res *Result) {
	t.Helper()
	if want := queriesPerNamespace * res.Namespaces; res.Total.Queries != want {
		t.Errorf("N = %d: PromQL queries = %d, want %d per namespace x %d namespaces = %d",
			res.N, res.Total.Queries, queriesPerNamespace, res.Namespaces, want)
	}
	listings := 0
	for _, shape := range res.QueryShapes {
		if n, rest, ok := strings.Cut(shape, " x "); ok && strings.HasPrefix(rest, "series ") {
			listings, _ = strconv.Atoi(n)
		}
	}
	if listings != res.Namespaces {
		t.Errorf("N = %d: %d series listings, want one per namespace (%d): %s", res.N, listings, res.Namespaces, strings.Join(res.QueryShapes, "; "))
	}
	c := res.Checks
	if c.ResourceRecommends != res.N || c.WithValues != res.N {
		t.Errorf("N = %d: %d ResourceRecommends reported, %d with every value; want %d", res.N, c.ResourceRecommends, c.WithValues, res.N)
	}
	if !c.Pushed || c.Branch == "" || c.Files != res.N {
		t.Errorf("N = %d: pushed %v to %q with %d files, want %d files on a pushed branch", res.N, c.Pushed, c.Branch, c.Files, res.N)
	}
	var names []string
	for _, s := range res.Stages {
		names = append(names, s.Name)
	}
	for _, want := range []string{"collect", "history", StageRender, StageGit} {
		if !slices.Contains(names, want) {
			t.Errorf("N = %d: stages %v, want %s among them", res.N, names, want)
		}
	}
}
