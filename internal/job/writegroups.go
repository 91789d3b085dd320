package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// writeGroups writes each group's changes on the group's own branch
// (gitops.GroupBranch) and syncs its own pull request, as writeBranch
// does for a run: created, updated in place, or closed when the group has
// nothing left to change. A group without changes is not checked out; the
// pull request of a group branch that no group of this run has any more
// is closed too, unless the run lacked history for some items, which says
// nothing about their groups. One group's failure does not stop the
// others; the run's error joins them.
func writeGroups(ctx context.Context, cfg Config, p *plan.Plan, log *slog.Logger) error {
	var forge gitops.Forge
	if cfg.Git.Forge.Enabled() && !cfg.DryRun {
		var err error
		if forge, err = gitops.NewForge(cfg.Git.Forge, cfg.Git.URL); err != nil {
			return err
		}
	}
	var errs []error
	var quiet []string // branches of groups with nothing to change
	for _, g := range groupItems(p, cfg.GroupBy) {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		sub := &plan.Plan{DryRun: p.DryRun, Items: make([]plan.Item, len(g.items))}
		keys := make([]string, len(g.items))
		for j, i := range g.items {
			p.Items[i].Group = g.name
			sub.Items[j] = p.Items[i]
			keys[j] = p.Items[i].Key()
		}
		gcfg := cfg
		gcfg.Git.PushBranch = gitops.GroupBranch(cfg.Git.PushBranch, g.name)
		// A group's pull request goes when its changes do.
		gcfg.Git.Forge.CloseWhenEmpty = true
		result := plan.Group{Name: g.name, Items: keys}
		if len(changesOf(sub)) == 0 {
			if !sub.Incomplete() {
				quiet = append(quiet, gcfg.Git.PushBranch)
			}
			p.Groups = append(p.Groups, result)
			continue
		}
		log := log.With("group", g.name, "branch", gcfg.Git.PushBranch)
		err := writeBranch(ctx, gcfg, sub, gitops.GroupPullRequestTitle(cfg.Git.BaseBranch, cfg.Path, g.name), log)
		for j, i := range g.items {
			p.Items[i] = sub.Items[j]
		}
		result.Git = sub.Git
		p.Groups = append(p.Groups, result)
		if err != nil {
			log.ErrorContext(ctx, "group not written", "error", err)
			errs = append(errs, fmt.Errorf("group %s: %w", g.name, err))
		}
	}
	if forge != nil {
		if err := closeQuietGroups(ctx, cfg, p, forge, quiet, log); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeQuietGroups closes the open pull requests of the job's group
// branches on the remote whose groups have nothing to change: groups of
// this run without changes, and, when every item had its history, groups
// no item of this run belongs to any more.
func closeQuietGroups(ctx context.Context, cfg Config, p *plan.Plan, forge gitops.Forge, quiet []string, log *slog.Logger) error {
	branches, err := gitops.GroupBranches(ctx, cfg.Git, cfg.Git.PushBranch)
	if err != nil {
		return err
	}
	active := map[string]bool{}
	for _, g := range p.Groups {
		active[gitops.GroupBranch(cfg.Git.PushBranch, g.Name)] = true
	}
	for _, b := range branches {
		gone := !active[b] && !p.Incomplete()
		if !gone && !slices.Contains(quiet, b) {
			continue
		}
		pr, err := gitops.CloseOpenPullRequest(ctx, forge, b, cfg.Git.BaseBranch)
		if err != nil {
			return fmt.Errorf("closing the pull request of %s: %w", b, err)
		}
		if pr == nil {
			continue
		}
		log.InfoContext(ctx, "nothing to change in the group: closed its pull request", "branch", b, "url", pr.URL, "number", pr.Number)
		for i := range p.Groups {
			if gitops.GroupBranch(cfg.Git.PushBranch, p.Groups[i].Name) == b {
				p.Groups[i].Git = &plan.Git{Branch: b, PullRequest: pr}
			}
		}
	}
	return nil
}
