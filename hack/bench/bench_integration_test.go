//go:build integration

package bench

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

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
// metadata and its objects, the HorizontalPodAutoscalers; and, as the runs
// keep checkpoints, the checkpoints' list and write and the record's reads
// and write.
const maxAPIRequests = 20

// smokeWarm is how long after its cold run each scale of TestSmoke runs
// warm: longer than N = 120 takes after its run (the replay of its
// queries), so that N = 100 starts cold before N = 120's warm run, which
// then runs between two steps of N = 100's measurement or after it.
const smokeWarm = 90 * time.Second

// TestSmoke runs the job alone at N = 120, and the benchmark at N = 100,
// floor and baseline included, on a week of history, each warm smokeWarm
// after its cold run, interleaved (RunScales), and checks counts, never
// times: the apiserver requests of a run are a few and the same at both
// scales (both have more namespaces than the job lists one by one), the
// job sends queriesPerNamespace queries per namespace, every
// ResourceRecommend gets its values, the branch is pushed with one changed
// file per workload, and the floor and the baseline send what they should;
// N = 120's warm run comes after N = 100's cold run started, and each warm
// run gives the values of a run without checkpoints, keeps its
// checkpoint, and reads only pages.
func TestSmoke(t *testing.T) {
	root, job := buildJob(t)
	cache := t.TempDir()
	var opts []Options
	for _, n := range []int{120, 100} {
		opts = append(opts, Options{
			N: n, RepoRoot: root, CacheDir: cache, WorkDir: t.TempDir(), JobBinary: job,
			NoFloor: n != 100, NoBaseline: n != 100, Warm: smokeWarm, Logf: t.Logf,
		})
	}
	var results []*Result
	var started100 bool
	opts[1].Logf = func(format string, args ...any) {
		if strings.HasPrefix(format, "running the job on") {
			started100 = true
		}
		t.Logf(format, args...)
	}
	err := RunScales(t.Context(), opts, func(res *Result) error {
		var b strings.Builder
		if err := res.WriteText(&b); err != nil {
			return err
		}
		t.Logf("N = %d:\n%s", res.N, b.String())
		if res.N == 120 && !started100 {
			t.Errorf("N = 120: its warm run ended before N = 100's cold run started; want them interleaved")
		}
		results = append(results, res)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].N != 120 || results[1].N != 100 {
		t.Fatalf("results %v, want N = 120 then 100", results)
	}
	res, other := results[1], results[0]
	for _, r := range results {
		checkRun(t, r)
		checkWarm(t, r)
	}

	if !slices.Equal(res.APICalls, other.APICalls) {
		t.Errorf("apiserver requests differ with N:\nN = 100: %s\nN = 120: %s", strings.Join(res.APICalls, ", "), strings.Join(other.APICalls, ", "))
	}
	if len(res.APICalls) == 0 || len(res.APICalls) > maxAPIRequests {
		t.Errorf("apiserver requests = %d, want 1 to %d: %s", len(res.APICalls), maxAPIRequests, strings.Join(res.APICalls, ", "))
	}

	if len(res.Floor) != 3 {
		t.Fatalf("floor rows = %+v, want list calls, PromQL queries and clone + push", res.Floor)
	}
	reads := 0
	for _, c := range res.APICalls {
		if strings.HasPrefix(c, "GET ") {
			reads++
		}
	}
	if lists, queries := res.Floor[0], res.Floor[1]; lists.APIRequests != reads || queries.Queries != res.Total.Queries {
		t.Errorf("floor replayed %d apiserver requests and %d queries, the run sent %d reads and %d queries",
			lists.APIRequests, queries.Queries, reads, res.Total.Queries)
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

// checkWarm checks the warm run of one scale: it ran, no value differs
// from a run without checkpoints at the same moment, the checkpoint was
// kept, and every list it read was paged.
func checkWarm(t *testing.T, res *Result) {
	t.Helper()
	w := res.Warm
	if w == nil {
		t.Errorf("N = %d: no warm run", res.N)
		return
	}
	if w.Checks.ExitCode != 0 || w.Checks.WithValues != res.N {
		t.Errorf("N = %d, warm: exit code %d, %d ResourceRecommends with every value; want 0, %d", res.N, w.Checks.ExitCode, w.Checks.WithValues, res.N)
	}
	if w.Values != 4*res.N || w.Differ != 0 {
		t.Errorf("N = %d, warm: %d of %d values differ from a run without checkpoints; want none of %d", res.N, w.Differ, w.Values, 4*res.N)
	}
	if w.CheckpointPages == 0 || w.CheckpointBytes == 0 {
		t.Errorf("N = %d, warm: checkpoint of %d bytes in %d pages, want one", res.N, w.CheckpointBytes, w.CheckpointPages)
	}
	if w.After < Duration(smokeWarm) {
		t.Errorf("N = %d, warm: ran %s after the cold run, want at least %s", res.N, w.After, smokeWarm)
	}
	for _, calls := range [][]string{res.APICalls, w.APICalls} {
		if p := checkPages(calls); len(p.Unpaged) > 0 || p.Pages == 0 {
			t.Errorf("N = %d: apiserver requests %s; want pages only", res.N, p)
		}
	}
}

// maxForgePerGroup bounds the forge's API requests of a grouped run per
// group with changes, on a forge without pull requests yet: whether the
// group waits (its account, its last closed pull request), its open one,
// its creation, and the run's few of its own (the server's version, the
// open pull requests).
const maxForgePerGroup = 8

// TestSmokeForge runs the benchmark at N = 100, a pull request per
// namespace on a real Gitea, without floor nor baseline, and checks
// counts: every group opens its pull request (five, under the job's
// pr-per-run), Gitea holds them, the forge's API requests are counted
// apart from git's, a few per group, and render is still cut out of git
// by git's requests.
func TestSmokeForge(t *testing.T) {
	root, job := buildJob(t)
	s, err := Start(t.Context(), Options{
		N: 100, RepoRoot: root, CacheDir: t.TempDir(), WorkDir: t.TempDir(), JobBinary: job,
		NoFloor: true, NoBaseline: true, GroupBy: "namespace", Forge: ForgeGitea, Logf: t.Logf,
	})
	if s != nil {
		defer s.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result()
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("N = %d:\n%s", res.N, b.String())
	f := res.Forge
	if f == nil {
		t.Fatal("no forge figures")
	}
	if n := res.Namespaces; f.Groups != n || f.WithChanges != n || f.Opened != n || f.Waiting != 0 || f.Held != 0 {
		t.Errorf("%d groups, %d with changes, %d pull requests opened, %d waiting, %d held; want %d, %d, %d, none, none",
			f.Groups, f.WithChanges, f.Opened, f.Waiting, f.Held, n, n, n)
	}
	if f.Calls.Total == 0 || f.PerGroup > maxForgePerGroup || f.Calls.ByClass[ForgePulls] < f.Opened {
		t.Errorf("forge calls %+v, %.2f per group; want some, at least one on pulls per pull request opened, at most %d per group",
			f.Calls, f.PerGroup, maxForgePerGroup)
	}
	if f.GitRequests == 0 || res.Total.ForgeRequests != f.Calls.Total {
		t.Errorf("%d git requests, %d forge requests in the stages; want git's apart, and the stages to hold the %d forge calls",
			f.GitRequests, res.Total.ForgeRequests, f.Calls.Total)
	}
	sdk, err := gitea.NewClient(s.e.gitea.APIURL(), gitea.SetToken(s.e.gitea.Token()), gitea.SetContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(s.e.forgeRepo, "/")
	prs, _, err := sdk.ListRepoPullRequests(owner, name, gitea.ListPullRequestsOptions{
		ListOptions: gitea.ListOptions{PageSize: 50}, State: gitea.StateOpen,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != f.Opened {
		t.Errorf("Gitea holds %d open pull requests, the report says %d were opened", len(prs), f.Opened)
	}
	var names []string
	for _, st := range res.Stages {
		names = append(names, st.Name)
	}
	for _, want := range []string{"collect", "history", StageRender, StageGit} {
		if !slices.Contains(names, want) {
			t.Errorf("stages %v, want %s among them", names, want)
		}
	}
}

// buildJob builds the job for a smoke test, and returns the repository's
// root and the binary.
func buildJob(t *testing.T) (root, job string) {
	t.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	job, err = BuildJob(t.Context(), root, filepath.Join(t.TempDir(), "recommend-job"))
	if err != nil {
		t.Fatal(err)
	}
	return root, job
}
