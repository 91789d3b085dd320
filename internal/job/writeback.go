package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
)

// writeBack clones the repository, renders the changes and, unless this is
// a dry run, commits and pushes what changed, then opens or updates the
// pull request. The changes are intents (set this container's request to
// that value), not a diff: when the remote moves under the run, it starts
// again from a fresh clone and renders them again, up to Git.Attempts
// times. When the push branch already holds exactly this result, nothing
// is pushed. A dry run stops before the commit and reports the diff and
// the pull request body instead.
func writeBack(ctx context.Context, cfg *run, p *plan.Plan, log *slog.Logger) error {
	if err := knowTips(ctx, cfg); err != nil {
		return err
	}
	var err error
	switch {
	case cfg.GroupBy.Grouped() && !cfg.Git.Direct():
		err = writeGroups(ctx, cfg, p, log)
		sumGroups(p)
	case hasRegression(p) && !cfg.Git.Direct():
		err = writeApart(ctx, cfg, p, log)
	default:
		err = writeBranch(ctx, cfg, p, cfg.ownBranch(), log)
		if err == nil && cfg.pullRequests() && ctx.Err() == nil {
			err = closeSettledRegressions(ctx, cfg, p, log)
		}
	}
	if cfg.PullRequests.Dashboard && cfg.Forge != nil && !cfg.DryRun && ctx.Err() == nil {
		derr := syncDashboard(ctx, cfg, p, log)
		switch {
		case errors.Is(derr, forge.ErrRateLimited):
			// As the groups that wait: not failed, written by the next
			// run the forge answers.
			log.WarnContext(ctx, "the forge's rate limit leaves the dashboard for the next run", "error", derr)
		case derr != nil:
			err = errors.Join(err, derr)
		}
	}
	return err
}

// syncDashboard keeps the job's one dashboard issue up to date: found by
// its marker, which names the push branch and the cluster (the groups it
// lists are the run's, this cluster's), created when there is none,
// updated when its body differs. Any later issue with the marker (two
// runs that raced, a copy) is closed, so that there is never more than
// one.
func syncDashboard(ctx context.Context, cfg *run, p *plan.Plan, log *slog.Logger) error {
	f := cfg.Forge
	title := markdown.OfCluster(markdown.DashboardTitle(cfg.Git.BaseBranch, cfg.Path), cfg.Path, cfg.Git.Cluster)
	key := markdown.DashboardKey(cfg.Git.PushBranch, cfg.Git.Cluster)
	body := markdown.DashboardBody(p, key)
	found, err := f.FindIssues(ctx, markdown.DashboardMarker(key))
	if err != nil {
		return fmt.Errorf("finding the dashboard issue: %w", err)
	}
	var errs []error
	for _, extra := range found[min(1, len(found)):] {
		if err := f.CloseIssue(ctx, extra.Number); err != nil {
			errs = append(errs, fmt.Errorf("closing dashboard issue %d, a second one: %w", extra.Number, err))
			continue
		}
		log.InfoContext(ctx, "closed a second dashboard issue", "url", extra.URL, "number", extra.Number)
	}
	var issue *forge.Issue
	action := plan.PRUnchanged
	switch {
	case len(found) == 0:
		issue, err = f.CreateIssue(ctx, title, body, cfg.PullRequests.Labels)
		action = plan.PRCreated
	case found[0].Title != title || strings.TrimSpace(found[0].Body) != strings.TrimSpace(body):
		issue, err = f.UpdateIssue(ctx, found[0].Number, title, body)
		action = plan.PRUpdated
	default:
		issue = &found[0]
	}
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("writing the dashboard issue: %w", err))...)
	}
	p.Dashboard = &plan.PullRequest{URL: issue.URL, Number: issue.Number, Action: action}
	log.InfoContext(ctx, "dashboard synced", "action", action, "url", issue.URL, "number", issue.Number)
	return errors.Join(errs...)
}

// branch is where writeBranch writes: the run's push branch or a group's,
// the title of its pull request, and whether that pull request is closed
// once the branch has nothing left to change.
type branch struct {
	name, title    string
	closeWhenEmpty bool
}

// ownBranch is the run's push branch.
func (r *run) ownBranch() branch {
	return branch{name: r.Git.PushBranch, title: markdown.PullRequestTitle(r.Git.BaseBranch, r.Path),
		closeWhenEmpty: r.PullRequests.CloseWhenEmpty}
}

// writeBranch writes the changes of p on b and syncs its pull request (see
// writeBack).
func writeBranch(ctx context.Context, cfg *run, p *plan.Plan, b branch, log *slog.Logger) error {
	opts := cfg.Git.OnBranch(b.name)
	// p.Git stays nil until a checkout reached the repository.
	p.Git = nil
	changes := changesOf(p)
	var res attemptResult
	var err error
	attempt := 1
	for ; ; attempt++ {
		res, err = writeOnce(ctx, cfg, opts, attempt, changes, p, log)
		if !again(ctx, err, attempt, opts, p, log) {
			break
		}
	}
	if err != nil {
		return stopped(ctx, err, attempt, opts, p, log)
	}
	return syncPullRequest(ctx, cfg, p, b, opts, res, log)
}

// again says whether a write that failed with err makes another attempt
// from a fresh clone: the remote moved, attempts are left and the run
// goes on. The plan then forgets the rendering of the attempt.
func again(ctx context.Context, err error, attempt int, opts gitops.Options, p *plan.Plan, log *slog.Logger) bool {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = gitops.DefaultAttempts
	}
	if !errors.Is(err, gitops.ErrStale) || attempt >= attempts || ctx.Err() != nil {
		return false
	}
	log.InfoContext(ctx, "the remote moved; rendering again on a fresh clone", "branch", opts.PushBranch, "attempt", attempt, "error", err)
	forgetRendering(p)
	p.Git = &plan.Git{Branch: opts.PushBranch, Attempts: attempt}
	return true
}

// stopped returns err, a write's last, having said in p when it was the
// branch's tip that stopped it.
func stopped(ctx context.Context, err error, attempt int, opts gitops.Options, p *plan.Plan, log *slog.Logger) error {
	if errors.Is(err, gitops.ErrForeignCommit) {
		// The repository was reached: the branch's tip is what stopped it.
		p.Git = &plan.Git{Branch: opts.PushBranch, Attempts: attempt}
		p.Git.Stopped = err.Error()
		log.ErrorContext(ctx, "stopped: the push branch has a commit the job did not make", "branch", opts.PushBranch, "error", err)
	}
	return err
}

// syncPullRequest brings b's pull request in line with what the write of
// p left on its branch (res): opened or updated when the branch holds
// changes, closed when it has nothing left to change; and records the
// commit that holds them.
func syncPullRequest(ctx context.Context, cfg *run, p *plan.Plan, b branch, opts gitops.Options, res attemptResult, log *slog.Logger) error {
	var f forge.Forge
	if cfg.pullRequests() {
		f = cfg.Forge
	}
	switch {
	case opts.Direct():
	case cfg.DryRun:
		if res.hasChanges {
			p.Git.PullRequest = &plan.PullRequest{Action: plan.PRPlanned, Body: pullRequestBody(p)}
		}
	case f == nil:
	case res.hasChanges:
		pr, err := forge.SyncPullRequest(ctx, f, forge.NewPullRequest{
			Head: opts.PushBranch, Base: opts.BaseBranch,
			Title: b.title, Body: pullRequestBody(p),
			Labels: cfg.PullRequests.Labels, Reviewers: reviewersOf(cfg.PullRequests.Reviewers, res.owners, p.Items),
			AllReviewers: res.ownersRead && namespacesRead(p.Items),
		})
		if pr == nil {
			// Pushed all the same: a person may merge the branch.
			cfg.ledger.pushed(res.commit, opts.PushBranch, nil, p)
			return err
		}
		p.Git.PullRequest = pr
		if err != nil {
			log.WarnContext(ctx, "pull request opened without all its labels or reviewers", "url", pr.URL, "error", err)
		}
		log.InfoContext(ctx, "pull request synced", "action", pr.Action, "url", pr.URL, "number", pr.Number)
	case p.Incomplete():
		// Nothing changed because something could not be rendered, read
		// or validated this time: that says nothing about the open pull
		// request, which stays.
	case b.closeWhenEmpty:
		pr, err := forge.CloseOpenPullRequest(ctx, f, opts.PushBranch, opts.BaseBranch, closedBecause(whyNothingLeft))
		if err != nil {
			return err
		}
		if pr != nil {
			p.Git.PullRequest = pr
			log.InfoContext(ctx, "nothing to change: closed the pull request", "url", pr.URL, "number", pr.Number)
		}
	}
	if !cfg.DryRun && res.hasChanges {
		cfg.ledger.pushed(res.commit, opts.PushBranch, p.Git.PullRequest, p)
	}
	if res.upToDate {
		// The pull request and the record above describe what the branch
		// holds; the report says what this run changed, which is nothing.
		unchangedOnBranch(p)
	}
	return nil
}

// unchangedOnBranch reports p's files as unchanged: the push branch already
// held the bytes this run rendered.
func unchangedOnBranch(p *plan.Plan) {
	p.Git.Files = nil
	for i := range p.Items {
		if s := p.Items[i].Source; s != nil {
			s.Changed, s.Method = false, ""
		}
		for j := range p.Items[i].Autoscalers {
			p.Items[i].Autoscalers[j].Changed = false
		}
	}
}

// whyNothingLeft is what the body of a pull request closed for having
// nothing left to change says.
const whyNothingLeft = "nothing in it is left to change: the base branch has its values, or the recommendations are back within the change threshold of what the base branch has."

// closedBecause is the body a pull request the job closes gets, saying
// why (see markdown.ClosedBody).
func closedBecause(why string) func(body string) string {
	return func(body string) string { return markdown.ClosedBody(body, why) }
}

// pullRequestBody is the body of p's pull request, with the hidden line
// that records the values it proposes: once a person closes it, a later
// run reads them to tell whether its own moved since.
func pullRequestBody(p *plan.Plan) string {
	body := markdown.PullRequestBody(p)
	if line := markdown.ProposedOf(p).Line(); line != "" {
		body = strings.TrimRight(body, "\n") + "\n\n" + line + "\n"
	}
	return body
}

// attemptResult is what one attempt leaves for the pull request step.
type attemptResult struct {
	// hasChanges reports that the push branch (pushed now or before)
	// holds changes against the base.
	hasChanges bool
	// owners are the owners the repository's CODEOWNERS gives the
	// changed files; ownersRead says CODEOWNERS, or its absence, was read.
	owners     []string
	ownersRead bool
	// commit is the push branch's commit that holds the changes: pushed
	// now, there already with the same tree, or, while toPush, committed
	// and not pushed yet.
	commit string
	// upToDate reports that the push branch already held the same tree.
	upToDate bool
	// toPush reports that commit waits for its push.
	toPush bool
}

// writeOnce is one attempt on a clone of its own: checkout of opts,
// render, commit, push.
func writeOnce(ctx context.Context, cfg *run, opts gitops.Options, attempt int, changes []render.Change, p *plan.Plan, log *slog.Logger) (attemptResult, error) {
	dir, cleanup, err := workDir(cfg.WorkDir)
	if err != nil {
		return attemptResult{}, err
	}
	defer cleanup()
	ws, err := gitops.Checkout(ctx, opts, dir)
	if err != nil {
		return attemptResult{}, fmt.Errorf("checking out the repository: %w", err)
	}
	apply := func(ctx context.Context) (*render.Outcome, error) {
		return render.Apply(ctx, ws.Dir(), cfg.Path, changes, cfg.RenderOptions...)
	}
	res, err := stage(ctx, cfg, opts, ws, apply, attempt, changes, p, log)
	if err != nil || !res.toPush {
		return res, err
	}
	if cfg.beforePush != nil {
		cfg.beforePush(attempt)
	}
	// A run past its deadline pushes nothing: a push is never started late.
	if ctx.Err() != nil {
		return attemptResult{}, fmt.Errorf("not pushing: %w", context.Cause(ctx))
	}
	if err := ws.Push(ctx); err != nil {
		return attemptResult{}, err
	}
	pushedAs(ctx, p, &res, attempt, log)
	return res, nil
}

// pushedAs records in p and res that res's commit was pushed.
func pushedAs(ctx context.Context, p *plan.Plan, res *attemptResult, attempt int, log *slog.Logger) {
	res.toPush = false
	p.Git.Commit, p.Git.Pushed = res.commit, true
	log.InfoContext(ctx, "pushed", "branch", p.Git.Branch, "commit", res.commit, "files", len(p.Git.Files), "attempt", attempt)
}

// stage is an attempt up to its push, in the checkout ws: render (apply),
// and, unless this is a dry run, commit. res.toPush says the commit is
// for the caller to push; a branch that holds it already is up to date.
func stage(ctx context.Context, cfg *run, opts gitops.Options, ws *gitops.Workspace, apply func(context.Context) (*render.Outcome, error), attempt int, changes []render.Change, p *plan.Plan, log *slog.Logger) (attemptResult, error) {
	p.Git = &plan.Git{Branch: opts.PushBranch, Attempts: attempt}
	var skipped []plan.SkippedFile
	for _, s := range ws.Skipped() {
		skipped = append(skipped, plan.SkippedFile{File: s.Path, Reason: "not checked out: " + s.Reason})
		log.WarnContext(ctx, "path not checked out", "file", s.Path, "reason", s.Reason)
	}
	p.Git.Skipped = skipped
	if len(changes) == 0 {
		log.InfoContext(ctx, "no changes to render")
		return attemptResult{}, nil
	}
	parked := parkEvidence(p)
	out, err := apply(ctx)
	if rerr := parked.restore(p); rerr != nil {
		return attemptResult{}, rerr
	}
	if err != nil {
		return attemptResult{}, fmt.Errorf("rendering: %w", err)
	}
	var res attemptResult
	recordRendering(ctx, p, out.Results, log)
	p.Git.Files = out.Files
	for _, s := range out.Skipped {
		skipped = append(skipped, plan.SkippedFile{File: s.File, Reason: s.Err.Error()})
		log.WarnContext(ctx, "file not read", "file", s.File, "bytes", s.Size, "error", s.Err)
	}
	p.Git.Skipped = skipped
	if len(out.Files) == 0 {
		return res, nil
	}
	res.hasChanges = true
	codeowners, file, err := forge.ReadCodeowners(ws.Dir())
	if err != nil {
		// The pull request goes out without them: who reviews is not
		// worth the change.
		log.WarnContext(ctx, "CODEOWNERS not read", "file", file, "error", err)
	}
	res.owners, res.ownersRead = forge.Reviewers(codeowners.OwnersOf(out.Files)), err == nil
	if cfg.DryRun {
		diff, err := ws.Diff(out.Files)
		if err != nil {
			return attemptResult{}, err
		}
		p.Git.Diff = diff
		return res, nil
	}
	msg, err := markdown.CommitMessage(cfg.CommitTemplate, markdown.MessageDataOf(p, opts.BaseBranch, opts.PushBranch, cfg.Path))
	if err != nil {
		return attemptResult{}, err
	}
	// Whatever the template says, the trailers record the changes for the
	// runs that verify them once merged.
	msg = gitops.WithTrailers(msg, gitops.ChangeTrailers(p))
	hash, committed, err := ws.Commit(out.Files, msg)
	if err != nil || !committed {
		return res, err
	}
	upToDate, err := ws.UpToDate(ctx)
	if err != nil {
		return attemptResult{}, err
	}
	if upToDate {
		log.InfoContext(ctx, "push branch already up to date", "branch", ws.Branch())
		res.commit, res.upToDate = ws.PushTip(), true
		return res, nil
	}
	res.commit, res.toPush = hash, true
	return res, nil
}

// workDir returns an empty directory to clone into: dir itself (emptied)
// when set, a temporary one otherwise, and the function that cleans up.
func workDir(dir string) (string, func(), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "recommend-job-")
		if err != nil {
			return "", nil, fmt.Errorf("creating work directory: %w", err)
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	// A retry clones again into the same place.
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("reading work directory: %w", err)
	}
	if len(entries) > 0 {
		if err := os.RemoveAll(dir); err != nil {
			return "", nil, fmt.Errorf("emptying work directory: %w", err)
		}
	}
	return dir, func() {}, nil
}

// recordRendering puts what rendering did into the plan: per item, the
// file edited, whether it changed and why not, and the Helm release its
// values went through; per container, whether its values landed and, under
// Helm, at which values keys. Results name their item by the change's
// Owner.
func recordRendering(ctx context.Context, p *plan.Plan, results []render.Result, log *slog.Logger) {
	byKey := make(map[string]*plan.Item, len(p.Items))
	for i := range p.Items {
		byKey[p.Items[i].Key()] = &p.Items[i]
	}
	for _, r := range results {
		it := byKey[r.Change.Owner]
		if it == nil {
			continue
		}
		if it.Source == nil {
			it.Source = &plan.Source{}
		}
		if r.File != "" {
			it.Source.File = r.File
		}
		it.Source.Changed = it.Source.Changed || r.Changed
		if r.Deployer != "" {
			it.Source.Deployer = r.Deployer
		}
		if r.Chosen != "" {
			it.Source.Chosen = r.Chosen
		}
		if h := r.Helm; h != nil {
			it.Source.Helm = &plan.Helm{Kind: h.Kind, Object: h.Object, Release: h.Release, Namespace: h.Namespace,
				Chart: h.Chart, Version: h.Version, ChartSource: h.ChartSource, Layer: h.Layer,
				SchemaUnchecked: slices.Clone(h.SchemaUnchecked)}
			for _, u := range h.SchemaUnchecked {
				log.WarnContext(ctx, "values schema not checked", "release", h.Namespace+"/"+h.Release, "chart", h.Chart, "reason", u)
			}
		}
		if m := string(r.Method); r.Changed && (it.Source.Method == "" || it.Source.Method == plan.MethodSplice) {
			// Of an item's containers, the method that rewrote the most.
			it.Source.Method = m
		}
		for _, res := range r.Held {
			// Where the HPA could not be adjusted, the request it scales on
			// stays, in every container; the plan says why.
			recommend.HoldAutoscaled(it, res, r.HeldReason)
		}
		if ar := r.Autoscaler; ar != nil {
			for i := range it.Autoscalers {
				if it.Autoscalers[i].Name == r.Change.Autoscaler.Target.Name {
					it.Autoscalers[i].File = ar.File
					it.Autoscalers[i].Changed = it.Autoscalers[i].Changed || ar.Changed
				}
			}
		}
		for i := range it.Containers {
			if it.Containers[i].Name == r.Change.Container {
				it.Containers[i].Landed = r.Changed
				if r.Helm != nil && len(r.Helm.Keys) > 0 {
					it.Containers[i].ValuesKeys = maps.Clone(r.Helm.Keys)
				}
			}
		}
		if r.Err != nil {
			it.Source.Error = r.Err.Error()
			log.WarnContext(ctx, "cannot render change", "resourceRecommend", it.Key(), "container", r.Change.Container, "error", r.Err)
		}
	}
}

// forgetRendering clears what an attempt's rendering put into the plan, so
// that a retry starts from what the run knew before.
func forgetRendering(p *plan.Plan) {
	for i := range p.Items {
		p.Items[i].Source = nil
		for j := range p.Items[i].Autoscalers {
			p.Items[i].Autoscalers[j].File, p.Items[i].Autoscalers[j].Changed = "", false
		}
		for j := range p.Items[i].Containers {
			p.Items[i].Containers[j].Landed = false
			p.Items[i].Containers[j].ValuesKeys = nil
		}
	}
}
