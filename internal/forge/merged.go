package forge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// PullRequestGetter reads one pull request; a Forge is one.
type PullRequestGetter interface {
	Get(ctx context.Context, number int) (*PullRequest, error)
}

// Merged is what ReadMerged found.
type Merged struct {
	// Changes are the request changes of the recorded commits that are
	// on the base branch, newest first.
	Changes []gitops.RecordedChange
	// Kept are the recorded commits still worth keeping: those merged
	// and those that may still be, with what was learnt of them
	// (MergedAs). A commit whose pull request was closed unmerged, or
	// merged with another head, never reaches the base branch and is
	// left out.
	Kept []gitops.Pushed
	// Unresolved says why some recorded commits could not be checked (a
	// forge that did not answer); they are kept for a later run.
	Unresolved []error
}

// ReadMerged finds which of the job's recorded commits reached the base
// branch since since, reading at most depth commits of it back
// (gitops.DefaultHistoryDepth when zero). A commit counts
// when the base branch holds it (a direct push, a merge commit, a
// fast-forward), or when the forge says that the pull request the job
// recorded for it was merged with that very commit as its head, and the
// base branch holds the commit the merge made (a squash, a rebase). The
// changes are those the record holds, never a commit message's.
func ReadMerged(ctx context.Context, opts gitops.Options, forge PullRequestGetter, pushed []gitops.Pushed, since time.Time, depth int) (Merged, error) {
	onBase, err := gitops.BaseCommits(ctx, opts, since, depth)
	if err != nil {
		return Merged{}, err
	}
	web := opts.WebURL()
	var out Merged
	prs := map[int]*PullRequest{}
	for _, e := range pushed {
		if e.Changes == "" {
			// Retired: never merged, kept only so that the job knows
			// its branch's tip. Nothing to verify, nothing to ask.
			out.Kept = append(out.Kept, e)
			continue
		}
		merged, keep, err := resolve(ctx, e, onBase, forge, prs)
		if err != nil {
			// A forge that failed once is not asked again in this read: a
			// hung one would cost a timeout per pull request. What it was
			// not asked stays for a later run.
			out.Unresolved = append(out.Unresolved, err)
			forge = nil
		}
		if !keep {
			continue
		}
		out.Kept = append(out.Kept, merged.Pushed)
		if merged.commit == "" {
			continue
		}
		for _, rc := range gitops.ParseChanges(e.Changes) {
			rc.Commit, rc.Time = merged.commit, merged.at
			if web != "" {
				rc.URL = web + "/commit/" + rc.Commit
			}
			out.Changes = append(out.Changes, rc)
		}
	}
	slices.SortStableFunc(out.Changes, func(a, b gitops.RecordedChange) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// resolution is a recorded commit with what ReadMerged learnt of it:
// the base branch's commit that holds it and that commit's time, none
// while it is not merged (or merged before the history read).
type resolution struct {
	gitops.Pushed
	commit string
	at     time.Time
}

// resolve tells whether e reached the base branch, and whether it is
// worth keeping. prs caches the forge's answers within a call.
func resolve(ctx context.Context, e gitops.Pushed, onBase map[string]time.Time, forge PullRequestGetter, prs map[int]*PullRequest) (resolution, bool, error) {
	r := resolution{Pushed: e}
	for _, c := range []string{e.Commit, e.MergedAs} {
		if at, ok := onBase[c]; ok && c != "" {
			r.commit, r.at = c, at
			return r, true, nil
		}
	}
	if e.MergedAs != "" || e.PullRequest <= 0 || forge == nil {
		// Merged before the history read, or not (yet) merged.
		return r, true, nil
	}
	pr, ok := prs[e.PullRequest]
	if !ok {
		var err error
		if pr, err = forge.Get(ctx, e.PullRequest); err != nil {
			return r, true, fmt.Errorf("pull request %d of commit %s: %w", e.PullRequest, shortHash(e.Commit), err)
		}
		prs[e.PullRequest] = pr
	}
	switch {
	case pr.Merged && pr.HeadCommit == e.Commit && pr.MergeCommit != "":
		r.MergedAs = pr.MergeCommit
		if at, ok := onBase[pr.MergeCommit]; ok {
			r.commit, r.at = pr.MergeCommit, at
		}
		return r, true, nil
	case pr.Merged, !pr.ClosedAt.IsZero():
		// Merged with another head (a later push of the job's, or
		// someone else's commit), or closed unmerged: this commit never
		// reaches the base branch.
		return r, false, nil
	}
	return r, true, nil
}

// shortHash is the first 12 digits of a commit's hash, as git shows it.
func shortHash(h string) string { return h[:min(len(h), 12)] }
