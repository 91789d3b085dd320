//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndGiteaChartsInChromium runs the command against the test bed
// and a Gitea with the test bed's stand-in frontend, as make demo does,
// and loads the pull request it opened in headless Chromium: each
// container whose requests change has a chart in the body, and every
// chart of the body is an xychart's SVG on the page, with no error shown.
func TestEndToEndGiteaChartsInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	chromium, err := testbed.EnsureChromium(ctx)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	end := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistoryFrom(end.Add(-7*24*time.Hour+time.Hour), end)})
	forge := testbedtest.Gitea(t, testbed.GiteaFrontend())
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL, err := forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}
	rep := runJSON(t, ctx, giteaRunArgs(t, bed, forge, repoURL, "--pr-group-by", "none", "--prometheus-step", "1m"))
	if rep.Git.PullRequest == nil {
		t.Fatalf("git = %+v, want a pull request", rep.Git)
	}
	changed := 0
	for _, c := range entry(t, rep, "shop", "web").Containers {
		for _, r := range c.Resources {
			if r.Changed && r.Recommended != nil {
				changed++
				break
			}
		}
	}
	if changed == 0 {
		t.Fatal("no container of shop/web changes")
	}

	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	pr, _, err := sdk.GetPullRequest(forge.Username, "gitops", int64(rep.Git.PullRequest.Number))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Count(pr.Body, "```mermaid")
	if blocks < changed {
		t.Errorf("the body has %d mermaid blocks for %d changed containers of shop/web, want a chart each", blocks, changed)
	}
	dom, err := chromium.DOM(ctx, pr.HTMLURL, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	page := testbed.ReadMermaidPage(dom)
	t.Logf("%d mermaid blocks in the body; the page shows %+v", blocks, page)
	if page.Rendered != blocks || page.XYCharts != blocks || page.Pending != 0 {
		t.Errorf("the page shows %d rendered blocks, %d of them xycharts, and %d as source; want all %d rendered as xycharts",
			page.Rendered, page.XYCharts, page.Pending, blocks)
	}
	if len(page.Errors) != 0 || strings.Contains(dom, "Syntax error") {
		t.Errorf("the page shows Mermaid errors: %q", page.Errors)
	}
}
