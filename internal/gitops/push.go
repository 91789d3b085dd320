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

// update is one branch of a push: the workspace that committed it, its
// ref, the value the remote must hold for the update to apply (the lease)
// and the new one; err is its outcome.
type update struct {
	ws       *Workspace
	ref      plumbing.ReferenceName
	old, new plumbing.Hash
	err      error
}

// send applies ups on the remote in one receive-pack session: it pushes
// nothing when the base is not at base, unless that is zero (ErrStale,
// for the session), nor an update whose branch is not at its old value
// (ErrStale, that update's), and the remote applies each update only if
// its branch is still there (the old value is in the command). The pack
// holds the objects each new tip the job committed adds to its parent,
// which the remote has: found by comparing their trees, with no walk of
// everything the base reaches, which go-git's push makes and which would
// cost every branch of a run the whole repository. The remote's answer
// is each update's err; the error returned is the session's.
func (w *Workspace) send(ctx context.Context, base plumbing.Hash, ups []*update) error {
	if len(ups) == 0 {
		return nil
	}
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
	now := func(name plumbing.ReferenceName) plumbing.Hash {
		if r, err := refs.Reference(name); err == nil {
			return r.Hash()
		}
		return plumbing.ZeroHash
	}
	if h := now(plumbing.NewBranchReferenceName(w.opts.BaseBranch)); !base.IsZero() && h != base {
		return fmt.Errorf("base branch %s moved from %s to %s: %w", w.opts.BaseBranch, short(base), short(h), ErrStale)
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	var objects []plumbing.Hash
	packed := map[plumbing.Hash]bool{}
	sent := map[plumbing.ReferenceName]*update{}
	deletes := 0
	for _, u := range ups {
		if now := now(u.ref); now != u.old {
			u.err = fmt.Errorf("push branch %s moved from %s to %s: %w", u.ws.opts.PushBranch, short(u.old), short(now), ErrStale)
			continue
		}
		if u.old == u.new {
			continue
		}
		// The checkout holds the objects of its own commits only; a
		// branch put back to where it was needs none.
		if u.new != u.ws.pushHead {
			added, err := w.added(u.new)
			if err != nil {
				u.err = fmt.Errorf("packing %s: %w", u.new, err)
				continue
			}
			for _, h := range added {
				if !packed[h] {
					packed[h] = true
					objects = append(objects, h)
				}
			}
		}
		if u.new.IsZero() {
			deletes++
		}
		req.Commands = append(req.Commands, &packp.Command{Name: u.ref, Old: u.old, New: u.new})
		sent[u.ref] = u
	}
	if len(req.Commands) == 0 {
		return nil
	}
	if deletes < len(req.Commands) {
		// Only a request of deletions goes without a pack.
		var pack bytes.Buffer
		if _, err := packfile.NewEncoder(&pack, w.repo.Storer, !ar.Capabilities.Supports(capability.OFSDelta)).Encode(objects, 10); err != nil {
			return fmt.Errorf("packing: %w", err)
		}
		req.Packfile = io.NopCloser(&pack)
	}
	rs, err := sess.ReceivePack(ctx, req)
	if rs == nil {
		return err
	}
	// The remote's report says how each update went; err is its first
	// failure.
	if err := rs.Error(); err != nil && rs.UnpackStatus != "ok" {
		return err
	}
	for _, cs := range rs.CommandStatuses {
		if u := sent[cs.ReferenceName]; u != nil {
			u.err = cs.Error()
			delete(sent, cs.ReferenceName)
		}
	}
	if len(sent) > 0 {
		// Taken or not, the remote did not say: the caller reads what
		// it holds.
		return fmt.Errorf("the remote's report leaves out %d of the %d updates", len(sent), len(req.Commands))
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
