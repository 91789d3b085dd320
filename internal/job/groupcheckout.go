package job

import (
	"context"
	"fmt"
	"log/slog"

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

// groupWrite is one group's write in a run: staged (rendered and
// committed) in the groups' checkout, pushed with the other groups'
// branches, then its pull request synced.
type groupWrite struct {
	pendingGroup
	opts    gitops.Options
	attempt int
	res     attemptResult
	err     error
	// ws is the checkout on the group's branch its last attempt staged.
	ws *gitops.Workspace
}

// stage renders and commits w's changes on its branch, in the checkout.
func (g *groupCheckout) stage(ctx context.Context, cfg *run, w *groupWrite, attempt int, log *slog.Logger) {
	w.attempt, w.res, w.ws = attempt, attemptResult{}, nil
	ws, err := g.on(ctx, cfg, w.branch)
	if err != nil {
		w.err = fmt.Errorf("checking out the repository: %w", err)
		return
	}
	changes := changesOf(w.sub)
	apply := func(ctx context.Context) (*render.Outcome, error) { return g.apply(ctx, cfg, changes) }
	w.ws = ws
	w.res, w.err = stage(ctx, cfg, w.opts, ws, apply, attempt, changes, w.sub, log.With("group", w.group.name, "branch", w.branch))
}

// push pushes the staged branches of writes in one session a round
// (gitops.PushAll): a group whose branch or base moved is staged again
// from a fresh clone, and pushed in the next round, while it has attempts
// left.
func (g *groupCheckout) push(ctx context.Context, cfg *run, writes []*groupWrite, log *slog.Logger) {
	for {
		var batch []*groupWrite
		var branches []*gitops.Workspace
		for _, w := range writes {
			if w.err == nil && w.res.toPush {
				batch, branches = append(batch, w), append(branches, w.ws)
			}
		}
		if len(batch) == 0 {
			return
		}
		if cfg.beforePush != nil {
			cfg.beforePush(batch[0].attempt)
		}
		errs := gitops.PushAll(ctx, branches)
		var stale []*groupWrite
		for i, w := range batch {
			w.err = errs[i]
			log := log.With("group", w.group.name)
			switch {
			case errs[i] == nil:
				pushedAs(ctx, w.sub, &w.res, w.attempt, log)
			case again(ctx, errs[i], w.attempt, w.opts, w.sub, log):
				stale = append(stale, w)
			}
		}
		if len(stale) > 0 {
			// The base, or a branch, moved: the groups written again
			// start from a fresh clone.
			g.drop()
		}
		for _, w := range stale {
			w.err = nil
			g.stage(ctx, cfg, w, w.attempt+1, log)
		}
	}
}

// withdraw puts back the branches of writes that were pushed, whose pull
// requests the run did not bring up to date (gitops.Withdraw): the report
// then says they wait, with nothing pushed. A branch that could not be
// put back stays pushed, and recorded as the job's.
func withdraw(ctx context.Context, cfg *run, writes []*groupWrite, log *slog.Logger) {
	if len(writes) == 0 {
		return
	}
	branches := make([]*gitops.Workspace, len(writes))
	for i, w := range writes {
		branches[i] = w.ws
	}
	errs := gitops.Withdraw(ctx, branches)
	for i, w := range writes {
		if errs[i] != nil {
			log.WarnContext(ctx, "pushed branch not put back", "group", w.group.name, "branch", w.branch, "error", errs[i])
			if !cfg.ledger.holds(w.branch, w.res.commit) {
				cfg.ledger.pushed(w.res.commit, w.branch, nil, w.sub)
			}
			continue
		}
		cfg.ledger.withdrawn(w.branch, w.res.commit)
		w.sub.Git.Commit, w.sub.Git.Pushed = "", false
		unchangedOnBranch(w.sub)
		log.InfoContext(ctx, "pushed branch put back: its pull request waits", "group", w.group.name, "branch", w.branch)
	}
}
