package forge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// prGetter answers Get from a map, and fails for the numbers in fail.
type prGetter struct {
	prs   map[int]*PullRequest
	fail  map[int]bool
	asked []int
}

func (g *prGetter) Get(_ context.Context, number int) (*PullRequest, error) {
	g.asked = append(g.asked, number)
	if g.fail[number] {
		return nil, errors.New("forge: 502 bad gateway")
	}
	pr, ok := g.prs[number]
	if !ok {
		return nil, errors.New("forge: 404 not found")
	}
	return pr, nil
}

// TestReadMergedTrustsOnlyTheRecord reads the job's changes from its
// record alone: a commit of the base branch counts when the record holds
// it or when the forge says the recorded pull request was merged with the
// recorded commit as its head; the trailers and co-author lines of anyone's
// commit count for nothing, and the record's changes win over a message's.
func TestReadMergedTrustsOnlyTheRecord(t *testing.T) {
	ctx := context.Background()
	url := testbedtest.FileRemote(t, map[string]string{"README.md": "hi\n"})
	opts := gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main"}
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	job := func(at time.Time) *object.Signature {
		return &object.Signature{Name: "recommend-job", Email: "Recommend-Job@example.com", When: at}
	}
	person := func(at time.Time) *object.Signature {
		return &object.Signature{Name: "someone", Email: "someone@example.com", When: at}
	}
	commit := func(msg string, author *object.Signature) string {
		t.Helper()
		f := filepath.Join(dir, "README.md")
		if err := os.WriteFile(f, []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("README.md"); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: author, Committer: author})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	// The job's own commit, pushed straight to main; its message says
	// something else than the record, which wins.
	mine := commit("Right-size\n\nRecommend-Job-Change: shop/web app memory 1Gi 1Mi\n", job(now.Add(-48*time.Hour)))
	// Anyone's commit that looks like the job's: its author, a co-author
	// line and trailers.
	commit("Right-size\n\nRecommend-Job-Change: victim/v-rec app memory 16Gi 512Mi\n"+
		"Recommend-Job-Correction: victim/v-rec app cpu 100m 4\n\nCo-authored-by: recommend-job <recommend-job@example.com>\n", job(now.Add(-30*time.Hour)))
	// A squash of pull request #3, whose head was the job's commit.
	squash := commit("Right-size (#3)\n", person(now.Add(-time.Hour)))
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}

	const (
		head3, head4, head5, head6, head7 = "3333333333333333333333333333333333333333", "4444444444444444444444444444444444444444",
			"5555555555555555555555555555555555555555", "6666666666666666666666666666666666666666", "7777777777777777777777777777777777777777"
		head8 = "8888888888888888888888888888888888888888"
	)
	pushed := []gitops.Pushed{
		{Commit: mine, Branch: "main", Time: now.Add(-48 * time.Hour), Changes: "Recommend-Job-Change: shop/web app memory 512Mi 256Mi\n"},
		{Commit: head3, Branch: "rj/shop", PullRequest: 3, Time: now.Add(-2 * time.Hour), Changes: "Recommend-Job-Correction: shop/api app cpu 250m 1\n"},
		{Commit: head4, Branch: "rj/pay", PullRequest: 4, Time: now.Add(-2 * time.Hour), Changes: "Recommend-Job-Change: pay/web app cpu 1 500m\n"},
		{Commit: head5, Branch: "rj/blog", PullRequest: 5, Time: now.Add(-2 * time.Hour), Changes: "Recommend-Job-Change: blog/web app cpu 1 500m\n"},
		{Commit: head6, Branch: "rj/docs", PullRequest: 6, Time: now.Add(-2 * time.Hour), Changes: "Recommend-Job-Change: docs/web app cpu 1 500m\n"},
		{Commit: head7, Branch: "rj/wiki", PullRequest: 7, Time: now.Add(-2 * time.Hour), Changes: "Recommend-Job-Change: wiki/web app cpu 1 500m\n"},
		// Retired: its pull request closed, kept for its branch's tip alone.
		{Commit: head8, Branch: "rj/old", PullRequest: 8, Time: now.Add(-2 * time.Hour)},
	}
	forge := &prGetter{prs: map[int]*PullRequest{
		3: {Number: 3, Merged: true, HeadCommit: head3, MergeCommit: squash, ClosedAt: now},
		4: {Number: 4, ClosedAt: now},                                                       // closed unmerged
		5: {Number: 5, Merged: true, HeadCommit: head6, MergeCommit: squash, ClosedAt: now}, // merged another head
		6: {Number: 6},                                                                      // open
	}, fail: map[int]bool{7: true}}

	got, err := ReadMerged(ctx, opts, forge, pushed, now.Add(-7*24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got.Changes {
		lines = append(lines, strings.Join([]string{c.Commit, c.Item, c.Container, string(c.Resource), c.From.String(), c.To.String()}, " "))
		if c.Time.IsZero() {
			t.Errorf("change %+v has no time", c)
		}
	}
	want := []string{squash + " shop/api app cpu 250m 1", mine + " shop/web app memory 512Mi 256Mi"}
	if !slices.Equal(lines, want) {
		t.Errorf("ReadMerged() =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if len(got.Changes) == 2 && !got.Changes[0].Correction {
		t.Errorf("the squashed correction = %+v, want it marked as one", got.Changes[0])
	}
	var kept []string
	for _, e := range got.Kept {
		kept = append(kept, e.Commit+" "+e.MergedAs)
	}
	wantKept := []string{mine + " ", head3 + " " + squash, head6 + " ", head7 + " ", head8 + " "}
	if !slices.Equal(kept, wantKept) {
		t.Errorf("kept =\n%s\nwant (the closed and the superseded ones dropped, the squash learnt)\n%s", strings.Join(kept, "\n"), strings.Join(wantKept, "\n"))
	}
	if len(got.Unresolved) != 1 || !strings.Contains(got.Unresolved[0].Error(), "pull request 7") {
		t.Errorf("unresolved = %v, want pull request 7's error", got.Unresolved)
	}
	if !slices.Equal(forge.asked, []int{3, 4, 5, 6, 7}) {
		t.Errorf("asked the forge for %v; want each pull request once, and none for a commit on the base branch or a retired one", forge.asked)
	}

	// A forge that fails is asked once: the rest wait for a later run.
	down := &prGetter{fail: map[int]bool{3: true, 4: true, 5: true, 6: true, 7: true}}
	got, err = ReadMerged(ctx, opts, down, pushed, now.Add(-7*24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(down.asked) != 1 || len(got.Unresolved) != 1 || len(got.Kept) != len(pushed) || len(got.Changes) != 1 {
		t.Errorf("with the forge down: asked %v, unresolved %v, kept %d, %d changes; want one question, one error, every commit kept and the one on main found",
			down.asked, got.Unresolved, len(got.Kept), len(got.Changes))
	}
}
