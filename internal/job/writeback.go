package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"text/template"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
)

// testHookBeforePush, when set by a test, runs between commit and push of
// every attempt, so that a test can move the remote under the run.
var testHookBeforePush func(attempt int)

// writeBack clones the repository, renders the changes and, unless this is
// a dry run, commits and pushes what changed, then opens or updates the
// pull request. The changes are intents (set this container's request to
// that value), not a diff: when the remote moves under the run, it starts
// again from a fresh clone and renders them again, up to Git.Attempts
// times. When the push branch already holds exactly this result, nothing
// is pushed. A dry run stops before the commit and reports the diff and
// the pull request body instead.
func writeBack(ctx context.Context, cfg Config, changes []render.Change, owners []int, rep *report.Report, log *slog.Logger) error {
	opts := cfg.Git
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = gitops.DefaultAttempts
	}
	tmpl, err := gitops.ParseCommitTemplate(opts.CommitTemplate)
	if err != nil {
		return err
	}
	var forge gitops.Forge
	if opts.Forge.Enabled() && !opts.Direct() && !cfg.DryRun {
		if forge, err = gitops.NewForge(opts.Forge, opts.URL); err != nil {
			return err
		}
	}
	// rep.Git stays nil until a checkout reached the repository.
	rep.Git = nil
	sources := saveSources(rep)
	var res attemptResult
	attempt := 1
	for ; ; attempt++ {
		res, err = writeOnce(ctx, cfg, tmpl, attempt, changes, owners, rep, log)
		if errors.Is(err, gitops.ErrStale) && attempt < attempts && ctx.Err() == nil {
			log.InfoContext(ctx, "the remote moved; rendering again on a fresh clone", "attempt", attempt, "error", err)
			restoreSources(rep, sources)
			rep.Git = &report.Git{Branch: opts.PushBranch, Attempts: attempt}
			continue
		}
		break
	}
	if errors.Is(err, gitops.ErrForeignCommit) {
		// The repository was reached: the branch's tip is what stopped it.
		rep.Git = &report.Git{Branch: opts.PushBranch, Attempts: attempt}
		rep.Git.Stopped = err.Error()
		log.ErrorContext(ctx, "stopped: the push branch has a commit the job did not make", "branch", opts.PushBranch, "error", err)
	}
	if err != nil {
		return err
	}

	switch {
	case opts.Direct():
	case cfg.DryRun:
		if res.hasChanges {
			rep.Git.PullRequest = &report.PullRequest{Action: report.PRPlanned, Body: gitops.PullRequestBody(rep)}
		}
	case forge == nil:
	case res.hasChanges:
		pr, err := gitops.SyncPullRequest(ctx, forge, gitops.NewPullRequest{
			Head: opts.PushBranch, Base: opts.BaseBranch,
			Title: gitops.PullRequestTitle(opts.BaseBranch, cfg.Path), Body: gitops.PullRequestBody(rep),
			Labels: opts.Forge.Labels, Reviewers: opts.Forge.Reviewers,
		})
		if pr == nil {
			return err
		}
		rep.Git.PullRequest = pr
		if err != nil {
			log.WarnContext(ctx, "pull request opened without all its labels or reviewers", "url", pr.URL, "error", err)
		}
		log.InfoContext(ctx, "pull request synced", "action", pr.Action, "url", pr.URL, "number", pr.Number)
	case rep.Incomplete():
		// Nothing changed because something could not be rendered, read
		// or validated this time: that says nothing about the open pull
		// request, which stays.
	case opts.Forge.CloseWhenEmpty:
		pr, err := gitops.CloseOpenPullRequest(ctx, forge, opts.PushBranch, opts.BaseBranch)
		if err != nil {
			return err
		}
		if pr != nil {
			rep.Git.PullRequest = pr
			log.InfoContext(ctx, "nothing to change: closed the pull request", "url", pr.URL, "number", pr.Number)
		}
	}
	return nil
}

// attemptResult is what one attempt leaves for the pull request step.
type attemptResult struct {
	// hasChanges reports that the push branch (pushed now or before)
	// holds changes against the base.
	hasChanges bool
}

// writeOnce is one attempt: checkout, render, commit, push.
func writeOnce(ctx context.Context, cfg Config, tmpl *template.Template, attempt int, changes []render.Change, owners []int, rep *report.Report, log *slog.Logger) (attemptResult, error) {
	dir, cleanup, err := workDir(cfg.WorkDir)
	if err != nil {
		return attemptResult{}, err
	}
	defer cleanup()
	ws, err := gitops.Checkout(ctx, cfg.Git, dir)
	if err != nil {
		return attemptResult{}, fmt.Errorf("checking out the repository: %w", err)
	}
	rep.Git = &report.Git{Branch: cfg.Git.PushBranch, Attempts: attempt}
	if len(changes) == 0 {
		log.InfoContext(ctx, "no changes to render")
		return attemptResult{}, nil
	}
	out, err := render.Apply(ctx, ws.Dir(), cfg.Path, changes, cfg.RenderOptions...)
	if err != nil {
		return attemptResult{}, fmt.Errorf("rendering: %w", err)
	}
	var landed []landedChange
	var res attemptResult
	for i, r := range out.Results {
		entry := &rep.ResourceRecommends[owners[i]]
		if entry.Source == nil {
			entry.Source = &report.Source{}
		}
		if r.File != "" {
			entry.Source.File = r.File
		}
		entry.Source.Changed = entry.Source.Changed || r.Changed
		if r.Changed {
			landed = append(landed, landedChange{Result: r, entry: entry})
		}
		if r.Err != nil {
			entry.Source.Error = r.Err.Error()
			log.WarnContext(ctx, "cannot render change", "resourceRecommend", entry.Namespace+"/"+entry.Name, "container", r.Change.Container, "error", r.Err)
		}
	}
	rep.Git.Files = out.Files
	var skipped []report.SkippedFile
	for _, s := range out.Skipped {
		skipped = append(skipped, report.SkippedFile{File: s.File, Reason: s.Err.Error()})
		log.WarnContext(ctx, "file not read", "file", s.File, "bytes", s.Size, "error", s.Err)
	}
	rep.Git.Skipped = skipped
	if len(out.Files) == 0 {
		return res, nil
	}
	res.hasChanges = true
	if cfg.DryRun {
		diff, err := ws.Diff(out.Files)
		if err != nil {
			return attemptResult{}, err
		}
		rep.Git.Diff = diff
		return res, nil
	}
	msg, err := gitops.CommitMessage(tmpl, messageData(cfg, landed))
	if err != nil {
		return attemptResult{}, err
	}
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
		return res, nil
	}
	if testHookBeforePush != nil {
		testHookBeforePush(attempt)
	}
	// A run past its deadline pushes nothing: a push is never started late.
	if ctx.Err() != nil {
		return attemptResult{}, fmt.Errorf("not pushing: %w", context.Cause(ctx))
	}
	if err := ws.Push(ctx); err != nil {
		return attemptResult{}, err
	}
	rep.Git.Commit, rep.Git.Pushed = hash, true
	log.InfoContext(ctx, "pushed", "branch", ws.Branch(), "commit", hash, "files", len(out.Files), "attempt", attempt)
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

// saveSources copies every entry's Source, so that a retry starts from
// what the run knew before rendering.
func saveSources(rep *report.Report) []*report.Source {
	saved := make([]*report.Source, len(rep.ResourceRecommends))
	for i, e := range rep.ResourceRecommends {
		if e.Source != nil {
			s := *e.Source
			saved[i] = &s
		}
	}
	return saved
}

func restoreSources(rep *report.Report, saved []*report.Source) {
	for i := range rep.ResourceRecommends {
		rep.ResourceRecommends[i].Source = nil
		if saved[i] != nil {
			s := *saved[i]
			rep.ResourceRecommends[i].Source = &s
		}
	}
}

// landedChange is a change that altered a file, with its report entry.
type landedChange struct {
	render.Result
	entry *report.Entry
}

// messageData groups the changes that landed in a file per workload and
// container, with the cluster's current value of each request.
func messageData(cfg Config, landed []landedChange) gitops.MessageData {
	data := gitops.MessageData{Base: cfg.Git.BaseBranch, Branch: cfg.Git.PushBranch, Path: cfg.Path}
	var last *report.Entry
	for _, l := range landed {
		if l.entry != last {
			t := l.Change.Target
			data.Workloads = append(data.Workloads, gitops.MessageWorkload{
				Namespace: l.entry.Namespace, Name: l.entry.Name, Kind: t.Kind, Target: t.Name, File: l.File,
			})
			last = l.entry
		}
		mc := gitops.MessageContainer{Name: l.Change.Container}
		for _, c := range l.entry.Containers {
			if c.Name != l.Change.Container {
				continue
			}
			for _, r := range c.Resources {
				switch {
				case r.Recommended != "" && r.Recommended == l.Change.Requests[r.Resource]:
					mc.Resources = append(mc.Resources, gitops.MessageResource{Resource: r.Resource, Current: orNone(r.Current), Recommended: r.Recommended})
					if r.RecommendedLimit != "" && r.RecommendedLimit == l.Change.Limits[r.Resource] {
						mc.Resources = append(mc.Resources, gitops.MessageResource{Resource: r.Resource + " limit", Current: orNone(r.CurrentLimit), Recommended: r.RecommendedLimit})
					}
				case r.Recommended != "" && r.Recommended == l.Change.Limits[r.Resource]:
					// LimitsOnly: the values are the limit's.
					mc.Resources = append(mc.Resources, gitops.MessageResource{Resource: r.Resource + " limit", Current: orNone(r.Current), Recommended: r.Recommended})
				}
			}
		}
		w := &data.Workloads[len(data.Workloads)-1]
		w.Containers = append(w.Containers, mc)
	}
	return data
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
