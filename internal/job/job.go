package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"text/template"
	"time"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// Collector lists the ResourceRecommends and their targets, and writes
// each one's outcome to its status when that is enabled. A run takes the
// items Collect returns: it clears each once its plan is made.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
	WriteStatus(ctx context.Context, p plan.Item) error
}

// Config is what a run needs beyond its clients.
type Config struct {
	// Git is the repository; an empty URL on a dry run skips git entirely.
	Git gitops.Options
	// Path is the subtree of the repository that holds the manifests.
	Path string
	// DryRun renders and reports but does not commit or push.
	DryRun bool
	// WorkDir is where the repository is cloned; a temporary directory when empty.
	WorkDir string
	// RenderOptions choose how changes land in the repository (mode,
	// per-namespace paths).
	RenderOptions []render.Option
	// Algorithm are the run's algorithm settings, which a
	// ResourceRecommend's extensions override; zero fields are defaults.
	Algorithm recommend.Options
	// HistoryConcurrency is how many namespaces' history is read at a
	// time; one when zero.
	HistoryConcurrency int
	// GroupBy splits the changes into pull requests, each on a branch of
	// its own; the zero value, like none, opens one for the run.
	GroupBy gitops.GroupBy
	// Forge opens and updates the pull requests and the dashboard, and
	// says which pull requests were merged; nil for none. It is built
	// once for the process (config.Config.ForgeClient).
	Forge forge.Forge
	// CommitTemplate is the template of the commit messages, as
	// markdown.ParseCommitTemplate parsed it; the default when nil.
	CommitTemplate *template.Template
	// PullRequests are the labels, reviewers and limits of the pull
	// requests, and the dashboard.
	PullRequests PullRequestPolicy
	// Verify are the thresholds that watch the job's merged changes; a
	// Period of verify.Off watches none.
	Verify verify.Thresholds
	// Record keeps the job's own record of the commits it pushed, the
	// only evidence of its changes that verification, corrections and
	// holds trust. Without one, nothing is recorded or verified.
	Record Record
	// Deployers lists the live Argo CD and Flux objects, which say where
	// each target is rendered from; nil reads the repository alone.
	Deployers DeployerLister
	// Checkpoints keep what a run folded of each target's CPU and memory
	// history, so that the next run reads only what is new; nil reads
	// every window whole.
	Checkpoints Checkpoints
	// Prices are the run's prices of a core-hour and a GiB-hour, which a
	// ResourceRecommend's annotations override.
	Prices plan.Prices
}

// run is one pass of the job: its configuration, and what the pass learns
// of the job's record and adds to it.
type run struct {
	Config
	ledger *ledger
	// beforePush, when a test sets it, runs between commit and push of
	// every attempt, so that the test can move the remote under the run.
	beforePush func(attempt int)
}

// pullRequests reports whether the run opens, updates and closes pull
// requests: it has a forge, pushes to a branch of its own, and is no dry
// run.
func (r *run) pullRequests() bool { return r.Forge != nil && !r.Git.Direct() && !r.DryRun }

// Record reads and writes the job's record of what it pushed;
// record.Store is one.
type Record interface {
	Load(ctx context.Context) ([]gitops.Pushed, error)
	Update(ctx context.Context, change func([]gitops.Pushed) []gitops.Pushed) error
}

// DeployerLister lists the live Argo CD and Flux objects; an error says
// which kinds it could not read, the others are returned all the same.
// deployers.Lister is one.
type DeployerLister interface {
	List(ctx context.Context) ([]repoindex.DeployerObject, error)
}

// PullRequestPolicy says what the pull requests carry, bounds those of a
// grouped run, and asks for the dashboard issue.
type PullRequestPolicy struct {
	// Labels and Reviewers (user names, @org/team) are set when a pull
	// request is opened.
	Labels, Reviewers []string
	// CloseWhenEmpty closes the run's open pull request when it finds
	// nothing to change; a group's goes when its changes do, always.
	CloseWhenEmpty bool
	// Limit bounds the job's open pull requests, PerRun those a run
	// opens; zero for no bound.
	Limit, PerRun int
	// ClosedHold is how long a person's closing of a group's pull request
	// holds the group while its values do not move; zero holds nothing.
	ClosedHold time.Duration
	// Dashboard keeps one issue on the forge up to date with what waits
	// for a person.
	Dashboard bool
}

// Run performs one pass and returns its plan. Invalid ResourceRecommends,
// missing history and targets that cannot be rendered are reported in it.
// An error means the pass could not be completed; the plan returned with
// it holds what was computed before, and nothing was pushed that had not
// started. When ctx ends (the run's deadline, a signal), the run stops
// where it is and the plan, marked as cut short, holds what it had: the
// items, with the reason of each missing recommendation, once the
// ResourceRecommends were collected.
func Run(ctx context.Context, config Config, collector Collector, reader usage.NamespaceReader, log *slog.Logger) (*plan.Plan, error) {
	p := &plan.Plan{DryRun: config.DryRun, Items: []plan.Item{}}
	cfg := &run{Config: config, ledger: &ledger{}}
	stage := newProgress(log)
	items, err := collector.Collect(ctx)
	if err != nil {
		return cutShort(ctx, p, "collect"), fmt.Errorf("collecting resource recommends: %w", err)
	}
	stage.done(ctx, "collect", "resourceRecommends", len(items))

	history, err := recommendAll(ctx, p, items, reader, cfg.Config, log)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("reading usage history: %w", context.Cause(ctx))
	}
	if err != nil {
		// Nothing more is done, but the items say why.
		return cutShort(ctx, p, "history"), err
	}
	stage.done(ctx, "history", "workloads", history.Workloads())

	if cfg.Record == nil && cfg.Verify.Enabled() && cfg.Git.URL != "" {
		log.InfoContext(ctx, "merged changes are not verified: the job keeps no record of what it pushed (record-namespace)")
	}
	if wr, ok := reader.(WatchReader); ok && cfg.Record != nil && cfg.Verify.Enabled() && cfg.Git.URL != "" && ctx.Err() == nil {
		// What was merged is checked before anything is written, so that
		// a regressed change is corrected instead of proposed again.
		if err := verifyMerged(ctx, cfg, p, wr, log); err != nil {
			log.WarnContext(ctx, "cannot verify the merged changes", "error", err)
			p.Unverified = err.Error()
		} else {
			stage.done(ctx, "verify", "watches", watchesOf(p))
		}
	}
	for i := range p.Items {
		// The requests are final, corrections included.
		recommend.Autoscale(&p.Items[i])
		withCost(ctx, &p.Items[i], cfg.Prices, log)
	}
	if !cfg.DryRun {
		writeStatuses(ctx, collector, p, log)
	}
	if ctx.Err() != nil {
		return cutShort(ctx, p, "recommend"), fmt.Errorf("recommending: %w", context.Cause(ctx))
	}
	stage.done(ctx, "recommend", "changes", changeCount(p))

	if cfg.Git.URL == "" {
		if !cfg.DryRun {
			return p, errors.New("no git url configured")
		}
		return p, nil
	}
	cfg.RenderOptions = withLiveDeployers(ctx, cfg.Config, log)
	err = writeBack(ctx, cfg, p, log)
	if !cfg.DryRun {
		err = recordRun(ctx, cfg, p, err, log)
	}
	if err == nil && ctx.Err() != nil {
		// A push that started finishes within its grace, and may succeed
		// after the signal or the deadline: the run was cut short all
		// the same, and says so.
		err = fmt.Errorf("writing back: %w", context.Cause(ctx))
	}
	if err == nil && p.Git != nil {
		stage.done(ctx, "git", "files", len(p.Git.Files), "pushed", p.Git.Pushed)
	}
	if err != nil {
		cutShort(ctx, p, "git")
	}
	return p, err
}

// recordRun writes what the run learnt and pushed into the job's record,
// and returns the run's error err, joined with ErrUnrecorded when the
// record could not be written: a push the record does not hold is never
// verified, corrected or held, so the run failed, whatever else it did.
func recordRun(ctx context.Context, cfg *run, p *plan.Plan, err error, log *slog.Logger) error {
	rerr := saveRecord(ctx, cfg, log)
	if rerr == nil {
		return err
	}
	log.ErrorContext(ctx, "cannot write the job's record: this run's changes will not be verified once merged", "error", rerr)
	p.Unrecorded = rerr.Error()
	return errors.Join(err, fmt.Errorf("%w: %w", ErrUnrecorded, rerr))
}

// withLiveDeployers returns the render options with the live deployers,
// read once per run. What cannot be read is said once, and the
// repository's deployers are used in its place.
func withLiveDeployers(ctx context.Context, cfg Config, log *slog.Logger) []render.Option {
	if cfg.Deployers == nil {
		return cfg.RenderOptions
	}
	ds, err := cfg.Deployers.List(ctx)
	if err != nil {
		log.WarnContext(ctx, "cannot read the live Argo CD and Flux objects: where targets are rendered from is read from the repository", "error", err)
	}
	return append(slices.Clip(cfg.RenderOptions), render.WithDeployers(ds))
}

// recommendAll adds each item's plan to p, in the order collected. The
// items of a namespace are recommended as soon as its history is read,
// their CPU samples folded as they are decoded, and the history is then
// dropped: a run holds the history of the namespaces being read, never
// the cluster's. It consumes items: once an item's plan is made, the item
// is cleared, so that a run holds the plans and not every target's
// objects besides.
func recommendAll(ctx context.Context, p *plan.Plan, items []collect.Item, reader usage.NamespaceReader, cfg Config, log *slog.Logger) (*usage.Histories, error) {
	p.Items = make([]plan.Item, len(items))
	var wants []usage.Want
	byWant := map[usage.Want][]int{}
	byNamespace := map[string][]int{}
	for i, item := range items {
		if item.Invalid != nil || item.Workload == nil {
			p.Items[i] = recommend.ForItem(item, nil, nil, cfg.Algorithm)
			items[i] = collect.Item{}
			continue
		}
		w := recommend.WantOf(item)
		wants = append(wants, w)
		byWant[w] = append(byWant[w], i)
		byNamespace[w.Ref.Namespace] = append(byNamespace[w.Ref.Namespace], i)
	}
	fold := func(w usage.Want, _ string, h *usage.History) usage.Fold {
		// Items that share a want (only rivals do, and those are invalid)
		// would share its samples: they keep them instead.
		if is := byWant[w]; len(is) == 1 {
			return recommend.FoldFor(cfg.Algorithm, items[is[0]], h)
		}
		return nil
	}
	var inc *incremental
	if cfg.Checkpoints != nil {
		inc = newIncremental(ctx, cfg, items, byWant, log)
		fold = inc.fold
	}
	// One goroutine reads a namespace, and writes the plans of its items.
	each := func(namespace string, h *usage.Histories) {
		for _, i := range byNamespace[namespace] {
			u, unavailable := h.Of(recommend.WantOf(items[i]))
			var history string
			if inc != nil && unavailable == nil {
				u, history = inc.folded(items[i], u)
			}
			p.Items[i] = recommend.ForItem(items[i], u, unavailable, cfg.Algorithm)
			withHistory(&p.Items[i], history)
			withReplicas(&p.Items[i], items[i], h)
			// Only this goroutine reads the items of its namespace.
			items[i] = collect.Item{}
		}
	}
	opts := []usage.ReadAllOption{usage.WithConcurrency(cfg.HistoryConcurrency), usage.WithFolds(fold), usage.WithEach(each),
		usage.WithAverageReplicas(scaledTargets(items))}
	if inc != nil {
		opts = append(opts, usage.WithSpans(inc.spans))
	}
	h, err := usage.ReadAll(ctx, reader, wants, log, opts...)
	// A run that read nothing, or was stopped, leaves the checkpoint as
	// it was: it holds nothing past what was read.
	if inc != nil && err == nil && ctx.Err() == nil && !cfg.DryRun {
		inc.noteLeftOut(p, inc.store(ctx, log))
	}
	return h, err
}

// cutShort marks p as cut short in stage when ctx ended, with the cause
// (e.g. "run deadline of 27m0s exceeded"). It returns p.
func cutShort(ctx context.Context, p *plan.Plan, stage string) *plan.Plan {
	if ctx.Err() != nil {
		p.Interrupted = fmt.Sprintf("%v during %s", context.Cause(ctx), stage)
	}
	return p
}

// progress logs one line as each stage of a run ends, with its duration,
// so that a long run shows where it is.
type progress struct {
	log   *slog.Logger
	start time.Time
}

func newProgress(log *slog.Logger) *progress {
	return &progress{log: log, start: time.Now()}
}

func (p *progress) done(ctx context.Context, stage string, attrs ...any) {
	now := time.Now()
	p.log.InfoContext(ctx, "stage done", append([]any{"stage", stage, "took", now.Sub(p.start).Round(time.Millisecond).String()}, attrs...)...)
	p.start = now
}

// writeStatuses hands each item's outcome to the collector, which writes it
// to the ResourceRecommend's status when status writing is on. A failed
// write is logged; the recommendation still goes to git.
func writeStatuses(ctx context.Context, collector Collector, p *plan.Plan, log *slog.Logger) {
	for _, it := range p.Items {
		if ctx.Err() != nil {
			return // the run is over; each write would fail
		}
		if err := collector.WriteStatus(ctx, it); err != nil {
			log.WarnContext(ctx, "cannot write status", "resourceRecommend", it.Key(), "error", err)
		}
	}
}

// watchesOf counts the watched changes of p.
func watchesOf(p *plan.Plan) int {
	n := 0
	for _, it := range p.Items {
		n += len(it.Watches)
	}
	return n
}
