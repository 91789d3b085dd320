package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// go-git's file:// transport runs the git-upload-pack and git-receive-pack
// programs; its in-process server does the same without a git binary,
// which the job's image does not have. That server cannot make shallow
// clones, which a local repository does not need.
func init() {
	client.InstallProtocol("file", server.DefaultServer)
}

// largeObjectThreshold is the size above which go-git streams an object
// from its pack rather than reading it whole, and objectCacheSize bounds
// the objects it keeps decoded: a tenant's file, however large (a few KB
// once packed may be gigabytes), then costs the run no more than these.
const (
	largeObjectThreshold = 1 << 20
	objectCacheSize      = 8 << 20
)

// diskStorage is a repository's storage in the .git directory of dir,
// whose objects are never read whole above largeObjectThreshold. A
// memory storage, which a clone would fill with every object inflated,
// is for refs alone.
func diskStorage(dir string) (*filesystem.Storage, error) {
	dot, err := osfs.New(dir).Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	return filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{LargeObjectThreshold: largeObjectThreshold}), nil
}

// cloneToDisk clones into dir, objects kept packed in its .git directory
// (see diskStorage), and checks out the files unless opts say not to.
func cloneToDisk(ctx context.Context, dir string, opts *git.CloneOptions) (*git.Repository, error) {
	storage, err := diskStorage(dir)
	if err != nil {
		return nil, err
	}
	var worktree billy.Filesystem
	if !opts.NoCheckout {
		worktree = osfs.New(dir)
	}
	return git.CloneContext(ctx, storage, worktree, opts)
}

// DefaultTimeout bounds each network operation: listing, cloning, pushing.
const DefaultTimeout = 5 * time.Minute

var (
	// ErrBranchNotFound is returned when the base branch is not on the remote.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrStale is returned by Push when the base or the push branch moved
	// on the remote since Checkout. Nothing was pushed; a fresh Checkout
	// and the same changes applied again will succeed.
	ErrStale = errors.New("remote moved since checkout")
	// ErrForeignCommit is returned by Checkout when the tip of the remote
	// push branch is not a commit of the job's own (someone else pushed to
	// the branch). The job never overwrites such a commit.
	ErrForeignCommit = errors.New("push branch holds a commit the job did not make")
)

// Options says which repository to work on and how.
type Options struct {
	// URL of the repository: file://, http://, https://, ssh:// or the
	// scp-like user@host:path.
	URL string
	// BaseBranch is the branch the changes are for, e.g. main.
	BaseBranch string
	// PushBranch is the branch the job pushes to, rebuilt on top of
	// BaseBranch by every run. Equal to BaseBranch for a direct push.
	PushBranch string
	// GroupPrefix and GroupSuffix, when either is set, are
	// git-branch-template's text around {{.Group}}: a group's branch is
	// GroupPrefix, the group's name and check, GroupSuffix. Empty: the
	// push branch, "-" and the group's name and check (GroupBranch).
	GroupPrefix, GroupSuffix string
	// Cluster is the identity of the cluster the job writes for: its
	// group branches carry it (a slug before the group's name, and the
	// whole of it in their check), so that the jobs of two clusters over
	// one repository never share one. Empty: the names of a job that
	// names no cluster.
	Cluster string
	// Known, when set, says whether the job's record holds commit as one
	// the job pushed to branch. Checkout then refuses a push branch whose
	// tip it does not know, whoever its author: the job of another
	// cluster, with the same identity, pushed it. Nil: the tip's author,
	// committer and parents alone are judged.
	Known func(branch, commit string) bool
	// Username and Token authenticate over HTTP(S). The token is sent as
	// the password of basic auth, which GitHub, GitLab and Gitea accept.
	Username string
	Token    string
	// SSHKeyFile is the private key for ssh URLs; KnownHostsFile, which
	// ssh URLs require, lists the host keys the server may present.
	SSHKeyFile     string
	KnownHostsFile string
	// AuthorName and AuthorEmail sign the commits.
	AuthorName  string
	AuthorEmail string
	// CommitterName and CommitterEmail are the committer; the author's
	// when empty.
	CommitterName  string
	CommitterEmail string
	// SigningKeyFile, when set, signs commits: an armored OpenPGP private
	// key (SigningFormat "openpgp", the default) or an OpenSSH private key
	// (SigningFormat "ssh"). The key must not be passphrase-protected.
	SigningKeyFile string
	SigningFormat  string
	// Attempts bounds how often a run that finds the remote moved starts
	// again from a fresh clone; DefaultAttempts when zero.
	Attempts int
	// Secrets are the run's other credentials (the forge's token), which
	// no error of git's may show either.
	Secrets []string
	// Timeout bounds each network operation; DefaultTimeout when zero.
	Timeout time.Duration

	// access is what Prepare parsed of the settings above.
	access *access
}

// DefaultAttempts is how many fresh clones a run tries when the remote
// keeps moving under it.
const DefaultAttempts = 3

// Committer returns the committer identity: the author's unless set.
func (o Options) Committer() (name, email string) {
	name, email = o.CommitterName, o.CommitterEmail
	if name == "" {
		name = o.AuthorName
	}
	if email == "" {
		email = o.AuthorEmail
	}
	return name, email
}

// Direct reports whether the job commits straight onto the base branch.
func (o Options) Direct() bool { return o.PushBranch == o.BaseBranch }

// Workspace is a checkout of the base branch, on a local push branch.
type Workspace struct {
	opts   Options
	dir    string
	repo   *git.Repository
	auth   transport.AuthMethod
	url    string
	signer git.Signer
	// depth of clones and fetches; 0 for all history.
	depth int
	// baseHead and pushHead are the tips of the base and push branches on
	// the remote at Checkout; pushHead is zero when the branch does not
	// exist there.
	baseHead, pushHead plumbing.Hash
	// pushed is what the last push of this workspace left on the push
	// branch (zero before one).
	pushed plumbing.Hash
	// pushTip is the remote push branch's tip commit, nil when none.
	pushTip *object.Commit
	// skipped are the entries of the base's tree left out of the checkout.
	skipped []Skip
	// heads are the remote's branches as CheckoutBase listed them, and
	// tips the tip commits of the push branches it fetched; nil after
	// Checkout.
	heads map[plumbing.ReferenceName]plumbing.Hash
	tips  map[string]*object.Commit
}

// Checkout clones the base branch into dir (shallow, single branch, no
// tags) and creates the push branch locally on top of it. It writes every
// file of the base it can: an entry whose name git or the file system
// refuses (a control character, a ".." or .git component, a name too long)
// is left out and listed by Skipped, and the job's commits keep it as the
// base has it. Every run starts from the base branch, so the push branch
// never goes stale: it is the base plus this run's changes. When the
// remote push branch exists, its tip must be a commit of the job's (author
// and committer are the job's identity, one parent, known to the record
// when Options.Known is set): otherwise someone else pushed to it, and
// Checkout returns ErrForeignCommit rather than let the run replace it.
func Checkout(ctx context.Context, opts Options, dir string) (*Workspace, error) {
	w, err := newWorkspace(opts, dir)
	if err != nil {
		return nil, err
	}
	heads, err := w.remoteHeads(ctx)
	if err != nil {
		return nil, err
	}
	base := plumbing.NewBranchReferenceName(opts.BaseBranch)
	push := plumbing.NewBranchReferenceName(opts.PushBranch)
	var ok bool
	if w.baseHead, ok = heads[base]; !ok {
		return nil, fmt.Errorf("base branch %q on %s: %w", opts.BaseBranch, w.url, ErrBranchNotFound)
	}
	w.pushHead = heads[push]
	if !w.pushHead.IsZero() && !opts.Direct() {
		if w.pushTip, err = w.readTip(ctx, opts.PushBranch); err != nil {
			return nil, err
		}
		if err := w.checkOwnTip(); err != nil {
			return nil, err
		}
	}
	if err := w.cloneBase(ctx); err != nil {
		return nil, err
	}
	if !opts.Direct() {
		if err := w.repo.Storer.SetReference(plumbing.NewHashReference(push, w.baseHead)); err != nil {
			return nil, fmt.Errorf("creating branch %s: %w", opts.PushBranch, err)
		}
		if err := w.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, push)); err != nil {
			return nil, fmt.Errorf("creating branch %s: %w", opts.PushBranch, err)
		}
	}
	if err := w.materialize(w.baseHead); err != nil {
		return nil, err
	}
	return w, nil
}

// newWorkspace is a workspace of opts in dir, nothing read yet.
func newWorkspace(opts Options, dir string) (*Workspace, error) {
	a, err := accessOf(opts)
	if err != nil {
		return nil, err
	}
	opts.access = a
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	w := &Workspace{opts: opts, dir: dir, auth: a.auth, url: a.url, depth: 1, signer: a.signer}
	if strings.HasPrefix(a.url, "file:") {
		w.depth = 0
	}
	return w, nil
}

// cloneBase clones the base branch into the workspace's directory, files
// not checked out, and checks that its head is the one listed.
func (w *Workspace) cloneBase(ctx context.Context) error {
	cloneCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	var err error
	w.repo, err = cloneToDisk(cloneCtx, w.dir, &git.CloneOptions{
		URL:           w.url,
		Auth:          w.auth,
		ReferenceName: plumbing.NewBranchReferenceName(w.opts.BaseBranch),
		SingleBranch:  true,
		Depth:         w.depth,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		return redactErr(fmt.Errorf("cloning %s branch %s: %w", w.url, w.opts.BaseBranch, err), w.opts)
	}
	if head, err := w.repo.Head(); err == nil && head.Hash() != w.baseHead {
		// The base moved between listing and cloning: a lease taken on
		// the listed tip would be wrong, so start again.
		return fmt.Errorf("base branch %s moved during checkout: %w", w.opts.BaseBranch, ErrStale)
	}
	return nil
}

// readTip reads the tip commit of branch with a separate shallow clone
// into a temporary directory: fetching it into the checkout would
// negotiate against a history the shallow checkout does not have.
func (w *Workspace) readTip(ctx context.Context, branch string) (*object.Commit, error) {
	fetchCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "recommend-job-tip-")
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", branch, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary clone: nothing to lose
	remote, err := cloneToDisk(fetchCtx, tmp, &git.CloneOptions{
		URL:           w.url,
		Auth:          w.auth,
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
		Depth:         w.depth,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		return nil, redactErr(fmt.Errorf("reading %s from %s: %w", branch, w.url, err), w.opts)
	}
	head, err := remote.Head()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", branch, err)
	}
	tip, err := remote.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", branch, err)
	}
	return tip, nil
}

// checkOwnTip returns ErrForeignCommit unless the remote push branch's tip
// is what the job makes: a single commit, by its author and committer, on
// top of a base commit, and, with Options.Known, one the job's record
// holds. A human fixing up the branch adds a commit of theirs (or
// rewrites the job's, becoming its committer); another cluster's job
// makes commits of the same identity, which only the record tells apart.
func (w *Workspace) checkOwnTip() error {
	tip := w.pushTip
	_, committerEmail := w.opts.Committer()
	own := strings.EqualFold(tip.Author.Email, w.opts.AuthorEmail) &&
		strings.EqualFold(tip.Committer.Email, committerEmail) && tip.NumParents() == 1
	if own && (w.opts.Known == nil || w.opts.Known(w.opts.PushBranch, tip.Hash.String())) {
		return nil
	}
	why := ""
	if own {
		// The job's identity, but not a commit of this job's record: the
		// job of another cluster, or one with another record, pushed it.
		why = ", which the job's record does not hold"
	}
	return fmt.Errorf("%s on %s: commit %s by %s <%s>%s: %w; merge or delete the branch to let the job continue",
		w.opts.PushBranch, w.url, tip.Hash.String()[:12], tip.Author.Name, tip.Author.Email, why, ErrForeignCommit)
}

// Dir is the root of the checkout.
func (w *Workspace) Dir() string { return w.dir }

// Branch is the branch commits go to.
func (w *Workspace) Branch() string { return w.opts.PushBranch }

// BaseHead is the commit of the base branch the checkout starts from.
func (w *Workspace) BaseHead() string { return w.baseHead.String() }

// PushTip is the commit at the tip of the remote push branch at
// Checkout, "" when the branch does not exist there.
func (w *Workspace) PushTip() string {
	if w.pushHead.IsZero() {
		return ""
	}
	return w.pushHead.String()
}

// PushBranchExists reports whether the push branch was on the remote at
// Checkout.
func (w *Workspace) PushBranchExists() bool { return !w.pushHead.IsZero() }

// Commit commits files (slash-separated, relative to Dir) as the checkout
// holds them, with message: each file's content, or its removal when it is
// gone. The commit's tree is HEAD's with those files changed and nothing
// else, so an entry the checkout left out (see Skipped) stays as it is. It
// returns false and makes no commit when nothing changed.
func (w *Workspace) Commit(files []string, message string) (string, bool, error) {
	if w.opts.PushBranch == "" {
		return "", false, errNoBranch
	}
	head, err := w.repo.Head()
	if err != nil {
		return "", false, fmt.Errorf("reading HEAD: %w", err)
	}
	parent, err := w.repo.CommitObject(head.Hash())
	if err != nil {
		return "", false, fmt.Errorf("reading HEAD: %w", err)
	}
	edits, err := w.stage(files)
	if err != nil {
		return "", false, err
	}
	tree, err := w.editTree(parent.TreeHash, edits)
	if err != nil {
		return "", false, fmt.Errorf("writing the tree: %w", err)
	}
	if tree == parent.TreeHash {
		return "", false, nil
	}
	now := time.Now()
	committerName, committerEmail := w.opts.Committer()
	commit := &object.Commit{
		Author:       signature(w.opts.AuthorName, w.opts.AuthorEmail, now),
		Committer:    signature(committerName, committerEmail, now),
		Message:      message,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{head.Hash()},
	}
	if w.signer != nil {
		unsigned := &plumbing.MemoryObject{}
		if err := commit.EncodeWithoutSignature(unsigned); err != nil {
			return "", false, fmt.Errorf("committing: %w", err)
		}
		r, err := unsigned.Reader()
		if err != nil {
			return "", false, fmt.Errorf("committing: %w", err)
		}
		sig, err := w.signer.Sign(r)
		if err != nil {
			return "", false, fmt.Errorf("signing the commit: %w", err)
		}
		commit.PGPSignature = string(sig)
	}
	obj := w.repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	hash, err := w.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	if err := w.repo.Storer.SetReference(plumbing.NewHashReference(head.Name(), hash)); err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	return hash.String(), true, nil
}

// signature is an identity as git writes it: without the characters that
// would end its name or email early.
func signature(name, email string, when time.Time) object.Signature {
	drop := strings.NewReplacer("<", "", ">", "", "\n", "")
	return object.Signature{Name: drop.Replace(name), Email: drop.Replace(email), When: when}
}

// stage writes each file's content as a blob and returns the tree entry
// of each, nil for a file gone from the checkout. It refuses a path git
// refuses, one the checkout left out, and one below a symbolic link.
func (w *Workspace) stage(files []string) (map[string]*object.TreeEntry, error) {
	edits := make(map[string]*object.TreeEntry, len(files))
	for _, name := range files {
		name = filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))
		if err := validPath(name); err != nil {
			return nil, fmt.Errorf("staging %q: %w", name, err)
		}
		if s, ok := w.skippedAt(name); ok {
			return nil, fmt.Errorf("staging %q: %q was left out of the checkout: %s", name, s.Path, s.Reason)
		}
		if err := w.noLinkOnTheWay(name); err != nil {
			return nil, fmt.Errorf("staging %q: %w", name, err)
		}
		full := filepath.Join(w.dir, filepath.FromSlash(name))
		info, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			edits[name] = nil
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("staging %q: %w", name, err)
		}
		if info.IsDir() {
			return nil, fmt.Errorf("staging %q: is a directory", name)
		}
		mode, err := filemode.NewFromOSFileMode(info.Mode())
		if err != nil {
			return nil, fmt.Errorf("staging %q: %w", name, err)
		}
		hash, err := w.writeBlob(full, info)
		if err != nil {
			return nil, fmt.Errorf("staging %q: %w", name, err)
		}
		edits[name] = &object.TreeEntry{Name: path.Base(name), Mode: mode, Hash: hash}
	}
	return edits, nil
}

// noLinkOnTheWay refuses a path whose directories include a symbolic
// link: the file committed would be one outside the directory it names.
func (w *Workspace) noLinkOnTheWay(name string) error {
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		info, err := os.Lstat(filepath.Join(w.dir, filepath.FromSlash(dir)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%q is a symbolic link", dir)
		}
	}
	return nil
}

// writeBlob stores the content of the file full, or a symbolic link's
// target, as a blob.
func (w *Workspace) writeBlob(full string, info os.FileInfo) (plumbing.Hash, error) {
	var data []byte
	var err error
	if info.Mode()&os.ModeSymlink != 0 {
		var target string
		target, err = os.Readlink(full)
		data = []byte(target)
	} else {
		data, err = os.ReadFile(full)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	obj := w.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	ow, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := ow.Write(data); err != nil {
		ow.Close()
		return plumbing.ZeroHash, err
	}
	if err := ow.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.repo.Storer.SetEncodedObject(obj)
}

// validPath refuses what git refuses in a tree: an empty path, control
// characters, "." and ".." components, and a component that is .git.
func validPath(name string) error {
	if name == "" || name == "." || strings.HasPrefix(name, "/") {
		return fmt.Errorf("invalid path %q", name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return fmt.Errorf("invalid path %q: control character", name)
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "." || part == ".." || strings.EqualFold(strings.TrimRight(part, ". "), ".git") {
			return fmt.Errorf("invalid path %q", name)
		}
	}
	return nil
}

// UpToDate reports whether the remote push branch, as Checkout saw it,
// already holds exactly the tree of the local one, so that pushing would
// change nothing a reviewer sees. A direct push is never up to date: a
// commit that changed files is new to the base branch.
func (w *Workspace) UpToDate(ctx context.Context) (bool, error) {
	if w.pushTip == nil {
		return false, nil
	}
	head, err := w.repo.Head()
	if err != nil {
		return false, fmt.Errorf("reading HEAD: %w", err)
	}
	local, err := w.repo.CommitObject(head.Hash())
	if err != nil {
		return false, fmt.Errorf("reading HEAD: %w", err)
	}
	return local.TreeHash == w.pushTip.TreeHash, nil
}

// Push pushes the push branch. It pushes only while the base is where
// Checkout saw it, and replaces the remote branch only if it is still
// where Checkout saw it (a lease), so a concurrent push is never lost:
// both are checked against the refs the remote announces for the push
// itself (send). When the remote moved, Push returns an error matching
// ErrStale and pushes nothing: the caller starts again from a fresh
// Checkout, so the branch always sits on the current base.
func (w *Workspace) Push(ctx context.Context) error {
	return PushAll(ctx, []*Workspace{w})[0]
}

// PushAll pushes the push branches of branches, the workspaces OnBranch
// returned from one checkout of CheckoutBase, in one receive-pack
// session, each as Push pushes one: with its own lease, its own outcome
// (in the order of branches) and ErrStale for a branch that moved. When
// the base moved, every branch gets ErrStale and nothing is pushed. One
// session, where a push each would cost each branch its round trips and
// the server's processes.
func PushAll(ctx context.Context, branches []*Workspace) []error {
	return apply(ctx, branches, true, func(b *Workspace) (old, new plumbing.Hash, err error) {
		if b.repo != branches[0].repo {
			return old, new, fmt.Errorf("pushing %s: not of the checkout of %s", b.opts.PushBranch, branches[0].opts.PushBranch)
		}
		tip, err := b.repo.Reference(plumbing.NewBranchReferenceName(b.opts.PushBranch), true)
		if err != nil {
			return old, new, fmt.Errorf("reading branch %s: %w", b.opts.PushBranch, err)
		}
		return b.pushHead, tip.Hash(), nil
	})
}

// Withdraw puts the push branches of branches, which PushAll pushed, back
// where their checkouts found them, and deletes those it created, each
// only while it still holds what PushAll pushed, in one session, whether
// or not the base moved since: for branches whose pull requests the run
// could not bring up to date, so that no pull request shows a commit its
// description does not speak of.
func Withdraw(ctx context.Context, branches []*Workspace) []error {
	return apply(ctx, branches, false, func(b *Workspace) (old, new plumbing.Hash, err error) {
		if b.pushed.IsZero() {
			return old, new, fmt.Errorf("withdrawing %s: not pushed", b.opts.PushBranch)
		}
		return b.pushed, b.pushHead, nil
	})
}

// apply moves the remote push branch of each of branches from old to new,
// as between gives them, in one session (send), the base checked when
// onBase is set, and returns each branch's outcome.
func apply(ctx context.Context, branches []*Workspace, onBase bool, between func(b *Workspace) (old, new plumbing.Hash, err error)) []error {
	errs := make([]error, len(branches))
	if len(branches) == 0 {
		return errs
	}
	w := branches[0]
	var ups []*update
	var at []int // the index in branches of each of ups
	for i, b := range branches {
		if b.opts.PushBranch == "" {
			errs[i] = errNoBranch
			continue
		}
		if ctx.Err() != nil {
			// A push is never started late; one that has started may
			// finish (PushGrace).
			errs[i] = fmt.Errorf("not pushing %s: %w", b.opts.PushBranch, ctx.Err())
			continue
		}
		u := &update{ws: b, ref: plumbing.NewBranchReferenceName(b.opts.PushBranch)}
		if u.old, u.new, errs[i] = between(b); errs[i] != nil {
			continue
		}
		ups, at = append(ups, u), append(at, i)
	}
	var base plumbing.Hash
	if onBase {
		base = w.baseHead
	}
	pushCtx, cancel := graceContext(ctx, w.opts.Timeout, PushGrace)
	defer cancel()
	err := w.send(pushCtx, base, ups)
	var after map[plumbing.ReferenceName]plumbing.Hash
	if err != nil && !errors.Is(err, ErrStale) {
		// The server may have taken the updates although its answer was
		// lost (a dropped connection, a push cut short): what the remote
		// holds now is the outcome.
		after, _ = w.remoteHeadsAfter(context.WithoutCancel(ctx))
	}
	for j, u := range ups {
		switch {
		case errors.Is(err, ErrStale):
			u.err = err
		case err != nil && after != nil && after[u.ref] == u.new:
			u.err = nil
		case err != nil:
			u.err = fmt.Errorf("pushing %s to %s: %w", u.ws.opts.PushBranch, w.url, err)
		case u.err != nil && !errors.Is(u.err, ErrStale) && rejected(u.err):
			// Moved between the announcement and the update.
			u.err = fmt.Errorf("pushing %s to %s: %w: %w", u.ws.opts.PushBranch, w.url, ErrStale, u.err)
		case u.err != nil && !errors.Is(u.err, ErrStale):
			u.err = fmt.Errorf("pushing %s to %s: %w", u.ws.opts.PushBranch, w.url, u.err)
		}
		if u.err == nil {
			u.ws.pushed = u.new
		}
		errs[at[j]] = redactErr(u.err, w.opts)
	}
	return errs
}

// PushGrace is how long a push that has started may go on after the run's
// context is cancelled (a SIGTERM), so that the job reports the outcome
// instead of leaving the remote in a state it does not know. It is below
// Kubernetes' default termination grace period of 30s.
const PushGrace = 20 * time.Second

// graceContext returns a context bounded by timeout that outlives ctx's
// cancellation by grace, no more.
func graceContext(ctx context.Context, timeout, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-out.Done():
		}
	})
	return out, func() {
		stop()
		cancel()
	}
}

// remoteHeadsAfter lists the remote's branches after a push whose
// answer was lost, with a short deadline of its own.
func (w *Workspace) remoteHeadsAfter(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	ctx, cancel := context.WithTimeout(ctx, min(w.opts.Timeout, PushGrace))
	defer cancel()
	return w.remoteHeads(ctx)
}

// rejected reports whether a push failed because the remote ref moved.
// go-git reports a refused lease and a refused non-fast-forward as text
// only, without a sentinel error.
func rejected(err error) bool {
	if errors.Is(err, git.ErrNonFastForwardUpdate) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") ||
		strings.Contains(msg, "stale info") || strings.Contains(msg, "failed to update ref")
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}

func (w *Workspace) remoteHeads(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	listCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{w.url}})
	refs, err := remote.ListContext(listCtx, &git.ListOptions{Auth: w.auth})
	if err != nil {
		return nil, redactErr(fmt.Errorf("listing branches of %s: %w", w.url, err), w.opts)
	}
	heads := make(map[plumbing.ReferenceName]plumbing.Hash, len(refs))
	for _, r := range refs {
		if r.Name().IsBranch() {
			heads[r.Name()] = r.Hash()
		}
	}
	return heads, nil
}
