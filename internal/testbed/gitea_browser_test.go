//go:build integration

package testbed_test

import (
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// xyChart is a chart like those of the job's pull requests: daily p90
// and max of usage as bars and a line, the current and proposed request
// as lines.
const xyChart = "```mermaid\n" + `xychart-beta
  title "app: CPU, cores"
  x-axis ["11-20", "11-21", "11-22", "11-23", "11-24", "11-25", "11-26"]
  y-axis "cores" 0 --> 2
  bar [0.42, 0.47, 0.51, 0.44, 0.62, 0.48, 0.45]
  line [0.61, 0.66, 0.72, 0.58, 0.95, 0.64, 0.60]
  line [1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5]
  line [0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
` + "```\n"

// brokenChart is a block Mermaid refuses.
const brokenChart = "```mermaid\nxychart-beta\n  bar [0.4, oops\n```\n"

// The stand-in frontend renders each mermaid block of a pull request's
// body to an SVG in headless Chromium, the one in a closed <details> too,
// and shows an error for a block Mermaid refuses.
func TestGiteaPullRequestRendersMermaidInChromium(t *testing.T) {
	ctx := t.Context()
	chromium, err := testbed.EnsureChromium(ctx)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	g := testbedtest.Gitea(t, testbed.GiteaFrontend())
	if _, err := g.CreateRepo(ctx, "charts", map[string]string{"apps/web.yaml": "cpu: 1\n"}); err != nil {
		t.Fatal(err)
	}
	client, err := gitea.NewClient(g.APIURL(), gitea.SetToken(g.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name         string
		body         string
		wantRendered int
		wantErrors   int
	}{
		{"charts", "Usage of the window:\n\n" + xyChart + "\n<details><summary>sidecar</summary>\n\n" + xyChart + "\n</details>\n", 2, 0},
		{"broken", xyChart + "\n" + brokenChart, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			branch := "rightsizing-" + tt.name
			if _, _, err := client.CreateFile(g.Username, "charts", "apps/"+tt.name+".yaml", gitea.CreateFileOptions{
				FileOptions: gitea.FileOptions{BranchName: "main", NewBranchName: branch, Message: "rightsize " + tt.name},
				Content:     "Y3B1OiAwLjUK", // cpu: 0.5
			}); err != nil {
				t.Fatalf("commit on %s: %v", branch, err)
			}
			pr, _, err := client.CreatePullRequest(g.Username, "charts", gitea.CreatePullRequestOption{
				Head: branch, Base: "main", Title: "Rightsize " + tt.name, Body: tt.body,
			})
			if err != nil {
				t.Fatalf("open pull request: %v", err)
			}

			dom, err := chromium.DOM(ctx, pr.HTMLURL, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			page := testbed.ReadMermaidPage(dom)
			t.Logf("%s: %+v", pr.HTMLURL, page)
			if page.Rendered != tt.wantRendered || page.XYCharts != tt.wantRendered {
				t.Errorf("rendered %d blocks, %d of them xycharts; want %d of %d blocks", page.Rendered, page.XYCharts, tt.wantRendered, tt.wantRendered+tt.wantErrors)
			}
			if len(page.Errors) != tt.wantErrors {
				t.Errorf("errors shown = %q, want %d", page.Errors, tt.wantErrors)
			}
			if got := strings.Count(dom, "Syntax error"); got != 0 {
				t.Errorf("page shows Mermaid's %q %d times", "Syntax error", got)
			}
			// A refused block keeps its source under the error; a rendered one
			// leaves none.
			if page.Pending != tt.wantErrors {
				t.Errorf("%d blocks still shown as source, want %d", page.Pending, tt.wantErrors)
			}
		})
	}
}
