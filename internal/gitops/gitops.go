package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// ErrBranchNotFound is returned when the base branch is not on the remote.
var ErrBranchNotFound = errors.New("branch not found")

// Options says which repository to work on and how.
type Options struct {
	// URL of the repository: file://, http:// or https://.
	URL string
	// BaseBranch is the branch the changes are for, e.g. main.
	BaseBranch string
	// PushBranch is the branch the job commits to. It starts from
	// BaseBranch when it does not exist yet. Equal to BaseBranch for a
	// direct push.
	PushBranch string
	// Username and Token authenticate over HTTP(S). The token is sent as
	// the password of basic auth, which GitHub, GitLab and Gitea accept.
	Username string
	Token    string
	// AuthorName and AuthorEmail sign the commits.
	AuthorName  string
	AuthorEmail string
}

// Workspace is a checkout of the push branch in a local directory.
type Workspace struct {
	opts Options
	dir  string
	repo *git.Repository
	auth transport.AuthMethod
	url  string
}

// Checkout clones the repository into dir: a shallow, single-branch clone
// of the push branch when it exists on the remote, else of the base branch,
// with the push branch created locally on top of it.
func Checkout(ctx context.Context, opts Options, dir string) (*Workspace, error) {
	cleanURL, auth, err := authFor(opts)
	if err != nil {
		return nil, err
	}
	w := &Workspace{opts: opts, dir: dir, auth: auth, url: cleanURL}

	heads, err := w.remoteHeads(ctx)
	if err != nil {
		return nil, err
	}
	base := plumbing.NewBranchReferenceName(opts.BaseBranch)
	push := plumbing.NewBranchReferenceName(opts.PushBranch)
	if _, ok := heads[base]; !ok {
		return nil, fmt.Errorf("base branch %q on %s: %w", opts.BaseBranch, cleanURL, ErrBranchNotFound)
	}
	from := base
	if _, ok := heads[push]; ok {
		from = push
	}
	w.repo, err = git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL:           cleanURL,
		Auth:          auth,
		ReferenceName: from,
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
	})
	if err != nil {
		return nil, redact(fmt.Errorf("cloning %s branch %s: %w", cleanURL, from.Short(), err), opts)
	}
	if from != push {
		if err := w.switchToNewBranch(push); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Dir is the root of the checkout.
func (w *Workspace) Dir() string { return w.dir }

// Branch is the branch commits go to.
func (w *Workspace) Branch() string { return w.opts.PushBranch }

// Head returns the commit checked out.
func (w *Workspace) Head() (string, error) {
	ref, err := w.repo.Head()
	if err != nil {
		return "", fmt.Errorf("reading HEAD: %w", err)
	}
	return ref.Hash().String(), nil
}

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
	now := time.Now()
	hash, err := wt.Commit(message, &git.CommitOptions{
		Author: &object.Signature{Name: w.opts.AuthorName, Email: w.opts.AuthorEmail, When: now},
	})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	return hash.String(), true, nil
}

// Push pushes the push branch to the remote.
func (w *Workspace) Push(ctx context.Context) error {
	ref := plumbing.NewBranchReferenceName(w.opts.PushBranch)
	err := w.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:       w.auth,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return redact(fmt.Errorf("pushing %s to %s: %w", w.opts.PushBranch, w.url, err), w.opts)
	}
	return nil
}

func (w *Workspace) remoteHeads(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{w.url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: w.auth})
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

func (w *Workspace) switchToNewBranch(branch plumbing.ReferenceName) error {
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("opening worktree: %w", err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: branch, Create: true, Keep: true}); err != nil {
		return fmt.Errorf("creating branch %s: %w", branch.Short(), err)
	}
	return nil
}

// authFor returns the repository URL without credentials, and the auth
// method: credentials embedded in the URL move to basic auth so that they
// never show up in an error or log line that quotes the URL.
func authFor(opts Options) (string, transport.AuthMethod, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing git url: %w", redact(err, opts))
	}
	username, token := opts.Username, opts.Token
	if u.User != nil {
		if p, ok := u.User.Password(); ok && token == "" {
			token = p
		}
		if username == "" {
			username = u.User.Username()
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
