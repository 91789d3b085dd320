//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// hungTenants are namespaces whose web Deployment an Argo CD Application
// installs from a chart repository that never answers.
var hungTenants = []string{"hung-1", "hung-2", "hung-3", "hung-4"}

// hungApplication is tenant's Application: the chart web of repoURL.
func hungApplication(tenant, repoURL string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + tenant + `
  namespace: argocd
spec:
  project: default
  source:
    repoURL: ` + repoURL + `
    chart: web
    targetRevision: 1.0.0
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + tenant + `
`
}

// hungObjects are each hung tenant's namespace, its web Deployment as
// Argo CD installed it, and its ResourceRecommend.
func hungObjects() []byte {
	var b strings.Builder
	for _, ns := range hungTenants {
		deployment := webManifest[strings.Index(webManifest, "---")+4:]
		deployment = strings.Replace(deployment, "namespace: shop", "namespace: "+ns+
			"\n  annotations:\n    argocd.argoproj.io/tracking-id: "+ns+":apps/Deployment:"+ns+"/web", 1)
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n%s---\n%s---\n",
			ns, deployment, strings.Replace(webRecommend, "namespace: shop", "namespace: "+ns, 1))
	}
	return []byte(b.String())
}

// hungHistory is web's week in shop and in every hung tenant.
func hungHistory(end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, ns := range append([]string{"shop"}, hungTenants...) {
		for _, span := range history.Rollouts("web", 2, 2, start, end) {
			for _, pod := range span.Pods {
				containers = append(containers,
					history.Container{Namespace: ns, Pod: pod, Container: "app", Start: span.Start, End: span.End,
						CPU: history.Constant(0.3), Memory: history.Constant(200 * mib)},
					history.Container{Namespace: ns, Pod: pod, Container: "sidecar", Start: span.Start, End: span.End,
						CPU: history.Constant(0.02), Memory: history.Constant(50 * mib)})
			}
		}
	}
	return history.Series(containers, time.Minute)
}

// TestEndToEndHungChartRepositories gives four tenants Applications whose
// chart repositories accept connections and never answer, next to the
// shop tenant's plain manifest. Their charts are fetched at the same time:
// the run costs about one chart-fetch-timeout, not four; each hung
// release is reported, and shop's change is pushed.
func TestEndToEndHungChartRepositories(t *testing.T) {
	const fetchTimeout = 8 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bed := testbedtest.Start(t, testbed.Options{History: hungHistory(time.Now().Truncate(time.Minute))})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), append(shopObjects(t, true), hungObjects())...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	files := map[string]string{"clusters/prod/web.yaml": webManifest}
	for _, ns := range hungTenants {
		// A repository of its own each, on a listener of its own.
		files["argocd/"+ns+".yaml"] = hungApplication(ns, "http://"+testbedtest.SilentListener(t)+"/charts")
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", files)
	t.Setenv("RECOMMEND_CHART_FETCH_TIMEOUT", fetchTimeout.String())
	// Without the fetch timeout, the run would wait on the repositories
	// until this deadline, and push nothing.
	args := bedArgs(t, bed, repoURL, "--run-timeout", "3m")

	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(ctx, args, &stdout, &stderr)
	took := time.Since(start)
	t.Logf("run() took %s with %d hung chart repositories and chart-fetch-timeout %s", took, len(hungTenants), fetchTimeout)
	if code != exitOK {
		t.Errorf("run() = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
	}
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("no report: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// The timeout once, with the rest of a run on a loaded machine; one
	// timeout per repository would be 32s.
	if limit := time.Duration(len(hungTenants)) * fetchTimeout; took < fetchTimeout || took >= limit {
		t.Errorf("run() took %s, want at least one chart fetch timeout (%s) and less than one per repository (%s)", took, fetchTimeout, limit)
	}
	if rep.Interrupted != "" {
		t.Errorf("report interrupted = %q, want the run to complete", rep.Interrupted)
	}
	if rep.Git == nil || !rep.Git.Pushed || len(rep.Git.Files) != 1 || rep.Git.Files[0] != "clusters/prod/web.yaml" {
		t.Fatalf("report git = %+v, want shop's clusters/prod/web.yaml pushed", rep.Git)
	}
	for _, ns := range hungTenants {
		it := entry(t, rep, ns, "web")
		want := "no answer within the chart fetch timeout of " + fetchTimeout.String()
		if it.Source == nil || it.Source.Changed || !strings.Contains(it.Source.Error, want) {
			t.Errorf("%s/web source = %+v, want its release reported with %q", ns, it.Source, want)
		}
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	pushed, _ := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml")
	assertRequests(t, pushed, map[string]string{"app/cpu": "390m", "app/memory": "260Mi", "sidecar/cpu": "26m", "sidecar/memory": "65Mi"})
}

// TestEndToEndSignalDuringPush sends the run's SIGTERM while the git
// server takes its push: the push finishes within its grace period, and
// the run still says it was interrupted and exits 1, as docs/tenants-and-security.md says.
func TestEndToEndSignalDuringPush(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(time.Now().Truncate(time.Minute))})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	remote, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, signal := context.WithCancelCause(ctx)
	defer signal(nil)
	backend := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: remote.Scheme, Host: remote.Host})
	signalled := 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			signalled++
			signal(errors.New("terminated signal received"))
			time.Sleep(300 * time.Millisecond)
		}
		backend.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	proxied := proxy.URL + remote.Path

	var stdout, stderr bytes.Buffer
	code := run(runCtx, bedArgs(t, bed, proxied, "--git-path", "clusters"), &stdout, &stderr)
	if signalled != 1 {
		t.Fatalf("the proxy saw %d pushes, want 1; stderr:\n%s", signalled, stderr.String())
	}
	if code != exitFailed {
		t.Errorf("run() = %d, want %d; stderr:\n%s", code, exitFailed, stderr.String())
	}
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("no report: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if want := "terminated signal received during git"; rep.Interrupted != want {
		t.Errorf("report interrupted = %q, want %q", rep.Interrupted, want)
	}
	// The push went through all the same, and the report says so.
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	_, tip := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/web.yaml")
	if rep.Git == nil || !rep.Git.Pushed || rep.Git.Commit != tip {
		t.Errorf("report git = %+v, want the push of the remote's tip %s reported", rep.Git, tip)
	}
}
