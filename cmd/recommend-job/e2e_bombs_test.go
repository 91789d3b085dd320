//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// bombsRunTimeout is the run-timeout of TestEndToEndRepositoryBombs.
const bombsRunTimeout = 60 * time.Second

// bombsDeployment is the manifest of a Deployment of one container, app,
// asking for 500m and 512Mi, with the metadata lines extra after its name.
func bombsDeployment(name, extra string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
` + extra + `spec:
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
          image: nginx:1.27
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
`
}

// bombsLines is format, holding one %d, for each of 0..n-1, a line each.
func bombsLines(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

// bombsAppSets are the five ApplicationSet bombs of issue 37's item 3, as
// internal/render/appset's TestGenerateBombs writes them (the merge's lists
// longer), one a file; the printf one generates bomb-0-0, the
// Application of bomb/bomb, from teams/bomb/app. Unbounded, the first,
// the second and the fifth make gigabytes of Applications, the third
// gigabytes of decoded YAML, the fourth 900 million comparisons (400
// million took a minute at 1c0fb2c on 2 shared cores).
func bombsAppSets() map[string]string {
	long := strings.Repeat("x", 50<<10)
	const head = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: NAME, namespace: argocd}\nspec:\n"
	set := func(name, spec string) string { return strings.Replace(head, "NAME", name, 1) + spec }
	return map[string]string{
		"teams/bomb/appsets/printf.yaml": set("bomb-printf", `  goTemplate: true
  generators:
  - matrix:
      generators:
      - list:
          elements:
`+bombsLines(100, "          - {a: '%d'}")+`      - list:
          elements:
`+bombsLines(100, "          - {b: '%d'}")+`  template:
    metadata:
      name: 'bomb-{{.a}}-{{.b}}'
      annotations:
        w: '{{ printf "%060000d" 0 }}'
        x: '{{ printf "%060000d" 1 }}'
        y: '{{ printf "%060000d" 2 }}'
        z: '{{ printf "%060000d" 3 }}'
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: HEAD, path: teams/bomb/app}
      destination: {server: 'https://kubernetes.default.svc', namespace: bomb}
`),
		"teams/bomb/appsets/fasttemplate.yaml": set("bomb-fasttemplate", `  generators:
  - matrix:
      generators:
      - list:
          elements:
          - {v: `+long+`}
`+bombsLines(99, "          - {v: '%d'}")+`      - list:
          elements:
`+bombsLines(100, "          - {b: '%d'}")+`  template:
    metadata:
      name: 'bomb-f{{b}}'
      annotations: {w: '`+strings.Repeat("{{v}}", 20)+`', x: '`+strings.Repeat("{{v}}", 20)+`', y: '`+strings.Repeat("{{v}}", 20)+`', z: '`+strings.Repeat("{{v}}", 20)+`'}
    spec: {source: {path: teams/bomb/app}, destination: {namespace: bomb}}
`),
		"teams/bomb/appsets/aliases.yaml": set("bomb-aliases", `  generators:
  - list:
      elements:
      - {n: &a `+strings.Repeat("y", 100<<10)+`}
`+bombsLines(10000, "      - {n: *a} # %d")+`  template:
    metadata: {name: 'bomb-aliases'}
    spec: {source: {path: teams/bomb/app}, destination: {namespace: bomb}}
`),
		"teams/bomb/appsets/merge.yaml": set("bomb-merge", `  generators:
  - merge:
      mergeKeys: [k]
      generators:
      - list:
          elements:
`+bombsLines(30000, "          - {k: '%d', a: x}")+`      - list:
          elements:
`+bombsLines(30000, "          - {k: '%d', b: y}")+`  template:
    metadata: {name: 'bomb-m{{k}}'}
    spec: {source: {path: teams/bomb/app}, destination: {namespace: bomb}}
`),
		"teams/bomb/appsets/matrix.yaml": set("bomb-matrix", `  generators:
  - matrix:
      generators:
      - list:
          elements:
`+bombsLines(1000, "          - {a: '%d'}")+`      - list:
          elements:
`+bombsLines(9, "          - {b: '%d-{{a}}-"+long+"'}")+`  template:
    metadata: {name: 'bomb-x{{a}}', annotations: {b: '{{b}}'}}
    spec: {source: {path: teams/bomb/app}, destination: {namespace: bomb}}
`),
	}
}

// bombsRepo is the repository of TestEndToEndRepositoryBombs, its
// Applications' repoURL REPO and its endless server ENDLESS:
//   - orders/api, deployed by orders-prod, which orders' ApplicationSet
//     generates from teams/orders/appset.yaml, walked after the bombs;
//   - payments/worker, deployed by payments-prod, which payments'
//     kustomization of Applications lists;
//   - bomb/bomb, rendered by teams/bomb/app and by its smoke test's
//     overlay, so that only its Application, bomb-0-0, tells them
//     apart: the printf bomb would generate it, beside the four other
//     bombs and a kustomization of Applications whose resources and
//     patches are endless URLs;
//   - bomb/net, whose own kustomization lists endless URLs in its
//     patches and configMapGenerator files.
func bombsRepo() map[string]string {
	files := map[string]string{
		"teams/orders/appset.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: orders, namespace: argocd}
spec:
  goTemplate: true
  generators:
  - list:
      elements:
      - {env: prod}
  template:
    metadata: {name: 'orders-{{.env}}'}
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: HEAD, path: 'teams/orders/{{.env}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: orders}
`,
		"teams/orders/prod/kustomization.yaml": "namespace: orders\nresources:\n  - deployment.yaml\n",
		"teams/orders/prod/deployment.yaml":    bombsDeployment("api", ""),

		"teams/payments/apps/kustomization.yaml": "resources:\n  - payments-prod.yaml\n",
		"teams/payments/apps/payments-prod.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: payments-prod, namespace: argocd}
spec:
  project: default
  source: {repoURL: REPO, targetRevision: HEAD, path: teams/payments/prod}
  destination: {server: 'https://kubernetes.default.svc', namespace: payments}
`,
		"teams/payments/prod/kustomization.yaml": "namespace: payments\nresources:\n  - deployment.yaml\n",
		"teams/payments/prod/deployment.yaml":    bombsDeployment("worker", ""),

		"teams/bomb/app/kustomization.yaml": "namespace: bomb\nresources:\n  - deployment.yaml\n",
		"teams/bomb/app/deployment.yaml":    bombsDeployment("bomb", ""),
		"teams/bomb/apps/kustomization.yaml": `resources:
  - extra.yaml
  - ENDLESS/apps/resources.yaml
patches:
  - path: ENDLESS/apps/patch.yaml
`,
		"teams/bomb/apps/extra.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: bomb-extra, namespace: argocd}
spec:
  project: default
  source: {repoURL: REPO, targetRevision: HEAD, path: teams/bomb/extra}
  destination: {server: 'https://kubernetes.default.svc', namespace: bomb}
`,
		"teams/bomb/smoke/kustomization.yaml": "resources:\n  - ../app\ncommonLabels:\n  smoke: \"true\"\n",
		"teams/bomb/net/kustomization.yaml": `namespace: bomb
resources:
  - deployment.yaml
patches:
  - path: ENDLESS/net/patch.yaml
configMapGenerator:
  - name: net
    files:
      - ENDLESS/net/config.yaml
`,
		"teams/bomb/net/deployment.yaml": bombsDeployment("net", ""),
	}
	for name, content := range bombsAppSets() {
		files[name] = content
	}
	return files
}

// endlessServer is a loopback HTTP server whose every answer is a YAML
// comment that never ends; it records the paths asked for.
type endlessServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

// startEndless starts an endlessServer, stopped when t ends.
func startEndless(t *testing.T) *endlessServer {
	t.Helper()
	s := &endlessServer{}
	stop := make(chan struct{})
	chunk := []byte("# " + strings.Repeat("x", 64<<10) + "\n")
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/yaml")
		flusher, _ := w.(http.Flusher)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stop) })
	return s
}

// crashExcerpt is what of a job's stderr says why it ended: the lines
// before a Go runtime's fatal error or panic and the first lines of the
// dump, or else the end of the logs.
func crashExcerpt(stderr string) string {
	at := -1
	for _, mark := range []string{"\nfatal error: ", "\npanic: "} {
		if i := strings.Index(stderr, mark); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return stderr[max(0, len(stderr)-4000):]
	}
	return stderr[max(0, at-2000):min(len(stderr), at+1500)]
}

// requests are the paths the server was asked for.
func (s *endlessServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// TestEndToEndRepositoryBombs is issue 37's "Done when": the job's
// binary, under a 400 MiB memory limit and a run-timeout of 60s, runs on
// a repository whose bomb tenant holds each ApplicationSet bomb of item 3
// (printf widths, fasttemplate, aliases of a long scalar, a quadratic
// merge, a matrix product) in a file of its own, a kustomization of
// Applications whose resources and patches, and an overlay whose patches
// and generator files, are URLs of a server that answers without end. The run exits 0
// within its run-timeout, the server is never asked for anything, the
// changes of orders (an ApplicationSet walked after the bombs) and
// payments (a kustomization of Applications) are pushed, and only bomb's
// two targets are refused: bomb/bomb naming each bomb file and the
// kustomization that refers to the network, bomb/net naming its own.
func TestEndToEndRepositoryBombs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := buildJob(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) holds the job to its memory limit: %v", err)
	}
	endless := startEndless(t)

	now := time.Now().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, w := range []struct{ ns, name string }{{"orders", "api"}, {"payments", "worker"}, {"bomb", "bomb"}, {"bomb", "net"}} {
		for _, span := range history.Rollouts(w.name, 1, 2, start, now) {
			containers = append(containers, history.Container{Namespace: w.ns, Pod: span.Pods[0], Container: "app",
				Start: span.Start, End: span.End, CPU: history.Constant(0.1), Memory: history.Constant(100 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(containers, time.Minute)})

	// The cluster: the four Deployments as their deployers applied them,
	// no Application live.
	cluster := [][]byte{shopObjects(t, true)[0], testbed.DeployerCRDs()}
	for _, w := range []struct{ ns, name, app string }{
		{"orders", "api", "orders-prod"}, {"payments", "worker", "payments-prod"}, {"bomb", "bomb", "bomb-0-0"}, {"bomb", "net", ""},
	} {
		extra := "  namespace: " + w.ns + "\n"
		if w.app != "" {
			extra += "  annotations:\n    argocd.argoproj.io/tracking-id: " + w.app + ":apps/Deployment:" + w.ns + "/" + w.name + "\n"
		}
		cluster = append(cluster, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+w.ns+"\n"),
			[]byte(bombsDeployment(w.name, extra)), []byte(layoutsRecommend(w.ns, w.name)))
	}
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), cluster...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	files := bombsRepo()
	replace := strings.NewReplacer("REPO", bed.Git.URL("bombs"), "ENDLESS", endless.URL)
	for name, content := range files {
		files[name] = replace.Replace(content)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "bombs", files)
	t.Log("repository created")

	args := append([]string{"--data=" + strconv.Itoa(memoryLimit), "--", bin},
		bedArgs(t, bed, repoURL, "--run-timeout", bombsRunTimeout.String())...)
	// A run that outlives its run-timeout by much is stopped here.
	runCtx, stop := context.WithTimeout(ctx, bombsRunTimeout+2*time.Minute)
	defer stop()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(runCtx, prlimit, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeak(cmd.Process.Pid)
	err = cmd.Wait()
	took := time.Since(began)
	jobPeak := peak()
	withChildren := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	t.Logf("the run took %v; peak RSS: the job %d MiB, with its render processes %d MiB, under a limit of %d MiB",
		took.Round(time.Millisecond), jobPeak/mib, withChildren/mib, memoryLimit/mib)

	// Nothing of the repository reached the network.
	if got := endless.requests(); len(got) > 0 {
		t.Errorf("the endless server was asked for %d URLs, want none: %v", len(got), got)
	}
	if err != nil {
		// Exit 0: other tenants' targets were rendered (docs/tenants-and-security.md).
		t.Fatalf("the job under a %d MiB limit and a run-timeout of %v: %v after %v, want exit 0; stderr:\n%s",
			memoryLimit/mib, bombsRunTimeout, err, took.Round(time.Millisecond), crashExcerpt(stderr.String()))
	}
	if took > bombsRunTimeout {
		t.Errorf("the run took %v, above its run-timeout %v", took, bombsRunTimeout)
	}
	var rep plan.Plan
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}
	if rep.Interrupted != "" || rep.Failed != "" {
		t.Errorf("report: interrupted %q, failed %q, want a run that completed", rep.Interrupted, rep.Failed)
	}

	// Every other tenant's change is pushed.
	wantFiles := []string{"teams/orders/prod/deployment.yaml", "teams/payments/prod/deployment.yaml"}
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, wantFiles) {
		t.Fatalf("git = %+v, want %v pushed", rep.Git, wantFiles)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	for _, target := range []struct{ ns, name, file, deployer string }{
		{"orders", "api", wantFiles[0], "Application argocd/orders-prod (generated by ApplicationSet argocd/orders in teams/orders/appset.yaml)"},
		{"payments", "worker", wantFiles[1], "Application argocd/payments-prod"},
	} {
		it := entry(t, &rep, target.ns, target.name)
		if it.Source == nil || it.Source.File != target.file || !it.Source.Changed || it.Source.Error != "" ||
			!strings.HasPrefix(it.Source.Deployer, target.deployer) {
			t.Errorf("%s/%s: source %+v, want %s changed, deployed by %s", target.ns, target.name, it.Source, target.file, target.deployer)
			continue
		}
		pushed, _ := fileAt(t, repoURL, auth, "recommend-job/main", target.file)
		cpu, memory := quantity(resourceOf(it, "app", "cpu").Recommended), quantity(resourceOf(it, "app", "memory").Recommended)
		if cpu == "" || cpu == "500m" || memory == "" || memory == "512Mi" {
			t.Errorf("%s/%s: recommended cpu %q memory %q, want new values", target.ns, target.name, cpu, memory)
		}
		assertRequests(t, pushed, map[string]string{"app/cpu": cpu, "app/memory": memory})
	}

	// Only bomb's targets are refused: bomb/bomb, whose Application the
	// bombs or the kustomization of Applications would define, naming
	// each of them; bomb/net, naming its kustomization's remote entries.
	bomb := entry(t, &rep, "bomb", "bomb")
	if bomb.Source == nil || bomb.Source.Changed {
		t.Fatalf("bomb/bomb: source %+v, want refused", bomb.Source)
	}
	t.Logf("bomb/bomb: %.2000s", bomb.Source.Error)
	for _, want := range []string{
		"the Argo CD application bomb-0-0 that deploys it is neither in the cluster, nor generated by an ApplicationSet",
		"none is chosen; 2 of them build the live pod template (teams/bomb/app: as live; teams/bomb/smoke: as live)",
		"; not evaluated: ",
		"teams/bomb/appsets/printf.yaml (at ApplicationSet argocd/bomb-printf): generator 1: template: above the evaluation budget: the file produces more than 16777216 bytes",
		"teams/bomb/appsets/fasttemplate.yaml (at ApplicationSet argocd/bomb-fasttemplate): generator 1: template: above the evaluation budget: a template's output is above 65536 bytes",
		"teams/bomb/appsets/aliases.yaml: above the evaluation budget: its aliases expand to more than 16777216 bytes",
		"ApplicationSet argocd/bomb-merge (teams/bomb/appsets/merge.yaml): generator 1: more than 10000 Applications",
		"teams/bomb/appsets/matrix.yaml (at ApplicationSet argocd/bomb-matrix): generator 1: matrix: above the evaluation budget: the file produces more than 16777216 bytes",
		"teams/bomb/apps/kustomization.yaml refers to the network: resources: " + endless.URL + "/apps/resources.yaml, patches.path: " + endless.URL + "/apps/patch.yaml",
	} {
		if !strings.Contains(bomb.Source.Error, want) {
			t.Errorf("bomb/bomb's error lacks %q", want)
		}
	}
	for _, other := range []string{"teams/orders", "teams/payments"} {
		if strings.Contains(bomb.Source.Error, other) {
			t.Errorf("bomb/bomb's error names %s, another tenant's", other)
		}
	}
	net := entry(t, &rep, "bomb", "net")
	wantNet := "teams/bomb/net/kustomization.yaml refers to the network: patches.path: " + endless.URL + "/net/patch.yaml, configMapGenerator.files: " + endless.URL + "/net/config.yaml"
	if net.Source == nil || net.Source.Changed || !strings.Contains(net.Source.Error, wantNet) {
		t.Errorf("bomb/net: source %+v, want its proof refused: %q", net.Source, wantNet)
	}
	if len(rep.Items) != 4 {
		t.Errorf("the report has %d ResourceRecommends, want 4", len(rep.Items))
	}
}
