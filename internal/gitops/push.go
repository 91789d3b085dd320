package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// send updates ref on the remote from the push branch's tip, as Checkout
// saw it, to tip, in one receive-pack session: it pushes nothing when the
// base or the branch is not where Checkout saw them (ErrStale), and the
// remote applies the update only if the branch is still there (its old
// value is in the command). The pack holds the objects tip adds to its
// parent, which the remote has: found by comparing their trees, with no
// walk of everything the base reaches, which go-git's push makes and which
// would cost every branch of a run the whole repository.
func (w *Workspace) send(ctx context.Context, ref plumbing.ReferenceName, tip plumbing.Hash) error {
	ep, err := transport.NewEndpoint(w.url)
	if err != nil {
		return err
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, w.auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return err
	}
	base := plumbing.NewBranchReferenceName(w.opts.BaseBranch)
	now := func(name plumbing.ReferenceName) plumbing.Hash {
		if r, err := refs.Reference(name); err == nil {
			return r.Hash()
		}
		return plumbing.ZeroHash
	}
	if h := now(base); h != w.baseHead {
		return fmt.Errorf("base branch %s moved from %s to %s: %w", w.opts.BaseBranch, short(w.baseHead), short(h), ErrStale)
	}
	old := now(ref)
	if old != w.pushHead {
		return fmt.Errorf("push branch %s moved from %s to %s: %w", w.opts.PushBranch, short(w.pushHead), short(old), ErrStale)
	}
	if old == tip {
		return nil
	}
	objects, err := w.added(tip)
	if err != nil {
		return fmt.Errorf("packing %s: %w", tip, err)
	}
	var pack bytes.Buffer
	if _, err := packfile.NewEncoder(&pack, w.repo.Storer, !ar.Capabilities.Supports(capability.OFSDelta)).Encode(objects, 10); err != nil {
		return fmt.Errorf("packing %s: %w", tip, err)
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: tip}}
	req.Packfile = io.NopCloser(&pack)
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return err
	}
	if rs != nil {
		return rs.Error()
	}
	return nil
}

// added returns the objects commit adds to its parent: itself, the trees
// that differ from the parent's and the blobs new to them.
func (w *Workspace) added(hash plumbing.Hash) ([]plumbing.Hash, error) {
	c, err := w.repo.CommitObject(hash)
	if err != nil {
		return nil, err
	}
	var parentTree plumbing.Hash
	if c.NumParents() > 0 {
		p, err := w.repo.CommitObject(c.ParentHashes[0])
		if err != nil {
			return nil, err
		}
		parentTree = p.TreeHash
	}
	out := []plumbing.Hash{hash}
	return out, w.addedTrees(c.TreeHash, parentTree, &out)
}

// addedTrees appends tree and what it holds that before, the same
// directory in the parent (zero: none), does not.
func (w *Workspace) addedTrees(tree, before plumbing.Hash, out *[]plumbing.Hash) error {
	if tree == before {
		return nil
	}
	*out = append(*out, tree)
	t, err := object.GetTree(w.repo.Storer, tree)
	if err != nil {
		return err
	}
	was := map[string]object.TreeEntry{}
	if !before.IsZero() {
		b, err := object.GetTree(w.repo.Storer, before)
		if err != nil {
			return err
		}
		for _, e := range b.Entries {
			was[e.Name] = e
		}
	}
	for _, e := range t.Entries {
		prev, ok := was[e.Name]
		if ok && prev.Hash == e.Hash && prev.Mode == e.Mode {
			continue
		}
		switch e.Mode {
		case filemode.Submodule:
			// A commit of another repository: not an object of this one.
		case filemode.Dir:
			var sub plumbing.Hash
			if ok && prev.Mode == filemode.Dir {
				sub = prev.Hash
			}
			if err := w.addedTrees(e.Hash, sub, out); err != nil {
				return err
			}
		default:
			if !ok || prev.Hash != e.Hash {
				*out = append(*out, e.Hash)
			}
		}
	}
	return nil
}
