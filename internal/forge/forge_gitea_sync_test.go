//go:build integration

package forge

import (
	"slices"
	"testing"
)

// TestGiteaSyncKeepsReviewers syncs a pull request whose owners change
// between runs, on a real Gitea: the reviewers are asked when it is
// opened, a new owner is asked on the next sync, and those asked before
// stay asked.
func TestGiteaSyncKeepsReviewers(t *testing.T) {
	b := newGiteaBed(t)
	b.user("ana")
	b.user("ben")
	b.branch("recommend-job/main")
	pr := NewPullRequest{Head: "recommend-job/main", Base: "main", Title: "Right-size", Body: "first\n", Reviewers: []string{"@ana"}}
	first, err := SyncPullRequest(t.Context(), b.forge, pr)
	if err != nil || first == nil {
		t.Fatalf("first sync: %+v, %v", first, err)
	}
	if got := b.reviewers(first.Number); !slices.Equal(got, []string{"ana"}) {
		t.Fatalf("reviewers after opening: %q, want ana", got)
	}
	pr.Body, pr.Reviewers = "second\n", []string{"@ben"}
	second, err := SyncPullRequest(t.Context(), b.forge, pr)
	if err != nil || second == nil || second.Number != first.Number {
		t.Fatalf("second sync: %+v, %v", second, err)
	}
	if got := b.reviewers(first.Number); !slices.Equal(got, []string{"ana", "ben"}) {
		t.Errorf("reviewers after the update: %q, want ana and ben", got)
	}
	// Unchanged, with an owner who cannot review: the pull request stands,
	// the error names the owner.
	pr.Reviewers = []string{"nobody-such"}
	third, err := SyncPullRequest(t.Context(), b.forge, pr)
	if third == nil || third.Number != first.Number || err == nil {
		t.Errorf("third sync: %+v, %v; want the pull request and an error naming nobody-such", third, err)
	}
}
