//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestEndToEndHoldsComeFromWriters runs the job, grouped by team, on a
// real Gitea on which rita and mallory may write. rita closes the
// storefront team's pull request: the team is held, and the report names
// her. mallory then opens a pull request of her own from that team's
// branch and closes it, later than rita's closing: the team stays held,
// and no pull request is opened for it again.
func TestEndToEndHoldsComeFromWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := newHostileBed(t, ctx, "storefront", "payments", nil)
	as := func(name string) *gitea.Client {
		t.Helper()
		token, err := b.forge.AddCollaborator(ctx, "gitops", name, "write")
		if err != nil {
			t.Fatal(err)
		}
		c, err := gitea.NewClient(b.forge.APIURL(), gitea.SetToken(token), gitea.SetContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rita, mallory := as("rita"), as("mallory")
	closeAs := func(c *gitea.Client, number int64) {
		t.Helper()
		time.Sleep(1100 * time.Millisecond) // Gitea's times are in seconds
		closed := gitea.StateClosed
		if _, _, err := c.EditPullRequest(b.forge.Username, "gitops", number, gitea.EditPullRequestOption{State: &closed}); err != nil {
			t.Fatal(err)
		}
	}
	runHeld := func(name string) {
		t.Helper()
		code, rep, logs := b.run(t, ctx)
		if code != exitOK {
			t.Fatalf("%s run() = %d, want %d; stderr:\n%s", name, code, exitOK, logs)
		}
		g := group(t, rep, "team=storefront")
		if !strings.Contains(g.Held, "closed without merging by rita") || g.Git != nil {
			t.Errorf("%s run: storefront = %+v, want it held by rita's closing", name, g)
		}
	}

	code, rep, logs := b.run(t, ctx)
	if code != exitOK {
		t.Fatalf("first run() = %d, want %d; stderr:\n%s", code, exitOK, logs)
	}
	g := group(t, rep, "team=storefront")
	if g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
		t.Fatalf("storefront in the first run: %+v, want its pull request opened", g.Git)
	}
	branch := g.Git.Branch
	closeAs(rita, int64(g.Git.PullRequest.Number))
	runHeld("second")

	theirs, _, err := mallory.CreatePullRequest(b.forge.Username, "gitops", gitea.CreatePullRequestOption{
		Head: branch, Base: "main", Title: "Right-size storefront", Body: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	closeAs(mallory, theirs.Index)
	runHeld("third")
	if pr := b.openPRs(t)[branch]; pr != nil {
		t.Errorf("storefront's branch has open pull request #%d after mallory's closing, want none while held", pr.Index)
	}
}
