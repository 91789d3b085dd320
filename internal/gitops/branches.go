package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CheckoutBase clones the base branch into dir once for several push
// branches, the branches of a run's groups: each is then written from the
// same checkout (OnBranch), so that a run clones the repository once,
// however many branches it writes. The tips of those of branches the
// remote has are fetched together, in one request into a repository of
// their own (see readTip), for OnBranch to judge. Until OnBranch, the
// checkout is on no push branch: Commit and Push refuse it.
func CheckoutBase(ctx context.Context, opts Options, dir string, branches []string) (*Workspace, error) {
	if opts.Direct() {
		return nil, errors.New("a direct push writes one branch: check it out with Checkout")
	}
	w, err := newWorkspace(opts, dir)
	if err != nil {
		return nil, err
	}
	if w.heads, err = w.remoteHeads(ctx); err != nil {
		return nil, err
	}
	var ok bool
	if w.baseHead, ok = w.heads[plumbing.NewBranchReferenceName(opts.BaseBranch)]; !ok {
		return nil, fmt.Errorf("base branch %q on %s: %w", opts.BaseBranch, w.url, ErrBranchNotFound)
	}
	if err := w.cloneBase(ctx); err != nil {
		return nil, err
	}
	w.opts.PushBranch = ""
	if err := w.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, w.baseHead)); err != nil {
		return nil, fmt.Errorf("detaching HEAD: %w", err)
	}
	if err := w.materialize(w.baseHead); err != nil {
		return nil, err
	}
	w.tips = map[string]*object.Commit{}
	if err := w.fetchTips(ctx, branches); err != nil {
		return nil, err
	}
	return w, nil
}

// errNoBranch refuses a commit or push on a checkout of CheckoutBase
// that OnBranch has not put on a branch.
var errNoBranch = errors.New("the checkout is on no push branch: call OnBranch first")

// OnBranch returns the checkout, its files and its base, writing to the
// push branch branch: the branch starts at the base head, and its remote
// tip, as the listing of CheckoutBase saw it, is judged as Checkout judges
// it (ErrForeignCommit). The workspace it was called on and those it
// returned before share the checkout: only the last one returned may
// commit, and the files on disk are whatever the caller left there.
func (w *Workspace) OnBranch(ctx context.Context, branch string) (*Workspace, error) {
	if w.tips == nil {
		return nil, errors.New("OnBranch needs a checkout of CheckoutBase")
	}
	b := *w
	b.opts = w.opts.OnBranch(branch)
	if b.opts.Direct() || branch == "" {
		return nil, fmt.Errorf("branch %q: not a push branch of the base %s", branch, w.opts.BaseBranch)
	}
	push := plumbing.NewBranchReferenceName(branch)
	b.pushHead, b.pushTip, b.pushed = w.heads[push], nil, plumbing.ZeroHash
	if !b.pushHead.IsZero() {
		tip := w.tips[branch]
		if tip == nil || tip.Hash != b.pushHead {
			var err error
			if tip, err = b.readTip(ctx, branch); err != nil {
				return nil, err
			}
		}
		b.pushTip = tip
		if err := b.checkOwnTip(); err != nil {
			return nil, err
		}
	}
	if err := b.repo.Storer.SetReference(plumbing.NewHashReference(push, b.baseHead)); err != nil {
		return nil, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	if err := b.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, push)); err != nil {
		return nil, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	return &b, nil
}

// fetchTips reads, in one fetch into a temporary repository, the tip
// commits of those of branches the remote has: objects the tips share
// (most of the base's tree) come once, where a clone per branch would
// bring the whole tree each time.
func (w *Workspace) fetchTips(ctx context.Context, branches []string) error {
	var specs []config.RefSpec
	for _, b := range branches {
		if b == w.opts.BaseBranch || w.heads[plumbing.NewBranchReferenceName(b)].IsZero() {
			continue
		}
		specs = append(specs, config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", b, b)))
	}
	if len(specs) == 0 {
		return nil
	}
	fetchCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "recommend-job-tips-")
	if err != nil {
		return fmt.Errorf("reading the branches' tips: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary repository: nothing to lose
	storage, err := diskStorage(tmp)
	if err != nil {
		return fmt.Errorf("reading the branches' tips: %w", err)
	}
	repo, err := git.Init(storage, nil)
	if err != nil {
		return fmt.Errorf("reading the branches' tips: %w", err)
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{w.url}})
	if err != nil {
		return fmt.Errorf("reading the branches' tips: %w", err)
	}
	err = remote.FetchContext(fetchCtx, &git.FetchOptions{RefSpecs: specs, Auth: w.auth, Depth: w.depth, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return redactErr(fmt.Errorf("reading the branches' tips from %s: %w", w.url, err), w.opts)
	}
	for _, b := range branches {
		ref, err := repo.Reference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, b), true)
		if err != nil {
			// Gone between the listing and the fetch: OnBranch reads it
			// alone, or finds it gone at the push.
			continue
		}
		tip, err := repo.CommitObject(ref.Hash())
		if err != nil {
			return fmt.Errorf("reading the tip of %s: %w", b, err)
		}
		w.tips[b] = tip
	}
	return nil
}
