package gitops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
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

// DefaultHistoryDepth is how many commits of the base branch BaseCommits
// reads at most.
const DefaultHistoryDepth = 500

// WebURL is the web address of the repository, for links to its
// commits: the https URL without .git, or the host and path of an ssh
// URL; "" for a local repository.
func (o Options) WebURL() string {
	if o.access != nil {
		return o.access.web
	}
	return webURL(parseGitURL(o.URL))
}

// BaseCommits returns the commits of the base branch made since since,
// by hash, with their committer times, reading at most depth of them
// (DefaultHistoryDepth when zero) with a clone into a temporary
// directory.
func BaseCommits(ctx context.Context, opts Options, since time.Time, depth int) (map[string]time.Time, error) {
	a, err := accessOf(opts)
	if err != nil {
		return nil, err
	}
	cleanURL, auth := a.url, a.auth
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if depth <= 0 {
		depth = DefaultHistoryDepth
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
		return nil, redactErr(fmt.Errorf("reading the history of %s branch %s: %w", cleanURL, opts.BaseBranch, err), opts)
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
		if len(out) >= cmp.Or(depth, DefaultHistoryDepth) {
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
