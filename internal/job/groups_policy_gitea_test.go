//go:build integration

package job

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestWriteBackGiteaGroupPolicies runs grouped write-backs against a real
// Gitea with pr-limit 2 and the dashboard: the two groups that save the
// most open pull requests and the third waits; a person closing one
// holds that group while its values stay, and its slot goes to the one
// that waited; once pr-closed-hold passes, or its values move past the
// threshold, it is no longer held but waits on the limit. The dashboard
// issue is created once and kept up to date, and a second one is closed.
// Groups the job's own closing left without changes free their slots in
// the same run, and are not held once their values come back; pr-per-run
// bounds the pull requests a run opens.
func TestWriteBackGiteaGroupPolicies(t *testing.T) {
	b := newGroupsBed(t, []string{"blog", "pay", "shop"}, nil)
	sdk, srv, cfg := b.sdk, b.srv, b.cfg
	cfg.PullRequests = PullRequestPolicy{Limit: 2, ClosedHold: 720 * time.Hour, Dashboard: true}
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	branch := groupBranch
	openPRs := func() map[string]*gitea.PullRequest { return b.openPRs(t) }
	issues := func() []*gitea.Issue {
		t.Helper()
		list, _, err := sdk.ListRepoIssues(srv.Username, "fleet", gitea.ListIssueOption{State: gitea.StateOpen, Type: gitea.IssueTypeIssue})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	// blog saves 200m, pay 150m, shop 110m.
	first := shopsPlan(map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, cfg, first, log); err != nil {
		t.Fatalf("first run: %v", err)
	}
	prs := openPRs()
	if len(prs) != 2 || prs[branch("blog")] == nil || prs[branch("pay")] == nil {
		t.Fatalf("first run opened %v, want blog's and pay's", prs)
	}
	if g := namespaceGroup(t, first, "shop"); g.Waiting != "pr-limit 2 reached" || g.Git != nil {
		t.Errorf("shop: %+v, want it waiting on pr-limit", g)
	}
	dash := issues()
	if len(dash) != 1 || !strings.Contains(dash[0].Body, "| namespace/shop | 0.11 | pr-limit 2 reached |") || first.Dashboard == nil || first.Dashboard.Action != plan.PRCreated {
		t.Fatalf("dashboard after the first run: %d issues, plan %+v", len(dash), first.Dashboard)
	}

	// A person closes blog's pull request without merging it.
	blogPR := prs[branch("blog")].Index
	closed := gitea.StateClosed
	if _, _, err := sdk.EditPullRequest(srv.Username, "fleet", blogPR, gitea.EditPullRequestOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	second := shopsPlan(map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, cfg, second, log); err != nil {
		t.Fatalf("second run: %v", err)
	}
	prs = openPRs()
	if len(prs) != 2 || prs[branch("shop")] == nil || prs[branch("blog")] != nil {
		t.Fatalf("second run left open %v, want pay's and shop's", prs)
	}
	if g := namespaceGroup(t, second, "blog"); !strings.Contains(g.Held, "closed without merging") || g.Git != nil {
		t.Errorf("blog: %+v, want it held by its closed pull request", g)
	}
	dash = issues()
	if len(dash) != 1 || !strings.Contains(dash[0].Body, "### Held by a closed pull request") || !strings.Contains(dash[0].Body, "| namespace/blog | pull request") ||
		second.Dashboard == nil || second.Dashboard.Action != plan.PRUpdated || int64(second.Dashboard.Number) != dash[0].Index {
		t.Fatalf("dashboard after the second run: %d issues, plan %+v, body:\n%s", len(dash), second.Dashboard, dash[0].Body)
	}

	// Once pr-closed-hold has passed, the closing holds no more, values
	// unmoved: blog waits on the limit alone.
	expired := cfg
	expired.PullRequests.ClosedHold = time.Millisecond
	afterHold := shopsPlan(map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, expired, afterHold, log); err != nil {
		t.Fatalf("run after the hold: %v", err)
	}
	if g := namespaceGroup(t, afterHold, "blog"); g.Held != "" || g.Waiting != "pr-limit 2 reached" {
		t.Errorf("blog after pr-closed-hold passed: %+v, want it waiting on the limit", g)
	}

	// blog's value moves past the threshold (300m to 250m): no longer
	// held, but the limit is reached.
	third := shopsPlan(map[string]string{"blog": "250m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, cfg, third, log); err != nil {
		t.Fatalf("third run: %v", err)
	}
	if g := namespaceGroup(t, third, "blog"); g.Held != "" || g.Waiting != "pr-limit 2 reached" {
		t.Errorf("blog after its value moved: %+v, want it waiting on the limit", g)
	}
	if n := len(issues()); n != 1 {
		t.Errorf("%d dashboard issues, want one", n)
	}

	// The same run again: nothing moves, and the dashboard is left alone;
	// a copy of it (two runs that raced) is closed.
	dash = issues()
	if _, _, err := sdk.CreateIssue(srv.Username, "fleet", gitea.CreateIssueOption{Title: dash[0].Title, Body: dash[0].Body}); err != nil {
		t.Fatal(err)
	}
	fourth := shopsPlan(map[string]string{"blog": "250m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, cfg, fourth, log); err != nil {
		t.Fatalf("fourth run: %v", err)
	}
	if fourth.Dashboard == nil || fourth.Dashboard.Action != plan.PRUnchanged || int64(fourth.Dashboard.Number) != dash[0].Index {
		t.Errorf("fourth run dashboard %+v, want #%d unchanged", fourth.Dashboard, dash[0].Index)
	}
	if after := issues(); len(after) != 1 || after[0].Index != dash[0].Index {
		t.Errorf("after the fourth run %d dashboard issues are open, want #%d alone", len(after), dash[0].Index)
	}

	// pay and shop have nothing left to change: the job closes their pull
	// requests, saying why, and blog takes a freed slot in the same run.
	fifth := shopsPlan(map[string]string{"blog": "250m", "pay": "500m", "shop": "500m"})
	if err := writeBackPlan(t, cfg, fifth, log); err != nil {
		t.Fatalf("fifth run: %v", err)
	}
	prs = openPRs()
	if len(prs) != 1 || prs[branch("blog")] == nil {
		t.Fatalf("fifth run left open %v, want blog's alone; groups %+v", prs, fifth.Groups)
	}
	if g := namespaceGroup(t, fifth, "blog"); g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
		t.Errorf("blog in the fifth run: %+v, want its pull request opened in the slot pay's and shop's left", g)
	}
	for _, ns := range []string{"pay", "shop"} {
		g := namespaceGroup(t, fifth, ns)
		if g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRClosed {
			t.Fatalf("%s in the fifth run: %+v, want its pull request closed", ns, g)
		}
		pr, _, err := sdk.GetPullRequest(srv.Username, "fleet", int64(g.Git.PullRequest.Number))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(pr.Body, "**Closed by recommend-job:** nothing in it is left to change") {
			t.Errorf("%s's closed pull request does not say why the job closed it:\n%s", ns, pr.Body)
		}
	}

	// Their values come back, without pr-limit and with pr-per-run 1. A
	// pull request the job closed holds nothing: pay, which saves more,
	// opens one, and shop waits on pr-per-run, not on a closed pull request.
	cfg.PullRequests = PullRequestPolicy{PerRun: 1, ClosedHold: 720 * time.Hour, Dashboard: true}
	sixth := shopsPlan(map[string]string{"blog": "250m", "pay": "350m", "shop": "390m"})
	if err := writeBackPlan(t, cfg, sixth, log); err != nil {
		t.Fatalf("sixth run: %v", err)
	}
	prs = openPRs()
	if len(prs) != 2 || prs[branch("blog")] == nil || prs[branch("pay")] == nil {
		t.Fatalf("sixth run left open %v, want blog's and pay's", prs)
	}
	if g := namespaceGroup(t, sixth, "pay"); g.Held != "" || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
		t.Errorf("pay in the sixth run: %+v, want a new pull request", g)
	}
	if g := namespaceGroup(t, sixth, "shop"); g.Held != "" || g.Waiting != "pr-per-run 1 reached" || g.Git != nil {
		t.Errorf("shop in the sixth run: %+v, want it waiting on pr-per-run", g)
	}
}

// writeBackPlan runs writeBack on p, as Run would.
func writeBackPlan(t *testing.T, cfg Config, p *plan.Plan, log *slog.Logger) error {
	t.Helper()
	return writeBack(t.Context(), newRun(cfg), p, log)
}
