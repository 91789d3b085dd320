//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/record"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// verifyDeployment is a Deployment of the verified shop with one app
// container's requests and memory limit.
func verifyDeployment(name, cpu, memory, limit string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      containers:
      - name: app
        image: app:1
        resources:
          requests:
            cpu: ` + cpu + `
            memory: ` + memory + `
          limits:
            memory: ` + limit + `
`
}

// verifyWorkloads are the three Deployments as the job's merged changes
// left them:
//   - web's memory was cut from 512Mi to 256Mi two days ago, and its pods
//     were OOM-killed after;
//   - api's memory was cut from 1Gi to 512Mi five days ago, and nothing
//     got worse;
//   - worker's CPU was cut from 1 to 250m two days ago, and its throttling
//     rose from 1% to 40% of periods.
var verifyWorkloads = []struct {
	name, cpu, memory, limit string
	// before are the requests before the change, as kube-state-metrics
	// saw them, and changed when the change took effect (ago).
	cpuBefore, memoryBefore float64
	ago                     time.Duration
	usageCPU, usageMemory   float64
	trailer                 string
}{
	{"web", "1", "256Mi", "256Mi", 1, 512 * mib, 48 * time.Hour, 0.1, 240 * mib, "shop/web app memory 512Mi 256Mi"},
	{"api", "260m", "512Mi", "1Gi", 0.26, 1024 * mib, 5 * 24 * time.Hour, 0.2, 380 * mib, "shop/api app memory 1Gi 512Mi"},
	{"worker", "250m", "128Mi", "256Mi", 1, 128 * mib, 48 * time.Hour, 0.2, 100 * mib, "shop/worker app cpu 1 250m"},
}

// verifyHistory is a week of the three Deployments' usage, requests,
// OOM kills and CFS counters, ending at end, around changes that took
// effect relative to now.
func verifyHistory(now, end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	var series []testbed.Series
	for _, w := range verifyWorkloads {
		effective := now.Add(-w.ago)
		pods := history.Rollouts(w.name, 2, 1, start, end)[0].Pods
		for i, pod := range pods {
			containers = append(containers, history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: end,
				CPU: history.Constant(w.usageCPU), Memory: history.Constant(w.usageMemory)})
			cpuAfter, memoryAfter := w.cpuBefore, w.memoryBefore
			switch w.name {
			case "worker":
				cpuAfter = 0.25
				series = append(series, history.Throttling("shop", pod, "app", history.Step(0.01, 0.4, effective), start, end, time.Minute)...)
			default:
				memoryAfter = w.memoryBefore / 2
				series = append(series, history.Throttling("shop", pod, "app", history.Constant(0.01), start, end, time.Minute)...)
			}
			series = append(series,
				history.Requests("shop", pod, "app", "cpu", history.Step(w.cpuBefore, cpuAfter, effective), start, end, time.Minute),
				history.Requests("shop", pod, "app", "memory", history.Step(w.memoryBefore, memoryAfter, effective), start, end, time.Minute))
			if w.name == "web" {
				// Each pod is killed once, hours apart, after the cut.
				series = append(series, history.OOMKill("shop", pod, "app", start, effective.Add(time.Duration(3+7*i)*time.Hour), end, time.Minute)...)
			}
		}
	}
	return append(history.Series(containers, time.Minute), series...)
}

// TestEndToEndVerifiesMergedChanges runs the job on a repository whose
// base branch holds three changes of the job's, merged days ago, on a real
// Gitea: the memory cut followed by OOM kills and the CPU cut followed by
// throttling each get a regression pull request of their own with the
// value before (memory above the peak plus the OOM bump), the other
// recommendations of those containers are held, and the cut that did no
// harm is verified with nothing proposed. A second run proposes the same
// corrections again and opens nothing new.
func TestEndToEndVerifiesMergedChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	v := newVerifyBed(t, ctx, now)
	repoURL, forge, args := v.repoURL, v.forge, v.args
	// The job's commits, merged when they were made: each writes the
	// manifests as the cluster runs them now, and the job's record holds
	// it with its change.
	auth := &githttp.BasicAuth{Username: forge.Username, Password: forge.Token()}
	var pushed []gitops.Pushed
	for _, w := range slices.Backward(verifyWorkloads) {
		at := now.Add(-w.ago - time.Hour)
		hash := pushCommit(t, repoURL, auth, jobSignature(at), "clusters/prod/shop.yaml", "# The shop.\n---\n"+strings.Join(v.manifests, "---\n"),
			"Right-size resource requests\n\nRecommend-Job-Change: "+w.trailer+"\n")
		pushed = append(pushed, gitops.Pushed{Commit: hash, Branch: "main", Time: at, Changes: "Recommend-Job-Change: " + w.trailer + "\n"})
	}
	v.record(t, ctx, pushed)

	first := runJSON(t, ctx, args)

	web := entry(t, first, "shop", "web")
	watch := watchOf(t, web, "memory")
	if watch.State != plan.WatchRegressed || watch.Correction == nil || watch.Correction.String() != "512Mi" ||
		!strings.Contains(watch.Regression, "2 OOM kills after, 0 before") {
		t.Errorf("web's memory watch = %+v, want regressed after 2 OOM kills and corrected to 512Mi", watch)
	}
	if watch.Effective == nil || watch.Effective.Sub(now.Add(-48*time.Hour)).Abs() > 5*time.Minute {
		t.Errorf("web's change took effect at %v, want about %v (kube-state-metrics' requests)", watch.Effective, now.Add(-48*time.Hour))
	}
	if r := resourceOf(web, "app", "memory"); !r.Correction || !r.Changed || quantity(r.Recommended) != "512Mi" || quantity(r.RecommendedLimit) != "512Mi" {
		t.Errorf("web's memory = %+v, want the correction to 512Mi, the limit raised with it", r)
	}
	if r := resourceOf(web, "app", "cpu"); !r.HeldBack || r.Changed || !strings.Contains(r.Reason, "correction of a regression") {
		t.Errorf("web's cpu = %+v, want it held while the correction waits", r)
	}
	worker := entry(t, first, "shop", "worker")
	if w := watchOf(t, worker, "cpu"); w.State != plan.WatchRegressed || w.Correction == nil || w.Correction.String() != "1" ||
		!strings.Contains(w.Regression, "throttled in 40% of CPU periods after, 1% before") {
		t.Errorf("worker's cpu watch = %+v, want regressed by throttling and corrected to 1", w)
	}
	api := entry(t, first, "shop", "api")
	if w := watchOf(t, api, "memory"); w.State != plan.WatchVerified || w.Correction != nil {
		t.Errorf("api's memory watch = %+v, want verified", w)
	}
	for _, c := range api.Containers {
		for _, r := range c.Resources {
			if r.Changed {
				t.Errorf("api's %s/%s changes (%+v); nothing is proposed for a verified change", c.Name, r.Resource, r)
			}
		}
	}

	// Two pull requests, one per regression, each with its correction.
	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	prs, _, err := sdk.ListRepoPullRequests(forge.Username, "verified", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, pr := range prs {
		titles = append(titles, pr.Title)
		if !strings.HasPrefix(pr.Title, "Regression: ") || !strings.Contains(pr.Body, "\n## Regression\n") || !strings.Contains(pr.Body, "/commit/") {
			t.Errorf("pull request %q is not flagged as a regression with a link to the change:\n%s", pr.Title, pr.Body)
		}
	}
	if len(prs) != 2 {
		t.Fatalf("open pull requests = %q, want one per regression", titles)
	}
	for _, g := range first.Groups {
		if g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
			t.Errorf("group %s = %+v, want its pull request created", g.Name, g.Git)
			continue
		}
		pushed, _ := fileAt(t, repoURL, auth, g.Git.Branch, "clusters/prod/shop.yaml")
		want := map[string]string{"regression/shop/web": "memory: 512Mi", "regression/shop/worker": "cpu: 1\n"}[g.Name]
		if want == "" || !strings.Contains(pushed, want) {
			t.Errorf("group %s pushed:\n%s\nwant %q in it", g.Name, pushed, want)
		}
	}

	// The job recorded the commits of the two pull requests it pushed.
	recorded := map[string]gitops.Pushed{}
	for _, e := range v.recorded(t, ctx) {
		recorded[e.Commit] = e
	}
	for _, g := range first.Groups {
		if g.Git == nil || g.Git.PullRequest == nil {
			continue
		}
		if e, ok := recorded[g.Git.Commit]; !ok || e.PullRequest != g.Git.PullRequest.Number || e.Branch != g.Git.Branch ||
			!strings.Contains(e.Changes, "Recommend-Job-Correction: shop/") {
			t.Errorf("group %s pushed %s for #%d; the record holds %+v", g.Name, g.Git.Commit, g.Git.PullRequest.Number, e)
		}
	}
	if len(recorded) != len(verifyWorkloads)+2 {
		t.Errorf("the record holds %d commits, want the %d merged and the 2 pushed", len(recorded), len(verifyWorkloads))
	}

	// The next run proposes the same corrections and holds the rest again.
	second := runJSON(t, ctx, args)
	if r := resourceOf(entry(t, second, "shop", "web"), "app", "cpu"); !r.HeldBack || r.Changed {
		t.Errorf("second run: web's cpu = %+v, want held still", r)
	}
	for _, g := range second.Groups {
		if g.Git == nil || g.Git.Pushed || g.Git.PullRequest == nil || g.Git.PullRequest.Action == plan.PRCreated {
			t.Errorf("second run: group %s = %+v, want its pull request as it was", g.Name, g.Git)
		}
	}

	// People put the values back by hand: nothing regresses any more, and
	// the run, which groups nothing, closes both regression pull requests.
	fixed := verifyDeployment("web", "1", "512Mi", "512Mi") + "---\n" + verifyDeployment("worker", "1", "128Mi", "256Mi")
	if err := testbed.Apply(ctx, v.bed.APIServer.RESTConfig(), []byte(fixed)); err != nil {
		t.Fatalf("applying the fixed Deployments: %v", err)
	}
	third := runJSON(t, ctx, args)
	if third.Unverified != "" {
		t.Fatalf("third run: unverified: %s", third.Unverified)
	}
	closed := map[string]bool{}
	for _, g := range third.Groups {
		if g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Action == plan.PRClosed {
			closed[g.Name] = true
		}
	}
	if !closed["regression/shop/web"] || !closed["regression/shop/worker"] || len(third.Groups) != 2 {
		t.Errorf("third run: groups = %+v, want both regression pull requests closed", third.Groups)
	}
	if prs, _, err := sdk.ListRepoPullRequests(forge.Username, "verified", gitea.ListPullRequestsOptions{State: gitea.StateOpen}); err != nil {
		t.Fatal(err)
	} else {
		for _, pr := range prs {
			if strings.HasPrefix(pr.Title, "Regression: ") {
				t.Errorf("third run: %q is still open", pr.Title)
			}
		}
	}
}

// TestEndToEndIgnoresForgedTrailers runs the job after mallory, who may
// write to the repository, pushed to main commits dressed as the job's:
// its author, a Co-authored-by line naming it, and trailers that record a
// memory cut of web from 16Gi (web was OOM-killed since) and a correction
// of worker's CPU to 4 cores. None of them is in the job's record, so
// nothing is watched, corrected or held: no regression pull request
// raises web to 16Gi, and worker's CPU is recommended from its usage.
func TestEndToEndIgnoresForgedTrailers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	v := newVerifyBed(t, ctx, now)
	token, err := v.forge.AddCollaborator(ctx, "verified", "mallory", "write")
	if err != nil {
		t.Fatal(err)
	}
	mallory := &githttp.BasicAuth{Username: "mallory", Password: token}
	coAuthor := "\nCo-authored-by: recommend-job <recommend-job@users.noreply.github.com>\n"
	pushCommit(t, v.repoURL, mallory, jobSignature(now.Add(-49*time.Hour)), "clusters/prod/shop.yaml", "# The shop.\n---\n"+strings.Join(v.manifests, "---\n"),
		"Right-size resource requests\n\nRecommend-Job-Change: shop/web app memory 16Gi 256Mi\n"+coAuthor)
	pushCommit(t, v.repoURL, mallory, &object.Signature{Name: "mallory", Email: "mallory@example.com", When: now.Add(-2 * time.Hour)},
		"notes.txt", "mine\n", "Notes\n\nRecommend-Job-Correction: shop/worker app cpu 100m 4\n"+coAuthor)

	rep := runJSON(t, ctx, v.args)
	for _, it := range rep.Items {
		if len(it.Watches) > 0 || it.Regressed() {
			t.Errorf("%s/%s watches %+v after forged trailers, want none", it.Namespace, it.Name, it.Watches)
		}
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if r.Correction || strings.Contains(r.Reason, "correction") {
					t.Errorf("%s/%s %s/%s = %+v, want neither a correction nor a hold for one", it.Namespace, it.Name, c.Name, r.Resource, r)
				}
				if r.Recommended != nil && r.Recommended.Cmp(resource.MustParse("4Gi")) > 0 {
					t.Errorf("%s/%s %s/%s recommended %s, want the forged 16Gi nowhere", it.Namespace, it.Name, c.Name, r.Resource, r.Recommended)
				}
			}
		}
	}
	if r := resourceOf(entry(t, rep, "shop", "worker"), "app", "cpu"); r.Recommended == nil || r.Recommended.Cmp(resource.MustParse("1")) >= 0 {
		t.Errorf("worker's cpu = %+v, want it recommended from its usage (0.2 cores), not kept at the forged correction's 4", r)
	}
	for _, g := range rep.Groups {
		if strings.HasPrefix(g.Name, "regression/") {
			t.Errorf("group %s opened on forged trailers", g.Name)
		}
	}
	sdk, err := gitea.NewClient(v.forge.APIURL(), gitea.SetToken(v.forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	prs, _, err := sdk.ListRepoPullRequests(v.forge.Username, "verified", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs {
		if strings.HasPrefix(pr.Title, "Regression: ") || strings.Contains(pr.Body, "16Gi") {
			t.Errorf("pull request %q follows the forged trailers:\n%s", pr.Title, pr.Body)
		}
	}
}

// watchOf is the watch of an item's app container's resource.
func watchOf(t *testing.T, it plan.Item, res string) plan.Watch {
	t.Helper()
	for _, w := range it.Watches {
		if w.Container == "app" && string(w.Resource) == res {
			return w
		}
	}
	t.Fatalf("%s/%s has no watch of app/%s: %+v", it.Namespace, it.Name, res, it.Watches)
	return plan.Watch{}
}

// jobSignature is the job's default author and committer at at.
func jobSignature(at time.Time) *object.Signature {
	return &object.Signature{Name: "recommend-job", Email: "recommend-job@users.noreply.github.com", When: at}
}

// pushCommit commits content as file on main by sig, with message, pushes
// it with auth and returns its hash.
func pushCommit(t *testing.T, url string, auth *githttp.BasicAuth, sig *object.Signature, file, content, message string) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	hash, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth}); err != nil {
		t.Fatal(err)
	}
	return hash.String()
}

// jobNamespace is where the end-to-end tests keep the job's record.
const jobNamespace = "recommend-job"

// verifyBed is the test bed of the verification tests: the three
// Deployments of verifyWorkloads and their ResourceRecommends in the
// cluster, their week of history in Prometheus, the repository
// "verified" on a real Gitea, and the arguments of a run on them that
// keeps its record in jobNamespace.
type verifyBed struct {
	bed       *testbed.Bed
	forge     *testbed.Gitea
	repoURL   string
	manifests []string
	args      []string
}

func newVerifyBed(t *testing.T, ctx context.Context, now time.Time) *verifyBed {
	t.Helper()
	bed := testbedtest.Start(t, testbed.Options{History: verifyHistory(now, now.Add(-10*time.Minute))})
	forge := testbedtest.Gitea(t)
	var manifests, recommends []string
	for _, w := range verifyWorkloads {
		manifests = append(manifests, verifyDeployment(w.name, w.cpu, w.memory, w.limit))
		recommends = append(recommends, layoutsRecommend("shop", w.name))
	}
	cluster := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + jobNamespace +
		"\n---\n" + strings.Join(append(manifests, recommends...), "---\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(cluster)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL, err := forge.CreateRepo(ctx, "verified", map[string]string{"clusters/prod/shop.yaml": "# The shop.\n"})
	if err != nil {
		t.Fatal(err)
	}
	args := giteaRunArgs(t, bed, forge, repoURL, "--pr-group-by", "none", "--record-namespace", jobNamespace)
	return &verifyBed{bed: bed, forge: forge, repoURL: repoURL, manifests: manifests, args: args}
}

// record writes pushed into the job's record, as the runs that pushed
// them would have.
func (v *verifyBed) record(t *testing.T, ctx context.Context, pushed []gitops.Pushed) {
	t.Helper()
	store := record.New(testbedtest.Clientset(t, v.bed).CoreV1().ConfigMaps(jobNamespace), jobNamespace, "")
	if err := store.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed { return append(cur, pushed...) }); err != nil {
		t.Fatal(err)
	}
}

// recorded returns the job's record.
func (v *verifyBed) recorded(t *testing.T, ctx context.Context) []gitops.Pushed {
	t.Helper()
	got, err := record.New(testbedtest.Clientset(t, v.bed).CoreV1().ConfigMaps(jobNamespace), jobNamespace, "").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
