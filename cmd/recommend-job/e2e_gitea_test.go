//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// webBuffer50 is the web ResourceRecommend with a 50% CPU buffer instead of
// the default 30%, which changes the CPU recommendations.
var webBuffer50 = strings.Replace(webRecommend, "- resourceName: cpu\n", "- resourceName: cpu\n            bufferPercent: 50\n", 1)

// TestEndToEndGiteaPullRequest runs the command against the test bed and a
// real Gitea: the first run opens a pull request whose body lists the
// changes, a run after the ResourceRecommend changed updates that same
// pull request, a run with nothing new leaves it alone, and no second pull
// request is ever opened. The token reaches neither the logs nor the
// report.
func TestEndToEndGiteaPullRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	// The evidence in the body must not move between runs a minute apart,
	// or the third run would rightly rewrite it: the history lies inside
	// the job's 7-day window, clear of both its ends while the test runs,
	// and the CPU step is the scrape interval, so that each pod's samples
	// fill whole steps however the run's clock falls.
	end := now.Add(-10 * time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistoryFrom(end.Add(-7*24*time.Hour+time.Hour), end)})
	forge := testbedtest.Gitea(t)

	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL, err := forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}
	args := giteaRunArgs(t, bed, forge, repoURL, "--pr-group-by", "none", "--prometheus-step", "1m")
	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	openPRs := func() []*gitea.PullRequest {
		t.Helper()
		prs, _, err := sdk.ListRepoPullRequests(forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		return prs
	}
	// rows are the body's rows of the changed requests, as the report has
	// them; held-back values are listed elsewhere.
	rows := func(rep *plan.Plan) []string {
		t.Helper()
		var out []string
		for _, c := range entry(t, rep, "shop", "web").Containers {
			for _, r := range c.Resources {
				if r.Changed && r.Recommended != nil {
					out = append(out, fmt.Sprintf("| %s | %s | %s | %s |", c.Name, r.Resource, r.Current.String(), r.Recommended.String()))
				}
			}
		}
		if len(out) == 0 {
			t.Fatal("no changed request for shop/web in the report")
		}
		return out
	}
	bodyHas := func(body string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("pull request body lacks %q:\n%s", w, body)
			}
		}
	}
	noToken := func(rep *plan.Plan) {
		t.Helper()
		if pr := rep.Git.PullRequest; pr != nil && strings.Contains(pr.Body, forge.Token()) {
			t.Error("the pull request body holds the token")
		}
	}

	first := runJSON(t, ctx, args)
	noToken(first)
	pr := first.Git.PullRequest
	if !first.Git.Pushed || pr == nil || pr.Action != plan.PRCreated {
		t.Fatalf("first run git = %+v, want a push and a pull request created", first.Git)
	}
	prs := openPRs()
	if len(prs) != 1 || prs[0].Index != int64(pr.Number) || prs[0].HTMLURL != pr.URL {
		t.Fatalf("open pull requests = %d, want exactly #%d (%s)", len(prs), pr.Number, pr.URL)
	}
	bodyHas(prs[0].Body, append(rows(first), "| shop/greedy | Deployment web | `ResourceBuffersUnsupported` |", "<!-- recommend-job: sha256=")...)
	// A usage chart per changed container and resource, folded; the third
	// run below holds them to the same points a minute later.
	bodyHas(prs[0].Body, "<details><summary>Usage per day: p90 and max, with the current and proposed requests</summary>\n",
		"Usage of app, cpu in millicores, per day (UTC): bars are the max; lines, in order: p90, the current request ",
		"```mermaid\nxychart-beta\n    title \"app cpu\"\n    x-axis [\"", "    title \"app memory\"\n")

	// A bigger buffer: new values, the same pull request rewritten.
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(webBuffer50)); err != nil {
		t.Fatal(err)
	}
	second := runJSON(t, ctx, args)
	noToken(second)
	if strings.Join(rows(second), "") == strings.Join(rows(first), "") {
		t.Fatalf("the 50%% buffer changed no request: %v", rows(second))
	}
	if p := second.Git.PullRequest; !second.Git.Pushed || p == nil || p.Action != plan.PRUpdated || p.Number != pr.Number {
		t.Fatalf("second run git = %+v, want a push and #%d updated", second.Git, pr.Number)
	}
	prs = openPRs()
	if len(prs) != 1 {
		t.Fatalf("after the second run %d pull requests are open, want 1", len(prs))
	}
	bodyHas(prs[0].Body, rows(second)...)

	third := runJSON(t, ctx, args)
	if p := third.Git.PullRequest; third.Git.Pushed || p == nil || p.Action != plan.PRUnchanged || p.Number != pr.Number {
		t.Errorf("third run git = %+v, want no push and #%d unchanged", third.Git, pr.Number)
	}
	if n := len(openPRs()); n != 1 {
		t.Errorf("%d pull requests open after three runs, want 1", n)
	}
}

// giteaRunArgs are the arguments of a run on bed that pushes the manifests
// under clusters/ of the repository at repoURL on forge and opens its pull
// requests there, reporting JSON, followed by extra. The forge's token is
// in a file and in RECOMMEND_GIT_TOKEN, whose value runJSON checks the
// logs do not hold.
func giteaRunArgs(t *testing.T, bed *testbed.Bed, forge *testbed.Gitea, repoURL string, extra ...string) []string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(forge.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RECOMMEND_GIT_TOKEN", forge.Token())
	return append([]string{
		"--kubeconfig", bed.APIServer.KubeconfigPath,
		"--prometheus-url", bed.Prometheus.URL,
		"--git-url", repoURL,
		"--git-username", forge.Username,
		"--git-path", "clusters",
		"--forge", "gitea",
		"--forge-api-url", forge.APIURL(),
		"--forge-token-file", tokenFile,
		"--output", "json",
	}, extra...)
}

// TestEndToEndGiteaGroupInBranchTemplate runs the command grouped by
// namespace with a branch template that places {{.Group}}: the group's
// pull request comes from the branch the template names, after the push
// branch and a "-pr/", and a second run finds it again as its own and
// leaves it alone instead of closing it or opening another.
func TestEndToEndGiteaGroupInBranchTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	end := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistoryFrom(end.Add(-7*24*time.Hour+time.Hour), end)})
	forge := testbedtest.Gitea(t)
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL, err := forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}
	const tmpl = "recommend-job/{{.Base}}{{with .Group}}-pr/{{.}}{{end}}"
	args := giteaRunArgs(t, bed, forge, repoURL, "--pr-group-by", "namespace", "--git-branch-template", tmpl, "--prometheus-step", "1m")
	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	// git-path names the cluster, whose name the branch carries.
	want := gitops.Options{PushBranch: "recommend-job/main", GroupPrefix: "recommend-job/main-pr/", Cluster: "clusters"}.GroupBranch("namespace/shop")
	if !strings.HasPrefix(want, "recommend-job/main-pr/clusters-namespace-shop-") {
		t.Fatalf("the group's branch would be %s", want)
	}
	for run := 1; run <= 2; run++ {
		rep := runJSON(t, ctx, args)
		var shop *plan.Group
		for i := range rep.Groups {
			if rep.Groups[i].Name == "namespace/shop" {
				shop = &rep.Groups[i]
			}
		}
		if shop == nil || shop.Git == nil || shop.Git.PullRequest == nil {
			t.Fatalf("run %d: groups %+v, want namespace/shop with a pull request", run, rep.Groups)
		}
		wantAction := plan.PRCreated
		if run == 2 {
			wantAction = plan.PRUnchanged
		}
		if shop.Git.Branch != want || shop.Git.PullRequest.Action != wantAction {
			t.Errorf("run %d: namespace/shop's git = %+v, pull request %+v; want branch %s, pull request %s", run, shop.Git, shop.Git.PullRequest, want, wantAction)
		}
		prs, _, err := sdk.ListRepoPullRequests(forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		if len(prs) != 1 || prs[0].Head.Ref != want {
			t.Errorf("run %d: %d open pull requests, want one from %s", run, len(prs), want)
		}
	}
}
