package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/recommend-job/recommend-job/internal/corrections"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/record"
)

// recordKept is how long the record keeps a commit: as long as a merged
// correction holds recommendations up, plus a window of history and a
// watch period for a change merged late.
const recordKept = corrections.Stay + 14*24*time.Hour

// recordTimeout bounds the record's write at the end of a run, which
// goes on after the run's deadline: a push that went out must be
// recorded, or it is never verified.
const recordTimeout = 20 * time.Second

// ledger is what a run learns of the job's record (which commits were
// merged as what, which never will be) and what it adds to it (the
// commits it pushed).
type ledger struct {
	mu sync.Mutex
	// checked are the commits the verification looked at, kept those of
	// them still worth keeping.
	checked []string
	kept    []gitops.Pushed
	added   []gitops.Pushed
}

// learnt notes what a verification found of the recorded commits
// pushed: those still worth keeping, but for the commits of a pull
// request a newer one replaced (see record.Superseded), which the record
// would otherwise keep for weeks, one for each push. When the forge did
// not answer for every pull request, none is known to be replaced.
//
// A commit that will never be merged (its pull request closed) is kept
// retired, without its changes, which nothing verifies: while the record
// keeps it, the job knows the branch that holds it for its own, and may
// push to it again (gitops.Options.Known).
func (l *ledger) learnt(pushed []gitops.Pushed, merged forge.Merged) {
	kept := merged.Kept
	if len(merged.Unresolved) == 0 {
		kept = record.Superseded(kept, merged.Changes)
	}
	resolved := map[string]bool{}
	for _, e := range merged.Kept {
		resolved[e.Commit] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range pushed {
		l.checked = append(l.checked, e.Commit)
		if !resolved[e.Commit] {
			e.Changes = ""
			kept = append(kept, e)
		}
	}
	l.kept = append(l.kept, kept...)
}

// holds reports whether the run pushed commit to branch.
func (l *ledger) holds(branch, commit string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.added {
		if e.Branch == branch && e.Commit == commit {
			return true
		}
	}
	return false
}

// knowTips makes every checkout of the run refuse a branch whose tip the
// job's record does not hold (gitops.Options.Known), whoever its author:
// the job of another cluster, with the same identity, pushes commits that
// only the record tells apart. Without a record, the tip's author and
// committer alone are judged.
func knowTips(ctx context.Context, cfg *run) error {
	if cfg.Record == nil {
		return nil
	}
	entries, err := cfg.Record.Load(ctx)
	if err != nil {
		return fmt.Errorf("reading the job's record, which says which branches hold the job's commits: %w", err)
	}
	type tip struct{ branch, commit string }
	known := make(map[tip]bool, len(entries))
	for _, e := range entries {
		known[tip{e.Branch, e.Commit}] = true
	}
	l := cfg.ledger
	cfg.Git.Known = func(branch, commit string) bool {
		return known[tip{branch, commit}] || l.holds(branch, commit)
	}
	return nil
}

// pushed notes that the branch of p holds commit, for its pull request
// (nil when none), with p's changes.
func (l *ledger) pushed(commit, branch string, pr *plan.PullRequest, p *plan.Plan) {
	changes := gitops.ChangeTrailers(p)
	if l == nil || commit == "" || changes == "" {
		return
	}
	e := gitops.Pushed{Commit: commit, Branch: branch, Time: time.Now().UTC(), Changes: changes}
	if pr != nil {
		e.PullRequest = pr.Number
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.added = append(l.added, e)
}

// withdrawn forgets that the run pushed commit to branch: the branch was
// put back.
func (l *ledger) withdrawn(branch, commit string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.added = slices.DeleteFunc(l.added, func(e gitops.Pushed) bool { return e.Branch == branch && e.Commit == commit })
}

// merge returns current with what the run learnt and pushed folded in,
// as of now. The caller holds l.mu.
func (l *ledger) merge(current []gitops.Pushed, now time.Time) []gitops.Pushed {
	return record.Merge(current, l.kept, l.added, l.checked, recordKept, now)
}

// ErrUnrecorded is the error of a run whose pushes could not be
// recorded: they will not be verified once merged, corrected or held,
// so the run failed (exit code 1) whatever else it did.
var ErrUnrecorded = errors.New("cannot write the job's record: this run's pushes will not be verified once merged")

// saveRecord writes what the run learnt and pushed into the job's
// record, in one update.
func saveRecord(ctx context.Context, cfg *run, log *slog.Logger) error {
	l := cfg.ledger
	if cfg.Record == nil || l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.checked) == 0 && len(l.added) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	now := time.Now()
	err := cfg.Record.Update(ctx, func(current []gitops.Pushed) []gitops.Pushed { return l.merge(current, now) })
	if err == nil {
		log.InfoContext(ctx, "recorded the pushed commits", "added", len(l.added), "checked", len(l.checked))
	}
	return err
}
