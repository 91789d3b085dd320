package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/recommend-job/recommend-job/internal/corrections"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// WatchReader reads what the containers of a namespace's workloads did
// since a time; usage.Reader is one.
type WatchReader interface {
	ReadWatch(ctx context.Context, namespace string, workloads []usage.WorkloadRef, since time.Time) (map[usage.WorkloadRef]map[string]*usage.Watched, error)
}

// regressionGroupPrefix starts the group of an item whose change
// regressed: its correction goes to a pull request of its own.
const regressionGroupPrefix = "regression/"

// verifyMerged finds the job's recorded changes on the base branch
// (verify.ReadMerged, which doctor reads too: the record is the only
// evidence), watches those the cluster runs, and puts into p what it saw:
// each item's watches, the correction of a regressed change in place of
// the container's recommendations, and, for a container whose correction
// was merged, recommendations no lower than it. Changes older than the
// watch period and the history window are not watched; corrections are
// kept while they hold (verify.Holds). A namespace whose history cannot
// be read is logged and its changes are left pending; nothing else is
// held by it.
func verifyMerged(ctx context.Context, cfg *run, p *plan.Plan, reader WatchReader, log *slog.Logger) error {
	th := cfg.Verify.WithDefaults()
	now := time.Now()
	m, err := verify.ReadMerged(ctx, cfg.Record, cfg.Git, cfg.Forge, th, now)
	if err != nil {
		return err
	}
	merged := m.Read
	cfg.ledger.learnt(m.Pushed, merged)
	latest := m.Latest
	byItem := map[string][]gitops.RecordedChange{}
	since := map[string]time.Time{} // per namespace, the oldest change watched
	for _, c := range latest {
		byItem[c.Item] = append(byItem[c.Item], c)
	}
	workloads := map[string][]usage.WorkloadRef{}
	for i := range p.Items {
		it := &p.Items[i]
		if !it.Valid || len(byItem[it.Key()]) == 0 {
			continue
		}
		ref := usage.WorkloadRef{Kind: it.Target.Kind, Namespace: it.Namespace, Name: it.Target.Name}
		for _, c := range byItem[it.Key()] {
			if !m.Watched(c) {
				continue
			}
			if s, ok := since[it.Namespace]; !ok || c.Time.Before(s) {
				since[it.Namespace] = c.Time
			}
			if !slices.Contains(workloads[it.Namespace], ref) {
				workloads[it.Namespace] = append(workloads[it.Namespace], ref)
			}
		}
	}
	watched := map[usage.WorkloadRef]map[string]*usage.Watched{}
	var unread []string
	defer func() {
		var why []string
		if len(merged.Unresolved) > 0 {
			why = append(why, "cannot tell whether some of the job's pull requests were merged: "+errors.Join(merged.Unresolved...).Error())
		}
		if len(unread) > 0 {
			why = append(why, "cannot read what followed the merged changes in namespaces "+strings.Join(unread, ", "))
		}
		p.Unverified = strings.Join(why, "; ")
	}()
	for _, ns := range slices.Sorted(maps.Keys(workloads)) {
		// A period before the oldest change is compared against.
		got, err := reader.ReadWatch(ctx, ns, workloads[ns], since[ns].Add(-th.Period-time.Hour))
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.WarnContext(ctx, "cannot read what followed the merged changes", "namespace", ns, "error", err)
			unread = append(unread, ns)
			continue
		}
		for ref, containers := range got {
			watched[ref] = containers
		}
	}
	for i := range p.Items {
		it := &p.Items[i]
		if !it.Valid {
			continue
		}
		ref := usage.WorkloadRef{Kind: it.Target.Kind, Namespace: it.Namespace, Name: it.Target.Name}
		for _, c := range byItem[it.Key()] {
			r := corrections.Resource(it, c.Container, c.Resource)
			if r == nil {
				continue
			}
			if !m.Watched(c) {
				corrections.Unwatched(r, c, now)
				continue
			}
			var w *usage.Watched
			if containers, ok := watched[ref]; ok {
				w = containers[c.Container]
				if w == nil {
					w = &usage.Watched{}
				}
			}
			watch := verify.Check(c, verify.Live{Request: r.Current, Limit: r.LiveLimit}, w, now, th)
			it.Watches = append(it.Watches, watch)
			corrections.Watched(it, c, r, watch)
		}
		if it.Regressed() {
			it.Group = regressionGroupPrefix + it.Key()
		}
	}
	return nil
}

// writeApart writes the changes of a run that does not group them: the
// corrections of regressed items each on a group branch and pull request
// of their own, flagged as such, and everything else on the run's branch.
func writeApart(ctx context.Context, cfg *run, p *plan.Plan, log *slog.Logger) error {
	var rest, regressed []int
	for i := range p.Items {
		if p.Items[i].Regressed() {
			regressed = append(regressed, i)
		} else {
			rest = append(rest, i)
		}
	}
	sub := func(indices []int) *plan.Plan {
		s := &plan.Plan{DryRun: p.DryRun, Unverified: p.Unverified, Items: make([]plan.Item, len(indices))}
		for j, i := range indices {
			s.Items[j] = p.Items[i]
		}
		return s
	}
	back := func(s *plan.Plan, indices []int) {
		for j, i := range indices {
			p.Items[i] = s.Items[j]
		}
	}
	main, apart := sub(rest), sub(regressed)
	err := writeBranch(ctx, cfg, main, cfg.ownBranch(), log)
	back(main, rest)
	p.Git = main.Git
	if ctx.Err() != nil {
		return err
	}
	gerr := writeGroups(ctx, cfg, apart, log)
	back(apart, regressed)
	p.Groups = apart.Groups
	sumGroups(p)
	return errors.Join(err, gerr)
}

// closeSettledRegressions closes the pull requests of the regression
// groups of the plan's items in a run that has no regression to correct,
// when it checked every merged change: what they correct no longer
// regressed (the live request moved, or the change left the watch), and a
// run that groups nothing would otherwise never look at their branches
// again. A branch is matched by the exact group of an item, never by a
// prefix another group's name could share. Each closed pull request is a
// group of the plan.
func closeSettledRegressions(ctx context.Context, cfg *run, p *plan.Plan, log *slog.Logger) error {
	if p.Incomplete() {
		return nil
	}
	branches, err := gitops.GroupBranches(ctx, cfg.Git)
	if err != nil {
		return fmt.Errorf("listing the group branches: %w", err)
	}
	names := map[string]string{}
	for i := range p.Items {
		name := regressionGroupPrefix + p.Items[i].Key()
		names[cfg.Git.GroupBranch(name)] = name
	}
	for _, b := range branches {
		name, ok := names[b]
		if !ok {
			continue
		}
		pr, err := forge.CloseOpenPullRequest(ctx, cfg.Forge, b, cfg.Git.BaseBranch, closedBecause(whySettled))
		if err != nil {
			return fmt.Errorf("closing the pull request of %s: %w", b, err)
		}
		if pr == nil {
			continue
		}
		log.InfoContext(ctx, "the regression is settled: closed its pull request", "group", name, "url", pr.URL, "number", pr.Number)
		p.Groups = append(p.Groups, plan.Group{Name: name, Git: &plan.Git{Branch: b, PullRequest: pr}})
	}
	return nil
}

// whySettled is what the body of a closed regression pull request says.
const whySettled = "the regression is settled: no merged change of the job needs this correction any more."

// hasRegression reports whether an item of p has a regressed change to
// correct.
func hasRegression(p *plan.Plan) bool {
	for i := range p.Items {
		if p.Items[i].Regressed() {
			return true
		}
	}
	return false
}
