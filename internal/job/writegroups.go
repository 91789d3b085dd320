package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
)

// writeGroups writes each group's changes on the group's own branch
// (gitops.Options.GroupBranch) and syncs its own pull request, as writeBranch
// does for a run: created, updated in place, or closed when the group has
// nothing left to change. A group without changes is not checked out; the
// pull request of a group branch that no group of this run has any more
// is closed too, unless the run lacked history for some items, which says
// nothing about their groups.
//
// A group with an open pull request is always brought up to date. One
// without waits, and says why in the plan, while a person's closing of its
// last pull request holds (its values moved less than the change
// threshold since, and pr-closed-hold has not passed), or while opening it
// would pass pr-limit (open pull requests of the job) or pr-per-run (new
// ones this run); the groups that save the most go first. The groups are
// staged from one checkout and pushed together, pushBatch at a time, before
// their pull requests are synced (finishGroups). One group's failure does
// not stop the others; the run's error joins them.
func writeGroups(ctx context.Context, cfg *run, p *plan.Plan, log *slog.Logger) error {
	var f forge.Forge
	if cfg.pullRequests() {
		f = cfg.Forge
	}
	open, err := openGroupBranches(ctx, cfg.Git, f) // head branches of the job's open pull requests
	if err != nil {
		return err
	}
	var todo []pendingGroup
	var quiet []string // branches of groups with nothing to change
	for _, g := range groupItems(p, cfg.GroupBy) {
		sub := &plan.Plan{DryRun: p.DryRun, Items: make([]plan.Item, len(g.items))}
		keys := make([]string, len(g.items))
		for j, i := range g.items {
			p.Items[i].Group = g.name
			sub.Items[j] = p.Items[i]
			keys[j] = p.Items[i].Key()
		}
		branch := cfg.Git.GroupBranch(g.name)
		p.Groups = append(p.Groups, plan.Group{Name: g.name, Items: keys})
		if changeCount(sub) == 0 {
			if !sub.Incomplete() {
				quiet = append(quiet, branch)
			}
			continue
		}
		p.Groups[len(p.Groups)-1].Savings = savingsOf(sub.Items)
		todo = append(todo, pendingGroup{group: g, sub: sub, result: len(p.Groups) - 1, branch: branch})
	}
	// Open pull requests first, then by savings, largest first.
	slices.SortStableFunc(todo, func(x, y pendingGroup) int {
		if ox, oy := open[x.branch], open[y.branch]; ox != oy {
			if ox {
				return -1
			}
			return 1
		}
		return cmp.Compare(p.Groups[y.result].Savings, p.Groups[x.result].Savings)
	})
	var errs []error
	if f != nil {
		// Quiet groups go first, so that the slots their pull requests
		// held are free for the groups that wait.
		closed, err := closeQuietGroups(ctx, cfg.Config, p, f, quiet, log)
		if err != nil {
			errs = append(errs, err)
		}
		for _, b := range closed {
			delete(open, b)
		}
	}
	// Every group is written from one clone and one index of the base.
	from := &groupCheckout{}
	defer from.drop()
	for _, t := range todo {
		from.branches = append(from.branches, t.branch)
		from.changes = append(from.changes, changesOf(t.sub)...)
	}
	// Open ones come first in todo: those whose branches end up without
	// changes are closed, and free their slots, before any group waits.
	pace := &pacing{opened: len(open)}
	var batch []*groupWrite
	for _, t := range todo {
		if ctx.Err() != nil {
			break
		}
		result := &p.Groups[t.result]
		if f != nil {
			wait, err := pace.waits(ctx, cfg, f, open[t.branch], t.branch, t.group.name, t.sub, result)
			if err != nil {
				errs = append(errs, fmt.Errorf("group %s: %w", t.group.name, err))
				continue
			}
			if wait {
				log.InfoContext(ctx, "group waits", "group", t.group.name, "branch", t.branch, "held", result.Held, "waiting", result.Waiting)
				continue
			}
		}
		w := &groupWrite{pendingGroup: t, opts: cfg.Git.OnBranch(t.branch)}
		from.stage(ctx, cfg, w, 1, log)
		if f != nil && w.err == nil {
			pace.expect(open[t.branch], w.res, t.sub)
		}
		if batch = append(batch, w); len(batch) == pushBatch {
			errs = append(errs, finishGroups(ctx, cfg, p, from, batch, pace, log)...)
			batch = nil
		}
	}
	errs = append(errs, finishGroups(ctx, cfg, p, from, batch, pace, log)...)
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// pushBatch is how many groups' branches a push carries at most: one
// session for many branches saves each its round trips and the server's
// processes, and a run cut short by its deadline still lands the batches
// it pushed.
const pushBatch = 64

// pendingGroup is a group of the run with changes to write: its items,
// their plan, its index in the plan's groups and its branch.
type pendingGroup struct {
	group  group
	sub    *plan.Plan
	result int
	branch string
}

// finishGroups pushes the staged groups of writes together, then syncs
// their pull requests in order, and returns the groups' errors. Once the
// forge's rate limit stops the run's calls to it, the groups whose pull
// requests were not brought up to date wait, their branches put back.
func finishGroups(ctx context.Context, cfg *run, p *plan.Plan, from *groupCheckout, writes []*groupWrite, pace *pacing, log *slog.Logger) []error {
	from.push(ctx, cfg, writes, log)
	var errs []error
	var unsynced []*groupWrite
	for _, w := range writes {
		result := &p.Groups[w.result]
		log := log.With("group", w.group.name, "branch", w.branch)
		err := w.err
		switch {
		case err != nil:
			err = stopped(ctx, err, w.attempt, w.opts, w.sub, log)
		case pace.limited != "":
			result.Waiting = pace.limited
			if w.sub.Git.Pushed {
				unsynced = append(unsynced, w)
			}
		default:
			b := branch{name: w.branch, title: groupTitle(cfg.Git, cfg.Path, w.group.name), closeWhenEmpty: true}
			err = syncPullRequest(ctx, cfg, w.sub, b, w.opts, w.res, log)
			if errors.Is(err, forge.ErrRateLimited) {
				pace.limited = rateLimited(err)
				result.Waiting = pace.limited
				log.WarnContext(ctx, "the forge's rate limit stops the pull requests of this run", "error", err)
				if w.sub.Git.Pushed && w.sub.Git.PullRequest == nil {
					unsynced = append(unsynced, w)
				}
				err = nil
			}
		}
		if err != nil {
			log.ErrorContext(ctx, "group not written", "error", err)
			errs = append(errs, fmt.Errorf("group %s: %w", w.group.name, err))
		}
	}
	withdraw(ctx, cfg, unsynced, log)
	for _, w := range writes {
		for j, i := range w.group.items {
			p.Items[i] = w.sub.Items[j]
		}
		p.Groups[w.result].Git = w.sub.Git
	}
	return errs
}

// pacing is what a run's groups have done to the forge so far: the job's
// open pull requests, those it created, and, once the forge's rate limit
// stopped its calls, why.
type pacing struct {
	opened, created int
	limited         string
}

// waits says whether a group waits this run, with the reason set in
// result: the forge's rate limit, pr-limit and pr-per-run for one without
// an open pull request, or a person's closing of its last pull request
// (held). The limits come first: a group that waits on them costs the
// forge no call, where asking after its last closed pull request would
// cost one a group. A correction of what regressed waits for no limit.
func (pc *pacing) waits(ctx context.Context, cfg *run, f forge.Forge, open bool, branch, name string, sub *plan.Plan, result *plan.Group) (bool, error) {
	if pc.limited != "" {
		// The forge would have to answer: rate limited is not failed.
		result.Waiting = pc.limited
		return true, nil
	}
	if open {
		return false, nil
	}
	switch {
	case strings.HasPrefix(name, regressionGroupPrefix):
	case cfg.PullRequests.Limit > 0 && pc.opened >= cfg.PullRequests.Limit:
		result.Waiting = fmt.Sprintf("pr-limit %d reached", cfg.PullRequests.Limit)
		return true, nil
	case cfg.PullRequests.PerRun > 0 && pc.created >= cfg.PullRequests.PerRun:
		result.Waiting = fmt.Sprintf("pr-per-run %d reached", cfg.PullRequests.PerRun)
		return true, nil
	}
	held, err := closedHold(ctx, cfg.Config, f, branch, sub)
	if errors.Is(err, forge.ErrRateLimited) {
		pc.limited = rateLimited(err)
		result.Waiting = pc.limited
		return true, nil
	}
	if err != nil {
		return false, err
	}
	result.Held = held
	return held != "", nil
}

// expect counts what a staged group's pull request is to do: opened when
// the group's branch holds changes and it has none open, closed when it
// has one open and nothing left to change.
func (pc *pacing) expect(open bool, res attemptResult, sub *plan.Plan) {
	switch {
	case res.hasChanges && !open:
		pc.opened++
		pc.created++
	case !res.hasChanges && open && !sub.Incomplete():
		pc.opened--
	}
}

// rateLimited is what a group waits for once the forge's rate limit
// stopped the run's calls to it.
func rateLimited(err error) string {
	return "the forge's rate limit; the next run goes on (" + err.Error() + ")"
}

// sumGroups makes p.Git say what the run did on every branch, its own
// (p.Git, when it has one) and its groups': a reader of git.pushed is
// right whatever the grouping. Files stay the run's own branch's when it
// has one; a group's pull request body stays in its group.
func sumGroups(p *plan.Plan) {
	sum := p.Git
	if sum == nil {
		sum = &plan.Git{}
	} else {
		c := *sum
		sum = &c
		if sum.Pushed || sum.Commit != "" {
			sum.Branches = []string{sum.Branch}
		}
		if pr := sum.PullRequest; pr != nil {
			sum.PullRequests = []plan.PullRequest{{URL: pr.URL, Number: pr.Number, Action: pr.Action}}
		}
	}
	reached := p.Git != nil
	for _, g := range p.Groups {
		if g.Git == nil {
			continue
		}
		reached = true
		sum.Pushed = sum.Pushed || g.Git.Pushed
		sum.Attempts = max(sum.Attempts, g.Git.Attempts)
		if g.Git.Pushed || g.Git.Commit != "" {
			sum.Branches = append(sum.Branches, g.Git.Branch)
		}
		for _, f := range g.Git.Files {
			if p.Git == nil && !slices.Contains(sum.Files, f) {
				sum.Files = append(sum.Files, f)
			}
		}
		if pr := g.Git.PullRequest; pr != nil {
			sum.PullRequests = append(sum.PullRequests, plan.PullRequest{URL: pr.URL, Number: pr.Number, Action: pr.Action})
		}
	}
	if reached {
		slices.Sort(sum.Files)
		p.Git = sum
	}
}

// openGroupBranches returns the head branches of the job's open pull
// requests, none without a forge.
func openGroupBranches(ctx context.Context, git gitops.Options, f forge.Forge) (map[string]bool, error) {
	open := map[string]bool{}
	if f == nil {
		return open, nil
	}
	prs, err := f.ListOpen(ctx, git.BaseBranch, git.GroupHeadPrefix())
	if err != nil {
		return nil, fmt.Errorf("listing the open pull requests: %w", err)
	}
	for _, pr := range prs {
		// The prefix is also that of a job whose push branch starts
		// with this one's.
		if git.IsGroupBranch(pr.Head) {
			open[pr.Head] = true
		}
	}
	return open, nil
}

// groupTitle is the title of a group's pull request, which names the
// cluster as its branch does.
func groupTitle(git gitops.Options, path, name string) string {
	title := markdown.OfCluster(markdown.GroupPullRequestTitle(git.BaseBranch, path, name), path, git.Cluster)
	if strings.HasPrefix(name, regressionGroupPrefix) {
		title = "Regression: " + title
	}
	return title
}

// closedHold says why a group without an open pull request waits, or "":
// a person who may write to the repository closed the job's last pull
// request of the group without merging it, less than pr-closed-hold ago,
// and the values the run would propose are within the change threshold
// of those it proposed then. Pull requests that another account opened
// from the group's branch neither hold the group nor release it, and a
// closing by someone without write access holds nothing.
func closedHold(ctx context.Context, cfg Config, f forge.Forge, branch string, sub *plan.Plan) (string, error) {
	hold := cfg.PullRequests.ClosedHold
	if hold <= 0 {
		return "", nil
	}
	self, err := f.Self(ctx)
	if err != nil {
		return "", fmt.Errorf("finding the job's account on the forge: %w", err)
	}
	pr, err := f.LastClosed(ctx, branch, cfg.Git.BaseBranch, self)
	if err != nil {
		return "", fmt.Errorf("finding its last closed pull request: %w", err)
	}
	if pr == nil || time.Since(pr.ClosedAt) > hold {
		return "", nil
	}
	before := markdown.ParseProposed(pr.Body)
	if before == nil {
		// The job's own closing drops the values: nothing to hold.
		return "", nil
	}
	threshold := cfg.Algorithm.ChangeThreshold
	if threshold == 0 {
		threshold = recommend.DefaultChangeThreshold
	}
	if markdown.ProposedOf(sub).Moved(before, threshold) {
		return "", nil
	}
	// Who closed it is asked only of a closing that would hold.
	closer, writer, err := f.Closer(ctx, pr.Number)
	if err != nil {
		return "", fmt.Errorf("finding who closed pull request %d: %w", pr.Number, err)
	}
	if !writer {
		return "", nil
	}
	return fmt.Sprintf("pull request #%d was closed without merging by %s on %s; its values moved less than %.0f%% since, and it holds until %s",
		pr.Number, closer, pr.ClosedAt.UTC().Format(time.DateOnly), threshold*100, pr.ClosedAt.Add(hold).UTC().Format(time.DateOnly)), nil
}

// closeQuietGroups closes the open pull requests of the job's group
// branches on the remote whose groups have nothing to change: groups of
// this run without changes, and, when every item had its history, groups
// no item of this run belongs to any more. It returns the branches whose
// pull requests it closed.
func closeQuietGroups(ctx context.Context, cfg Config, p *plan.Plan, f forge.Forge, quiet []string, log *slog.Logger) ([]string, error) {
	branches, err := gitops.GroupBranches(ctx, cfg.Git)
	if err != nil {
		return nil, err
	}
	var closed []string
	active := map[string]bool{}
	for _, g := range p.Groups {
		active[cfg.Git.GroupBranch(g.Name)] = true
	}
	for _, b := range branches {
		gone := !active[b] && !p.Incomplete()
		if !gone && !slices.Contains(quiet, b) {
			continue
		}
		why := whyNothingLeft
		if gone {
			why = "no ResourceRecommend of the run belongs to this group any more."
		}
		pr, err := forge.CloseOpenPullRequest(ctx, f, b, cfg.Git.BaseBranch, closedBecause(why))
		if err != nil {
			return closed, fmt.Errorf("closing the pull request of %s: %w", b, err)
		}
		if pr == nil {
			continue
		}
		closed = append(closed, b)
		log.InfoContext(ctx, "nothing to change in the group: closed its pull request", "branch", b, "url", pr.URL, "number", pr.Number)
		for i := range p.Groups {
			if cfg.Git.GroupBranch(p.Groups[i].Name) == b {
				p.Groups[i].Git = &plan.Git{Branch: b, PullRequest: pr}
			}
		}
	}
	return closed, nil
}
