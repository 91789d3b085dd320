//go:build integration

package job

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestWriteBackGiteaPullRequest runs the write-back against a real Gitea:
// the first run opens a pull request listing the change, a run with a new
// value updates that same pull request, a run with nothing new leaves it
// alone, and a run with nothing to change closes it when told to. There is
// never more than one open.
func TestWriteBackGiteaPullRequest(t *testing.T) {
	ctx := t.Context()
	srv := testbedtest.Gitea(t)
	url, err := srv.CreateRepo(ctx, "fleet", map[string]string{"clusters/prod/web.yaml": webDeployment})
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := gitea.NewClient(srv.APIURL(), gitea.SetToken(srv.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	label, _, err := sdk.CreateLabel(srv.Username, "fleet", gitea.CreateLabelOption{Name: "resources", Color: "#00aabb"})
	if err != nil {
		t.Fatal(err)
	}

	logs := &bytes.Buffer{}
	f := &fixture{url: url, auth: &githttp.BasicAuth{Username: srv.Username, Password: srv.Password()}, logs: logs,
		log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	cfg := Config{Path: "clusters", Git: gitops.Options{
		URL: url, BaseBranch: "main", PushBranch: "recommend-job/main",
		Username: srv.Username, Token: srv.Token(),
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com",
	}, PullRequests: PullRequestPolicy{Labels: []string{"resources"}}}
	cfg.Forge = newForge(t, forge.Options{Kind: forge.KindGitea, APIURL: srv.APIURL(), Token: srv.Token()}, cfg.Git)
	openPRs := func() []*gitea.PullRequest {
		t.Helper()
		prs, _, err := sdk.ListRepoPullRequests(srv.Username, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		return prs
	}

	first, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	pr := first.Git.PullRequest
	if pr == nil || pr.Action != plan.PRCreated || pr.Number == 0 {
		t.Fatalf("first run pull request = %+v, want one created", pr)
	}
	var table bytes.Buffer
	if err := report.Write(&table, first, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pull request #%d created: %s\n", pr.Number, pr.URL); !strings.HasSuffix(table.String(), want) {
		t.Errorf("table output ends\n%s\nwant it to end with %q", table.String(), want)
	}
	prs := openPRs()
	if len(prs) != 1 || prs[0].Index != int64(pr.Number) {
		t.Fatalf("open pull requests = %d, want exactly #%d", len(prs), pr.Number)
	}
	// 390m is 500m - 110m: -22.0%; the evidence is folded below the table.
	if body := prs[0].Body; !strings.Contains(body, "| app | cpu | 500m | 390m | -22.0% |") ||
		!strings.Contains(body, "| app | cpu | p90, half-life -, 2016 samples over - of 168h0m0s | - | +10% |") {
		t.Errorf("pull request body lacks the change row or its evidence:\n%s", body)
	}
	if len(prs[0].Labels) != 1 || prs[0].Labels[0].ID != label.ID {
		t.Errorf("pull request labels = %v, want resources", prs[0].Labels)
	}
	if prs[0].Head.Ref != "recommend-job/main" || prs[0].Base.Ref != "main" {
		t.Errorf("pull request %s -> %s, want recommend-job/main -> main", prs[0].Head.Ref, prs[0].Base.Ref)
	}

	second, err := f.run(t, cfg, "420m")
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if p := second.Git.PullRequest; !second.Git.Pushed || p == nil || p.Action != plan.PRUpdated || p.Number != pr.Number {
		t.Fatalf("second run git = %+v, pull request %+v; want a push and #%d updated", second.Git, p, pr.Number)
	}
	prs = openPRs()
	// 420m is 500m - 80m: -16.0%.
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "| app | cpu | 500m | 420m | -16.0% |") {
		t.Errorf("after the second run: %d open, body:\n%s\nwant one, listing 420m", len(prs), prs[0].Body)
	}

	third, err := f.run(t, cfg, "420m")
	if err != nil {
		t.Fatalf("third run: %v", err)
	}
	if p := third.Git.PullRequest; third.Git.Pushed || p == nil || p.Action != plan.PRUnchanged || p.Number != pr.Number {
		t.Errorf("third run git = %+v, pull request %+v; want no push and #%d unchanged", third.Git, p, pr.Number)
	}

	// The recommendation now equals main's value: nothing to change, and
	// with CloseWhenEmpty the pull request is closed.
	cfg.PullRequests.CloseWhenEmpty = true
	fourth, err := f.run(t, cfg, "500m")
	if err != nil {
		t.Fatalf("fourth run: %v", err)
	}
	if p := fourth.Git.PullRequest; p == nil || p.Action != plan.PRClosed || p.Number != pr.Number {
		t.Errorf("fourth run pull request = %+v, want #%d closed", p, pr.Number)
	}
	if n := len(openPRs()); n != 0 {
		t.Errorf("%d pull requests open after closing, want 0", n)
	}
	if strings.Contains(logs.String(), srv.Token()) || strings.Contains(logs.String(), srv.Password()) {
		t.Errorf("the logs hold a gitea credential:\n%s", logs)
	}
}
