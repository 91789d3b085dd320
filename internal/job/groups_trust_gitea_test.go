//go:build integration

package job

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
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
	if g := namespaceGroup(t, second, "blog"); !strings.Contains(g.Held, "closed without merging by rita") || g.Git != nil {
		t.Fatalf("blog after rita closed its pull request: %+v, want it held, naming her", g)
	}

	// mallory's own pull request from blog's branch, closed after rita's
	// closing, releases nothing.
	forge("blog", "nothing to see")
	third := run("third", values)
	if g := namespaceGroup(t, third, "blog"); !strings.Contains(g.Held, "closed without merging by rita") || g.Git != nil {
		t.Errorf("blog after mallory closed a pull request of her own: %+v, want it held by rita's closing still", g)
	}
	if pr := b.openPRs(t)[groupBranch("blog")]; pr != nil {
		t.Errorf("blog has an open pull request #%d, want none while held", pr.Index)
	}

	// The job closes shop's pull request: nothing is left to change. Then
	// mallory opens one from shop's branch with the values line of the
	// job's, and closes it: shop's values come back and are proposed.
	fourth := run("fourth", map[string]string{"blog": "300m", "shop": "500m"})
	if g := namespaceGroup(t, fourth, "shop"); g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRClosed {
		t.Fatalf("shop in the fourth run: %+v, want its pull request closed", g)
	}
	forge("shop", shopBody)
	fifth := run("fifth", values)
	if g := namespaceGroup(t, fifth, "shop"); g.Held != "" || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
		t.Errorf("shop after mallory closed a copy of its pull request: %+v, want a new pull request, not a hold", g)
	}
}

// memoryRecord is a record kept in memory.
type memoryRecord struct{ pushed []gitops.Pushed }

func (r *memoryRecord) Load(context.Context) ([]gitops.Pushed, error) { return r.pushed, nil }

func (r *memoryRecord) Update(_ context.Context, change func([]gitops.Pushed) []gitops.Pushed) error {
	r.pushed = change(r.pushed)
	return nil
}

// TestWriteBackGiteaSquashMergeIsVerified pushes a group's change and
// records it, then a person squash-merges its pull request on a real
// Gitea: the squash commit's message is Gitea's, yet the record and the
// forge's word that the pull request merged the recorded commit find the
// change on main, at the squash commit.
func TestWriteBackGiteaSquashMergeIsVerified(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"shop"}, nil)
	cfg := b.cfg
	rec := &memoryRecord{}
	cfg.Record = rec
	r := newRun(cfg)
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	p := shopsPlan(map[string]string{"shop": "390m"})
	if err := writeBack(ctx, r, p, log); err != nil {
		t.Fatal(err)
	}
	if err := saveRecord(ctx, r, log); err != nil {
		t.Fatal(err)
	}
	pr := b.openPRs(t)[groupBranch("shop")]
	if pr == nil || len(rec.pushed) != 1 || rec.pushed[0].PullRequest != int(pr.Index) || rec.pushed[0].Commit != pr.Head.Sha {
		t.Fatalf("recorded %+v for pull request %+v, want its head commit and number", rec.pushed, pr)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ok, resp, err := b.sdk.MergePullRequest(b.srv.Username, "fleet", pr.Index, gitea.MergePullRequestOption{
			Style: gitea.MergeStyleSquash, Title: "Squashed by a person", Message: "no trailers here"})
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) || resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("squash #%d: %t, %v", pr.Index, ok, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	main, _, err := b.sdk.GetRepoBranch(b.srv.Username, "fleet", "main")
	if err != nil {
		t.Fatal(err)
	}
	merged, err := forge.ReadMerged(ctx, cfg.Git, cfg.Forge, rec.pushed, time.Now().Add(-time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Changes) != 1 || merged.Changes[0].Commit != main.Commit.ID || merged.Changes[0].Item != "shop/web-rec" || merged.Changes[0].To.String() != "390m" {
		t.Errorf("merged changes = %+v, want shop/web-rec's 390m at the squash commit %s", merged.Changes, main.Commit.ID)
	}
	if len(merged.Kept) != 1 || merged.Kept[0].MergedAs != main.Commit.ID {
		t.Errorf("kept %+v, want the recorded commit merged as %s", merged.Kept, main.Commit.ID)
	}
}
