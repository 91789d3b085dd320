package gitops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Pushed is a commit the job pushed, as the job's own record keeps it.
// The record, kept where tenants cannot write, is the only evidence of
// what the job changed: trailers, author e-mails and Co-authored-by lines
// are anyone's to write, so no commit message counts.
type Pushed struct {
	// Commit is the commit the job pushed; Branch the branch it pushed
	// it to; PullRequest the number of the pull request it opened or
	// updated for it, 0 for none (a direct push, or no forge).
	Commit      string `json:"commit"`
	Branch      string `json:"branch"`
	PullRequest int    `json:"pullRequest,omitempty"`
	// Time is when it was pushed.
	Time time.Time `json:"time"`
	// Changes are the trailer lines of the requests it changes (see
	// ChangeTrailers), as the job wrote them from its plan.
	Changes string `json:"changes"`
	// MergedAs is the commit that brought it onto the base branch when
	// that is not Commit itself (a squash or a rebase on the forge), once
	// the forge said so.
	MergedAs string `json:"mergedAs,omitempty"`
}

// PullRequestGetter reads one pull request; a Forge is one.
type PullRequestGetter interface {
	Get(ctx context.Context, number int) (*PullRequest, error)
}

// Merged is what ReadMerged found.
type Merged struct {
	// Changes are the request changes of the recorded commits that are
	// on the base branch, newest first.
	Changes []RecordedChange
	// Kept are the recorded commits still worth keeping: those merged
	// and those that may still be, with what was learnt of them
	// (MergedAs). A commit whose pull request was closed unmerged, or
	// merged with another head, never reaches the base branch and is
	// left out.
	Kept []Pushed
	// Unresolved says why some recorded commits could not be checked (a
	// forge that did not answer); they are kept for a later run.
	Unresolved []error
}

// DefaultMergedDepth is how many commits of the base branch ReadMerged
// reads at most.
const DefaultMergedDepth = 500

// ReadMerged finds which of the job's recorded commits reached the base
// branch since since, reading at most depth commits of it back
// (DefaultMergedDepth when zero) with a clone into memory. A commit counts
// when the base branch holds it (a direct push, a merge commit, a
// fast-forward), or when the forge says that the pull request the job
// recorded for it was merged with that very commit as its head, and the
// base branch holds the commit the merge made (a squash, a rebase). The
// changes are those the record holds, never a commit message's.
func ReadMerged(ctx context.Context, opts Options, forge PullRequestGetter, pushed []Pushed, since time.Time, depth int) (Merged, error) {
	onBase, err := baseCommits(ctx, opts, since, depth)
	if err != nil {
		return Merged{}, err
	}
	cleanURL, _, err := authFor(opts)
	if err != nil {
		return Merged{}, err
	}
	web := webURL(cleanURL)
	var out Merged
	prs := map[int]*PullRequest{}
	for _, e := range pushed {
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
		for _, rc := range ParseChanges(e.Changes) {
			rc.Commit, rc.Time = merged.commit, merged.at
			if web != "" {
				rc.URL = web + "/commit/" + rc.Commit
			}
			out.Changes = append(out.Changes, rc)
		}
	}
	slices.SortStableFunc(out.Changes, func(a, b RecordedChange) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// resolution is a recorded commit with what ReadMerged learnt of it:
// the base branch's commit that holds it and that commit's time, none
// while it is not merged (or merged before the history read).
type resolution struct {
	Pushed
	commit string
	at     time.Time
}

// resolve tells whether e reached the base branch, and whether it is
// worth keeping. prs caches the forge's answers within a call.
func resolve(ctx context.Context, e Pushed, onBase map[string]time.Time, forge PullRequestGetter, prs map[int]*PullRequest) (resolution, bool, error) {
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
			return r, true, fmt.Errorf("pull request %d of commit %s: %w", e.PullRequest, short(plumbing.NewHash(e.Commit)), err)
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

// baseCommits returns the commits of the base branch made since since,
// by hash, with their committer times, reading at most depth of them.
func baseCommits(ctx context.Context, opts Options, since time.Time, depth int) (map[string]time.Time, error) {
	cleanURL, auth, err := authFor(opts)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if depth <= 0 {
		depth = DefaultMergedDepth
	}
	if strings.HasPrefix(cleanURL, "file:") {
		depth = 0 // the file transport does not serve shallow clones
	}
	cloneCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// On disk: a clone into memory would hold every file of every commit
	// read, inflated.
	tmp, err := os.MkdirTemp("", "recommend-job-history-")
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary clone: nothing to lose
	repo, err := cloneToDisk(cloneCtx, tmp, &git.CloneOptions{
		URL:           cleanURL,
		Auth:          auth,
		ReferenceName: plumbing.NewBranchReferenceName(opts.BaseBranch),
		SingleBranch:  true,
		Depth:         depth,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		return nil, redact(fmt.Errorf("reading the history of %s branch %s: %w", cleanURL, opts.BaseBranch, err), opts)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	commits, err := repo.Log(&git.LogOptions{From: head.Hash(), Since: &since})
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	out := map[string]time.Time{}
	err = commits.ForEach(func(c *object.Commit) error {
		if len(out) >= cmp.Or(depth, DefaultMergedDepth) {
			return storer.ErrStop
		}
		out[c.Hash.String()] = c.Committer.When
		return nil
	})
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	return out, nil
}
