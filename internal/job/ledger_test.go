package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
)

// TestLearntRetiresWhatNeverMerges checks what a verification leaves in
// the record: a commit that may still merge stays as it was, one whose
// pull request closed stays retired, without its changes, so that the
// job still knows its branch's tip, and one a newer push of the same
// pull request replaced goes.
func TestLearntRetiresWhatNeverMerges(t *testing.T) {
	now := time.Now()
	open := gitops.Pushed{Commit: "open", Branch: "b1", PullRequest: 1, Time: now, Changes: "x"}
	older := gitops.Pushed{Commit: "older", Branch: "b1", PullRequest: 1, Time: now.Add(-time.Hour), Changes: "x"}
	closed := gitops.Pushed{Commit: "closed", Branch: "b2", PullRequest: 2, Time: now, Changes: "x"}
	l := &ledger{}
	l.learnt([]gitops.Pushed{open, older, closed}, forge.Merged{Kept: []gitops.Pushed{open, older}})
	got := map[string]string{}
	for _, e := range l.merge([]gitops.Pushed{open, older, closed}, now) {
		got[e.Commit] = e.Changes
	}
	changes, kept := got["closed"]
	if len(got) != 2 || got["open"] != "x" || !kept || changes != "" {
		t.Errorf("record after the verification %v, want open with its changes and closed without", got)
	}
}

// failedLoad is a record that cannot be read.
type failedLoad struct{ loadedRecord }

func (failedLoad) Load(context.Context) ([]gitops.Pushed, error) {
	return nil, errors.New("apiserver down")
}

// TestKnowTips checks the judge of a branch's tip the run's checkouts
// get: a commit the record holds on that branch, or one the run pushed
// there, is known; the same commit on another branch and another commit
// are not; without a record there is no judge, and a record that cannot
// be read stops the write-back before any checkout.
func TestKnowTips(t *testing.T) {
	rec := loadedRecord{pushed: []gitops.Pushed{{Commit: "c1", Branch: "b1", Changes: "x"}, {Commit: "c0", Branch: "b0"}}}
	r := newRun(Config{Record: rec})
	if err := knowTips(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	r.ledger.added = append(r.ledger.added, gitops.Pushed{Commit: "c2", Branch: "b2"})
	known := r.Git.Known
	for _, tt := range []struct {
		branch, commit string
		want           bool
	}{
		{"b1", "c1", true}, {"b0", "c0", true}, {"b2", "c2", true},
		{"b2", "c1", false}, {"b1", "c2", false}, {"b1", "c3", false},
	} {
		if got := known(tt.branch, tt.commit); got != tt.want {
			t.Errorf("Known(%s, %s) = %t, want %t", tt.branch, tt.commit, got, tt.want)
		}
	}
	none := newRun(Config{})
	if err := knowTips(t.Context(), none); err != nil || none.Git.Known != nil {
		t.Errorf("without a record: %v, a judge %t; want none", err, none.Git.Known != nil)
	}
	if err := knowTips(t.Context(), newRun(Config{Record: failedLoad{}})); err == nil || !strings.Contains(err.Error(), "apiserver down") {
		t.Errorf("an unreadable record: %v, want the error", err)
	}
}
