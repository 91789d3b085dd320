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

// TestWriteBackGiteaHoldsOnlyTheJobsPullRequests runs grouped write-backs
// against a real Gitea on which two other people may write: rita, a
// reviewer, and mallory, who copies what she sees. A pull request of the
// job's that rita closes holds its group; a pull request mallory opens
// from the group's branch and closes neither releases that hold nor,
// carrying the values line of one of the job's pull requests, holds
// another group.
func TestWriteBackGiteaHoldsOnlyTheJobsPullRequests(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"blog", "shop"}, nil)
	cfg := b.cfg
	cfg.PullRequests = PullRequestPolicy{ClosedHold: 720 * time.Hour}
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	owner := b.srv.Username
	person := func(name string) *gitea.Client {
		t.Helper()
		token, err := b.srv.AddCollaborator(ctx, "fleet", name, "write")
		if err != nil {
			t.Fatal(err)
		}
		c, err := gitea.NewClient(b.srv.APIURL(), gitea.SetToken(token), gitea.SetContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rita, mallory := person("rita"), person("mallory")
	closePR := func(c *gitea.Client, number int64) {
		t.Helper()
		// Gitea keeps times in seconds: each close comes after the last.
		time.Sleep(1100 * time.Millisecond)
		closed := gitea.StateClosed
		if _, _, err := c.EditPullRequest(owner, "fleet", number, gitea.EditPullRequestOption{State: &closed}); err != nil {
			t.Fatal(err)
		}
	}
	// mallory opens a pull request of her own from a group's branch,
	// with body, and closes it.
	forge := func(ns, body string) {
		t.Helper()
		pr, _, err := mallory.CreatePullRequest(owner, "fleet", gitea.CreatePullRequestOption{
			Head: groupBranch(ns), Base: "main", Title: "Right-size " + ns, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		closePR(mallory, pr.Index)
	}
	group := func(p *plan.Plan, ns string) plan.Group {
		t.Helper()
		for _, g := range p.Groups {
			if g.Name == "namespace/"+ns {
				return g
			}
		}
		t.Fatalf("no group %s in %+v", ns, p.Groups)
		return plan.Group{}
	}
	run := func(name string, cpus map[string]string) *plan.Plan {
		t.Helper()
		p := shopsPlan(cpus)
		if err := writeBackPlan(t, cfg, p, log); err != nil {
			t.Fatalf("%s run: %v", name, err)
		}
		return p
	}

	values := map[string]string{"blog": "300m", "shop": "390m"}
	run("first", values)
	prs := b.openPRs(t)
	if len(prs) != 2 {
		t.Fatalf("first run opened %v, want blog's and shop's", prs)
	}
	shopBody := prs[groupBranch("shop")].Body
	if !strings.Contains(shopBody, "<!-- recommend-job: proposed ") {
		t.Fatalf("shop's pull request records no values:\n%s", shopBody)
	}

	// rita, who may write, closes blog's pull request: blog is held.
	closePR(rita, prs[groupBranch("blog")].Index)
	second := run("second", values)
	if g := group(second, "blog"); !strings.Contains(g.Held, "closed without merging by rita") || g.Git != nil {
		t.Fatalf("blog after rita closed its pull request: %+v, want it held, naming her", g)
	}

	// mallory's own pull request from blog's branch, closed after rita's
	// closing, releases nothing.
	forge("blog", "nothing to see")
	third := run("third", values)
	if g := group(third, "blog"); !strings.Contains(g.Held, "closed without merging by rita") || g.Git != nil {
		t.Errorf("blog after mallory closed a pull request of her own: %+v, want it held by rita's closing still", g)
	}
	if pr := b.openPRs(t)[groupBranch("blog")]; pr != nil {
		t.Errorf("blog has an open pull request #%d, want none while held", pr.Index)
	}

	// The job closes shop's pull request: nothing is left to change. Then
	// mallory opens one from shop's branch with the values line of the
	// job's, and closes it: shop's values come back and are proposed.
	fourth := run("fourth", map[string]string{"blog": "300m", "shop": "500m"})
	if g := group(fourth, "shop"); g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRClosed {
		t.Fatalf("shop in the fourth run: %+v, want its pull request closed", g)
	}
	forge("shop", shopBody)
	fifth := run("fifth", values)
	if g := group(fifth, "shop"); g.Held != "" || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
		t.Errorf("shop after mallory closed a copy of its pull request: %+v, want a new pull request, not a hold", g)
	}
}
