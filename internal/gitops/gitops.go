package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/memory"
)

// go-git's file:// transport runs the git-upload-pack and git-receive-pack
// programs; its in-process server does the same without a git binary,
// which the job's image does not have. That server cannot make shallow
// clones, which a local repository does not need.
func init() {
	client.InstallProtocol("file", server.DefaultServer)
}

// DefaultTimeout bounds each network operation: listing, cloning, pushing.
const DefaultTimeout = 5 * time.Minute

// ErrBranchNotFound is returned when the base branch is not on the remote.
var ErrBranchNotFound = errors.New("branch not found")

// Options says which repository to work on and how.
type Options struct {
	// URL of the repository: file://, http:// or https://.
	URL string
	// BaseBranch is the branch the changes are for, e.g. main.
	BaseBranch string
	// PushBranch is the branch the job pushes to, rebuilt on top of
	// BaseBranch by every run. Equal to BaseBranch for a direct push.
	PushBranch string
	// Username and Token authenticate over HTTP(S). The token is sent as
	// the password of basic auth, which GitHub, GitLab and Gitea accept.
	Username string
	Token    string
	// AuthorName and AuthorEmail sign the commits.
	AuthorName  string
	AuthorEmail string
	// Timeout bounds each network operation; DefaultTimeout when zero.
	Timeout time.Duration
}

// Workspace is a checkout of the base branch, on a local push branch.
type Workspace struct {
	opts Options
	dir  string
	repo *git.Repository
	auth transport.AuthMethod
	url  string
	// depth of clones and fetches; 0 for all history.
	depth int
	// pushHead is the push branch's tip on the remote; zero when the
	// branch does not exist there.
	pushHead plumbing.Hash
}

// Checkout clones the base branch into dir (shallow, single branch, no
// tags) and creates the push branch locally on top of it. Every run starts
// from the base branch, so the push branch never goes stale: it is the
// base plus this run's changes.
func Checkout(ctx context.Context, opts Options, dir string) (*Workspace, error) {
	cleanURL, auth, err := authFor(opts)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	w := &Workspace{opts: opts, dir: dir, auth: auth, url: cleanURL, depth: 1}
	if strings.HasPrefix(cleanURL, "file:") {
		w.depth = 0
	}

	heads, err := w.remoteHeads(ctx)
	if err != nil {
		return nil, err
	}
	base := plumbing.NewBranchReferenceName(opts.BaseBranch)
	push := plumbing.NewBranchReferenceName(opts.PushBranch)
	if _, ok := heads[base]; !ok {
		return nil, fmt.Errorf("base branch %q on %s: %w", opts.BaseBranch, cleanURL, ErrBranchNotFound)
	}
	w.pushHead = heads[push]

	cloneCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	w.repo, err = git.PlainCloneContext(cloneCtx, dir, false, &git.CloneOptions{
		URL:           cleanURL,
		Auth:          auth,
		ReferenceName: base,
		SingleBranch:  true,
		Depth:         w.depth,
		Tags:          git.NoTags,
	})
	if err != nil {
		return nil, redact(fmt.Errorf("cloning %s branch %s: %w", cleanURL, opts.BaseBranch, err), opts)
	}
	if push != base {
		wt, err := w.repo.Worktree()
		if err != nil {
			return nil, fmt.Errorf("opening worktree: %w", err)
		}
		if err := wt.Checkout(&git.CheckoutOptions{Branch: push, Create: true, Keep: true}); err != nil {
			return nil, fmt.Errorf("creating branch %s: %w", opts.PushBranch, err)
		}
	}
	return w, nil
}

// Dir is the root of the checkout.
func (w *Workspace) Dir() string { return w.dir }

// Branch is the branch commits go to.
func (w *Workspace) Branch() string { return w.opts.PushBranch }

// Commit stages files (slash-separated, relative to Dir) and commits them
// with message. It returns false and makes no commit when nothing changed.
func (w *Workspace) Commit(files []string, message string) (string, bool, error) {
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", false, fmt.Errorf("opening worktree: %w", err)
	}
	files = append([]string(nil), files...)
	sort.Strings(files)
	for _, f := range files {
		if _, err := wt.Add(f); err != nil {
			return "", false, fmt.Errorf("staging %s: %w", f, err)
		}
	}
	hash, err := wt.Commit(message, &git.CommitOptions{
		Author: &object.Signature{Name: w.opts.AuthorName, Email: w.opts.AuthorEmail, When: time.Now()},
	})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	return hash.String(), true, nil
}

// UpToDate reports whether the remote push branch already holds exactly
// the tree of the local one, so that pushing would change nothing a
// reviewer sees. It reads the branch's tip with a separate shallow clone
// into memory: fetching it into the checkout would negotiate against a
// history the shallow checkout does not have.
func (w *Workspace) UpToDate(ctx context.Context) (bool, error) {
	if w.pushHead.IsZero() {
		return false, nil
	}
	fetchCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	remote, err := git.CloneContext(fetchCtx, memory.NewStorage(), nil, &git.CloneOptions{
		URL:           w.url,
		Auth:          w.auth,
		ReferenceName: plumbing.NewBranchReferenceName(w.opts.PushBranch),
		SingleBranch:  true,
		Depth:         w.depth,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		return false, redact(fmt.Errorf("reading %s from %s: %w", w.opts.PushBranch, w.url, err), w.opts)
	}
	remoteHead, err := remote.Head()
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", w.opts.PushBranch, err)
	}
	if remoteHead.Hash() != w.pushHead {
		// It moved since Checkout; the lease will refuse the push.
		return false, nil
	}
	remoteCommit, err := remote.CommitObject(remoteHead.Hash())
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", w.opts.PushBranch, err)
	}
	head, err := w.repo.Head()
	if err != nil {
		return false, fmt.Errorf("reading HEAD: %w", err)
	}
	local, err := w.repo.CommitObject(head.Hash())
	if err != nil {
		return false, fmt.Errorf("reading HEAD: %w", err)
	}
	return local.TreeHash == remoteCommit.TreeHash, nil
}

// Push pushes the push branch. It replaces the remote branch only if that
// is still where Checkout saw it (a lease), so a concurrent push is never
// lost: the push fails and the next run starts again from the base.
func (w *Workspace) Push(ctx context.Context) error {
	pushCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	ref := plumbing.NewBranchReferenceName(w.opts.PushBranch)
	opts := &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:       w.auth,
	}
	if !w.pushHead.IsZero() && w.opts.PushBranch != w.opts.BaseBranch {
		// go-git checks the lease against the remote-tracking ref, which a
		// single-branch clone of the base does not have.
		tracking := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, w.opts.PushBranch)
		if err := w.repo.Storer.SetReference(plumbing.NewHashReference(tracking, w.pushHead)); err != nil {
			return fmt.Errorf("recording the lease on %s: %w", w.opts.PushBranch, err)
		}
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)}
		opts.ForceWithLease = &git.ForceWithLease{RefName: ref, Hash: w.pushHead}
	}
	err := w.repo.PushContext(pushCtx, opts)
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return redact(fmt.Errorf("pushing %s to %s: %w", w.opts.PushBranch, w.url, err), w.opts)
	}
	return nil
}

func (w *Workspace) remoteHeads(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	listCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{w.url}})
	refs, err := remote.ListContext(listCtx, &git.ListOptions{Auth: w.auth})
	if err != nil {
		return nil, redact(fmt.Errorf("listing branches of %s: %w", w.url, err), w.opts)
	}
	heads := make(map[plumbing.ReferenceName]plumbing.Hash, len(refs))
	for _, r := range refs {
		if r.Name().IsBranch() {
			heads[r.Name()] = r.Hash()
		}
	}
	return heads, nil
}

// authFor returns the repository URL without credentials, and the auth
// method: credentials embedded in the URL move to basic auth so that they
// never show up in an error or log line that quotes the URL. A URL with
// only a user part (https://TOKEN@host/...) carries a token, as GitHub
// documents.
func authFor(opts Options) (string, transport.AuthMethod, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing git url: %w", redact(err, opts))
	}
	username, token := opts.Username, opts.Token
	if u.User != nil {
		p, hasPassword := u.User.Password()
		switch {
		case token != "":
		case hasPassword:
			token = p
			if username == "" {
				username = u.User.Username()
			}
		default:
			token = u.User.Username()
		}
		u.User = nil
	}
	clean := u.String()
	if token == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return clean, nil, nil
	}
	if username == "" {
		username = "git"
	}
	return clean, &githttp.BasicAuth{Username: username, Password: token}, nil
}
