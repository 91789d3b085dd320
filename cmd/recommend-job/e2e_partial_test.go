//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// thanosWarning is what Thanos' querier says when a store did not answer.
const thanosWarning = "partial response: store 127.0.0.1:10901 unavailable, results may be incomplete"

// warningProxy stands in front of the Prometheus at upstream as a Thanos
// querier would with a store missing: every answer about namespace
// carries thanosWarning, its data unchanged.
func warningProxy(t *testing.T, upstream, namespace string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := http.PostForm(upstream+r.URL.Path, r.Form)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		asked := r.Form.Get("query") + strings.Join(r.Form["match[]"], " ")
		if resp.StatusCode == http.StatusOK && strings.Contains(asked, `namespace="`+namespace+`"`) {
			var answer map[string]any
			if err := json.Unmarshal(body, &answer); err != nil {
				t.Errorf("proxy: decoding the answer: %v", err)
			}
			answer["warnings"] = []string{thanosWarning}
			body, _ = json.Marshal(answer)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// inNamespace is text (manifests, ResourceRecommends) with namespace shop
// renamed.
func inNamespace(text, namespace string) string {
	return strings.NewReplacer("namespace: shop", "namespace: "+namespace, "name: shop", "name: "+namespace).Replace(text)
}

// TestEndToEndPartialAnswer runs the job through a proxy that adds a
// Thanos-style warning to every answer about namespace blog: blog's web is
// not recommended and its file is left alone, the report, the pull
// request's body and the dashboard say why, and shop's web is pushed.
func TestEndToEndPartialAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	series := webHistory(now)
	for _, s := range webHistory(now) {
		labels := map[string]string{}
		for k, v := range s.Labels {
			labels[k] = v
		}
		labels["namespace"] = "blog"
		series = append(series, testbed.Series{Name: s.Name, Labels: labels, Samples: s.Samples})
	}
	bed := testbedtest.Start(t, testbed.Options{History: series})
	deployment := webManifest[strings.Index(webManifest, "---")+4:]
	blog := inNamespace("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n"+webRecommend, "blog")
	objs := append(shopObjects(t, true), []byte(blog), []byte(inNamespace(deployment, "blog")))
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), objs...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	blogManifest := inNamespace(webManifest, "blog")
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{
		"clusters/shop/web.yaml": webManifest,
		"clusters/blog/web.yaml": blogManifest,
	})
	proxy := warningProxy(t, bed.Prometheus.URL, "blog")
	args := append(bedArgs(t, bed, repoURL, "--git-path", "clusters"), "--prometheus-url", proxy.URL)

	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("run() = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
	}
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}

	want := map[string]string{"app/cpu": "390m", "app/memory": "260Mi", "sidecar/cpu": "26m", "sidecar/memory": "65Mi"}
	shop := entry(t, rep, "shop", "web")
	for _, c := range shop.Containers {
		for _, r := range c.Resources {
			if key := c.Name + "/" + string(r.Resource); quantity(r.Recommended) != want[key] {
				t.Errorf("shop/web %s recommended %q, want %q", key, quantity(r.Recommended), want[key])
			}
		}
	}
	wantReason := "usage history unavailable: " + thanosWarning
	resources := 0
	for _, c := range entry(t, rep, "blog", "web").Containers {
		for _, r := range c.Resources {
			resources++
			if r.Recommended != nil || !strings.HasPrefix(r.Reason, wantReason) {
				t.Errorf("blog/web %s %s: recommended %q reason %q, want none and %q...", c.Name, r.Resource, quantity(r.Recommended), r.Reason, wantReason)
			}
		}
	}
	if resources != 4 {
		t.Errorf("blog/web reports %d container resources, want 4, each with its reason", resources)
	}
	if !strings.Contains(stderr.String(), "prometheus answered with warnings") {
		t.Errorf("the log does not say Prometheus answered with warnings:\n%s", stderr.String())
	}

	if rep.Git == nil || !rep.Git.Pushed {
		t.Fatalf("git = %+v, want shop's change pushed", rep.Git)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	pushedShop, _ := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/shop/web.yaml")
	assertRequests(t, pushedShop, want)
	if pushedBlog, _ := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/blog/web.yaml"); pushedBlog != blogManifest {
		t.Errorf("blog's file changed from a partial answer:\n%s", pushedBlog)
	}

	// The pull request and the dashboard are views of the plan: each says
	// why blog has no recommendation.
	for name, text := range map[string]string{"pull request": markdown.PullRequestBody(rep), "dashboard": markdown.DashboardBody(rep, "recommend-job/main")} {
		if !strings.Contains(text, "partial response: store 127.0.0.1:10901 unavailable") {
			t.Errorf("the %s does not say blog's answer was partial:\n%s", name, text)
		}
	}
	if !strings.Contains(markdown.PullRequestBody(rep), "### No recommendation") {
		t.Errorf("the pull request has no section No recommendation:\n%s", markdown.PullRequestBody(rep))
	}

	// doctor shows the first warning and fails blog's namespace.
	var doc, docErr bytes.Buffer
	run(ctx, append([]string{"doctor"}, args...), &doc, &docErr)
	for _, line := range []string{"first warning of the backend: " + thanosWarning, "FAIL  reading the history of namespace blog: partial response: "} {
		if !strings.Contains(doc.String(), line) {
			t.Errorf("doctor output lacks %q:\n%s", line, doc.String())
		}
	}
}
