package job

import (
	"context"
	"fmt"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
)

// groupCheckout is the one checkout of the base and the one render session
// a run's groups are written from (gitops.CheckoutBase, render.Prepare):
// the repository is cloned and indexed once, whatever the number of
// groups. Both are made for the first group written, and made again after
// the remote moved under a group or a render left the tree unknown.
type groupCheckout struct {
	// branches are the groups' branches, whose tips are read together;
	// changes every group's changes, which the index is built for.
	branches []string
	changes  []render.Change

	ws      *gitops.Workspace
	session *render.Session
	cleanup func()
}

// on returns the checkout on branch, cloning the base first when there is
// none.
func (g *groupCheckout) on(ctx context.Context, cfg *run, branch string) (*gitops.Workspace, error) {
	if g.ws == nil {
		dir, cleanup, err := workDir(cfg.WorkDir)
		if err != nil {
			return nil, err
		}
		ws, err := gitops.CheckoutBase(ctx, cfg.Git, dir, g.branches)
		if err != nil {
			cleanup()
			return nil, err
		}
		g.ws, g.cleanup = ws, cleanup
	}
	return g.ws.OnBranch(ctx, branch)
}

// apply renders changes, a group's, in the checkout: the session's Apply,
// the session prepared first when there is none.
func (g *groupCheckout) apply(ctx context.Context, cfg *run, changes []render.Change) (*render.Outcome, error) {
	if g.session == nil {
		s, err := render.Prepare(ctx, g.ws.Dir(), cfg.Path, g.changes, cfg.RenderOptions...)
		if err != nil {
			return nil, err
		}
		g.session = s
	}
	out, err := g.session.Apply(ctx, changes)
	if err != nil {
		// The tree holds what it must not: the next group starts afresh.
		g.drop()
	}
	return out, err
}

// drop forgets the checkout and the session, and removes the checkout's
// files: the next group clones again.
func (g *groupCheckout) drop() {
	if g.session != nil {
		_ = g.session.Close() // only releases the directory
	}
	if g.cleanup != nil {
		g.cleanup()
	}
	g.ws, g.session, g.cleanup = nil, nil, nil
}

// checkout returns the checkout of opts for one attempt of writeOnce and
// the function that renders changes in it: a clone of its own, or the
// groups' shared checkout on opts' branch when g is set.
func (g *groupCheckout) checkout(ctx context.Context, cfg *run, opts gitops.Options, changes []render.Change) (*gitops.Workspace, func(context.Context) (*render.Outcome, error), func(), error) {
	if g != nil {
		ws, err := g.on(ctx, cfg, opts.PushBranch)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("checking out the repository: %w", err)
		}
		return ws, func(ctx context.Context) (*render.Outcome, error) { return g.apply(ctx, cfg, changes) }, func() {}, nil
	}
	dir, cleanup, err := workDir(cfg.WorkDir)
	if err != nil {
		return nil, nil, nil, err
	}
	ws, err := gitops.Checkout(ctx, opts, dir)
	if err != nil {
		cleanup()
		return nil, nil, nil, fmt.Errorf("checking out the repository: %w", err)
	}
	return ws, func(ctx context.Context) (*render.Outcome, error) {
		return render.Apply(ctx, ws.Dir(), cfg.Path, changes, cfg.RenderOptions...)
	}, cleanup, nil
}
