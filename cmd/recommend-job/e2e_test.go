//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

const mib = 1 << 20

// webManifest is the GitOps repository's file for the web Deployment, in a
// multi-document file with a Service, with comments and a sequence style a
// serializer would not reproduce.
const webManifest = `# Storefront, owned by the web team.
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  ports:
    - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: nginx:1.27  # pinned
        resources:
          requests:
            cpu: 500m      # launch-day guess
            memory: 512Mi
          limits:
            memory: 1Gi
      - name: sidecar
        image: envoy:1.31
        resources:
          requests:
            cpu: 100m
            memory: 128Mi
`

// webRecommend is the shop/web ResourceRecommend: every container, cpu and
// memory, katalyst's defaults.
const webRecommend = `apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata:
  name: web
  namespace: shop
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  resourcePolicy:
    algorithmPolicy: {}
    containerPolicies:
      - containerName: "*"
        controlledResourcesPolicies:
          - resourceName: cpu
          - resourceName: memory
`

// clusterObjects are the shop namespace, web's ResourceRecommend and an
// invalid one (a 150% buffer).
const clusterObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
` + webRecommend + `---
apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata:
  name: greedy
  namespace: shop
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  resourcePolicy:
    algorithmPolicy: {}
    containerPolicies:
      - containerName: app
        controlledResourcesPolicies:
          - resourceName: cpu
            bufferPercent: 150
`

// webHistory is a week of web's usage over three rollouts of two pods,
// next to a web-api Deployment whose pods must not count for web:
//   - app CPU is 0.1 cores, and 0.3 cores from 09:00 to 12:00 UTC: 12.5% of
//     the samples are at 0.3, so p90 falls in the histogram bucket holding
//     0.3, which ends at 0.30539 cores, above every sample: the percentile
//     is the highest sample, 0.3; x 1.3 = 390m;
//   - app memory is a constant 200Mi (its bucket ends above it, at
//     205.79Mi): x 1.3 = 260Mi;
//   - sidecar CPU 0.02 cores: x 1.3 = 26m (its bucket ends at 0.0205);
//     sidecar memory 50Mi: x 1.3 = 65Mi (its bucket ends at 52.70Mi).
func webHistory(end time.Time) []testbed.Series {
	return webHistoryFrom(end.Add(-7*24*time.Hour), end)
}

// webHistoryFrom is webHistory over [start, end].
func webHistoryFrom(start, end time.Time) []testbed.Series {
	var containers []history.Container
	for _, span := range history.Rollouts("web", 2, 3, start, end) {
		for _, pod := range span.Pods {
			containers = append(containers,
				history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: span.Start, End: span.End,
					CPU: history.DailyPeak(0.1, 0.3, 9, 12), Memory: history.Constant(200 * mib)},
				history.Container{Namespace: "shop", Pod: pod, Container: "sidecar", Start: span.Start, End: span.End,
					CPU: history.Constant(0.02), Memory: history.Constant(50 * mib)})
		}
	}
	for _, span := range history.Rollouts("web-api", 1, 1, start, end) {
		containers = append(containers, history.Container{Namespace: "shop", Pod: span.Pods[0], Container: "app",
			Start: span.Start, End: span.End, CPU: history.Constant(4), Memory: history.Constant(4096 * mib)})
	}
	return history.Series(containers, time.Minute)
}

// bedArgs are the job's arguments for a run on bed's servers against the
// repository at repoURL, with a JSON report, and extra; the git token goes
// through the environment, where runJSON checks no log shows it.
func bedArgs(t *testing.T, bed *testbed.Bed, repoURL string, extra ...string) []string {
	t.Helper()
	t.Setenv("RECOMMEND_GIT_TOKEN", bed.Git.Password())
	return append([]string{
		"--kubeconfig", bed.APIServer.KubeconfigPath,
		"--prometheus-url", bed.Prometheus.URL,
		"--git-url", repoURL,
		"--git-username", bed.Git.Username,
		// One branch and pull request for the run: these tests follow it.
		"--pr-group-by", "none",
		"--output", "json",
	}, extra...)
}

func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(now)})

	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{
		"clusters/prod/web.yaml": webManifest,
		"README.md":              "prod\n",
	})
	args := bedArgs(t, bed, repoURL, "--git-path", "clusters")

	// A dry run renders and reports, and leaves the repository alone.
	dry := runJSON(t, ctx, append(append([]string(nil), args...), "--dry-run"))
	if !dry.DryRun || dry.Git == nil || dry.Git.Pushed || len(dry.Git.Files) != 1 || dry.Git.Files[0] != "clusters/prod/web.yaml" {
		t.Errorf("dry run git = %+v, want clusters/prod/web.yaml rendered and nothing pushed", dry.Git)
	}
	if branches := remoteBranches(t, repoURL, bed); len(branches) != 1 || branches[0] != "main" {
		t.Errorf("after the dry run the remote has branches %v, want only main", branches)
	}

	first := runJSON(t, ctx, args)

	web := entry(t, first, "shop", "web")
	if !web.Valid {
		t.Fatalf("shop/web invalid: %+v", web.Error)
	}
	want := map[string]string{"app/cpu": "390m", "app/memory": "260Mi", "sidecar/cpu": "26m", "sidecar/memory": "65Mi"}
	current := map[string]string{"app/cpu": "500m", "app/memory": "512Mi", "sidecar/cpu": "100m", "sidecar/memory": "128Mi"}
	seen := 0
	for _, c := range web.Containers {
		for _, r := range c.Resources {
			seen++
			key := c.Name + "/" + string(r.Resource)
			if quantity(r.Recommended) != want[key] || quantity(r.Current) != current[key] || !r.Changed {
				t.Errorf("%s: current %q recommended %q changed %v, want %q -> %q", key, quantity(r.Current), quantity(r.Recommended), r.Changed, current[key], want[key])
			}
			// A week across all rollouts: CPU every 5 minutes, memory as
			// hourly peaks.
			minSamples := 6 * 24 * 12
			if r.Resource == "memory" {
				minSamples = 6 * 24
			}
			if r.Evidence == nil || r.Evidence.Samples < minSamples {
				t.Errorf("%s: evidence %+v, want a week of samples across all rollouts", key, r.Evidence)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("shop/web reports %d container resources, want %d", seen, len(want))
	}
	if web.Source == nil || web.Source.File != "clusters/prod/web.yaml" || !web.Source.Changed {
		t.Errorf("shop/web source = %+v, want clusters/prod/web.yaml changed", web.Source)
	}

	greedy := entry(t, first, "shop", "greedy")
	if greedy.Valid || greedy.Error == nil || greedy.Error.Code != "ResourceBuffersUnsupported" {
		t.Errorf("shop/greedy = valid %v error %+v, want ResourceBuffersUnsupported", greedy.Valid, greedy.Error)
	}

	if first.Git == nil || !first.Git.Pushed || first.Git.Branch != "recommend-job/main" || first.Git.Commit == "" {
		t.Fatalf("git = %+v, want a commit pushed to recommend-job/main", first.Git)
	}

	// The pushed file carries the new requests and everything else as it was.
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	pushed, head := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml")
	if head != first.Git.Commit {
		t.Errorf("branch head = %s, want the reported commit %s", head, first.Git.Commit)
	}
	wantFile := strings.NewReplacer(
		"cpu: 500m      # launch-day guess", "cpu: 390m      # launch-day guess",
		"memory: 512Mi", "memory: 260Mi",
		"cpu: 100m", "cpu: 26m",
		"memory: 128Mi", "memory: 65Mi",
	).Replace(webManifest)
	if pushed != wantFile {
		t.Errorf("pushed file differs from the original beyond the four values:\n--- got\n%s\n--- want\n%s", pushed, wantFile)
	}
	assertRequests(t, pushed, want)
	if base, _ := fileAt(t, repoURL, auth, "main", "clusters/prod/web.yaml"); base != webManifest {
		t.Error("the base branch changed")
	}

	// A second run finds the branch up to date and commits nothing.
	second := runJSON(t, ctx, args)
	if second.Git == nil || second.Git.Pushed || second.Git.Commit != "" {
		t.Errorf("second run git = %+v, want nothing pushed", second.Git)
	}
	// Against the pull request's branch, which holds them, its files are
	// unchanged, though main does not hold them.
	if second.Git != nil && len(second.Git.Files) > 0 {
		t.Errorf("second run git.files = %v, want none: the push branch holds them", second.Git.Files)
	}
	if w := entry(t, second, "shop", "web"); w.Source == nil || w.Source.Changed {
		t.Errorf("second run shop/web source = %+v, want unchanged", w.Source)
	}
	if _, again := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml"); again != head {
		t.Errorf("second run moved the branch from %s to %s", head, again)
	}

	// doctor shows what a run depends on, and changes nothing.
	var doc, docErr bytes.Buffer
	if code := run(ctx, append([]string{"doctor"}, args...), &doc, &docErr); code != exitOK {
		t.Errorf("doctor = %d, want %d; output:\n%s\nstderr:\n%s", code, exitOK, doc.String(), docErr.String())
	}
	for _, want := range []string{
		"ok    reachable, Kubernetes",
		"ok    allowed: list resourcerecommends.recommendation.katalyst.kubewharf.io",
		"ok    2 ResourceRecommends in scope, 1 invalid",
		"shop/greedy  invalid: ResourceBuffersUnsupported",
		"rate(container_cpu_usage_seconds_total{",
		"shop/web app cpu: ",
		"ok    cloned base branch main at ",
		"push branch recommend-job/main exists",
	} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, doc.String())
		}
	}
	if strings.Contains(doc.String(), "FAIL") || strings.Contains(doc.String(), bed.Git.Password()) {
		t.Errorf("doctor output has a failure or the token:\n%s", doc.String())
	}
	if _, again := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml"); again != head {
		t.Errorf("doctor moved the branch from %s to %s", head, again)
	}

	// Without Prometheus nothing can be recommended: the run fails, says
	// why, and pushes nothing.
	var stdout, stderr bytes.Buffer
	down := append(append([]string(nil), args...), "--prometheus-url", "http://127.0.0.1:1")
	if code := run(ctx, down, &stdout, &stderr); code != exitUnreachable {
		t.Errorf("run() without Prometheus = %d, want %d", code, exitUnreachable)
	}
	if msg := stderr.String(); !strings.Contains(msg, "usage history unavailable") || !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("stderr without Prometheus = %s, want the cause named", msg)
	}
	if strings.Contains(stderr.String(), bed.Git.Password()) || strings.Contains(stdout.String(), bed.Git.Password()) {
		t.Error("the git token appears in the output of the failed run")
	}
	doc.Reset()
	if code := run(ctx, append([]string{"doctor"}, down...), &doc, &docErr); code != exitUnreachable {
		t.Errorf("doctor without Prometheus = %d, want %d", code, exitUnreachable)
	}
	if !strings.Contains(doc.String(), "FAIL  reading the history of namespace shop") {
		t.Errorf("doctor without Prometheus does not say so:\n%s", doc.String())
	}
	if _, again := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml"); again != head {
		t.Errorf("the failed run moved the branch from %s to %s", head, again)
	}
}

// shopObjects are what the tests put in the cluster: the CRD (unless the
// chart brings it), the ResourceRecommends and the web Deployment as the
// repository defines it.
func shopObjects(t *testing.T, withCRD bool) [][]byte {
	t.Helper()
	objs := [][]byte{[]byte(clusterObjects), []byte(webManifest[strings.Index(webManifest, "---")+4:])}
	if !withCRD {
		return objs
	}
	crd, err := os.ReadFile(filepath.Join("..", "..", "charts", "recommend-job", "crds", "resourcerecommends.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return append([][]byte{crd}, objs...)
}

func runJSON(t *testing.T, ctx context.Context, args []string) *plan.Plan {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run() = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
	}
	if strings.Contains(stderr.String(), os.Getenv("RECOMMEND_GIT_TOKEN")) {
		t.Errorf("the git token appears in the logs")
	}
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}
	return rep
}

func entry(t *testing.T, rep *plan.Plan, ns, name string) plan.Item {
	t.Helper()
	for _, e := range rep.Items {
		if e.Namespace == ns && e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry for %s/%s in %+v", ns, name, rep.Items)
	return plan.Item{}
}

// fileAt reads a file at the tip of a remote branch and returns it with the
// tip's hash.
func fileAt(t *testing.T, url string, auth *githttp.BasicAuth, branch, path string) (string, string) {
	t.Helper()
	content, commit := testbedtest.BranchFile(t, url, auth, branch, path)
	return content, commit.Hash.String()
}

// remoteBranches lists the branches of the repository at url.
func remoteBranches(t *testing.T, url string, bed *testbed.Bed) []string {
	t.Helper()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.List(&git.ListOptions{Auth: &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}})
	if err != nil {
		t.Fatalf("listing branches: %v", err)
	}
	var branches []string
	for _, r := range refs {
		if r.Name().IsBranch() {
			branches = append(branches, r.Name().Short())
		}
	}
	return branches
}

// assertRequests parses the Deployment document and checks its requests.
func assertRequests(t *testing.T, manifest string, want map[string]string) {
	t.Helper()
	docs := strings.Split(manifest, "\n---\n")
	node, err := yaml.Parse(docs[len(docs)-1])
	if err != nil {
		t.Fatalf("pushed Deployment does not parse: %v", err)
	}
	for key, value := range want {
		container, resource, _ := strings.Cut(key, "/")
		got, err := node.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name="+container+"]", "resources", "requests", resource))
		if err != nil || got == nil {
			t.Errorf("%s: not found (%v)", key, err)
			continue
		}
		if s := yaml.GetValue(got); s != value {
			t.Errorf("%s = %s, want %s", key, s, value)
		}
	}
}

// quantity shows q, or "" for none.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}
