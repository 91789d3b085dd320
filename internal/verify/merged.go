package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// LookBack is how far back the job's merged changes are read, at the
// least: as long as a merged correction keeps its container's
// recommendations at or above it (Holds), which is longer than a window
// of history, whose OOM kills alone would keep them up only while they
// are in it. A watch period and a window of history longer than it are
// read back instead.
const LookBack = 30 * 24 * time.Hour

// Recorder loads the job's record of the commits it pushed, the only
// evidence of its changes; record.Store is one.
type Recorder interface {
	Load(ctx context.Context) ([]gitops.Pushed, error)
}

// Merged are the job's merged changes that a run acts on, and doctor
// shows.
type Merged struct {
	// Pushed is the job's record as loaded.
	Pushed []gitops.Pushed
	// Read is what forge.ReadMerged found of Pushed on the base branch
	// since Since.
	Read forge.Merged
	// Latest are the newest change of each container's resource in
	// Read.Changes (Latest), newest first: those to check.
	Latest []gitops.RecordedChange
	// Since is how far back the base branch was read: LookBack, or a
	// watch period and a window of history when longer.
	Since time.Time
	// WatchFrom is the oldest time of a change that is watched: a change
	// committed before it is past the watch period and the history
	// window, and only a correction among them still Holds.
	WatchFrom time.Time
}

// Watched reports whether c is recent enough to be watched: committed
// within a watch period and a window of history.
func (m Merged) Watched(c gitops.RecordedChange) bool {
	return !c.Time.Before(m.WatchFrom)
}

// Holds reports whether c, a merged change, keeps its container's
// recommendations at or above its value at now: a correction does, for
// LookBack after it was committed.
func Holds(c gitops.RecordedChange, now time.Time) bool {
	return c.Correction && now.Sub(c.Time) < LookBack
}

// ReadMerged loads the job's record from rec, reads which of its commits
// reached the base branch of the repository git describes (asking prs, the
// forge, about squashed and rebased pull requests; nil when the job pushes
// directly or has no forge), and returns the merged changes to check at
// now with the thresholds th. It is what a run and doctor both read:
// neither reads the merged changes otherwise.
func ReadMerged(ctx context.Context, rec Recorder, git gitops.Options, prs forge.PullRequestGetter, th Thresholds, now time.Time) (Merged, error) {
	watch := th.Period + usage.DefaultWindow
	m := Merged{Since: now.Add(-max(LookBack, watch)), WatchFrom: now.Add(-watch)}
	var err error
	if m.Pushed, err = rec.Load(ctx); err != nil {
		return Merged{}, fmt.Errorf("reading the job's record: %w", err)
	}
	if git.Direct() {
		prs = nil
	}
	if m.Read, err = forge.ReadMerged(ctx, git, prs, m.Pushed, m.Since, 0); err != nil {
		return Merged{}, fmt.Errorf("reading the merged changes: %w", err)
	}
	m.Latest = Latest(m.Read.Changes)
	return m, nil
}
