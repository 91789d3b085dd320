package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// ErrUsageUnavailable is returned when no usage history could be read at all.
var ErrUsageUnavailable = errors.New("usage history unavailable")

// Collector lists the ResourceRecommends and their targets, and writes
// the outcome to their status when that is enabled.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
	WriteStatus(ctx context.Context, item collect.Item, recs []v1alpha1.ContainerResources, provided error) error
}

// UsageReader reads the usage history of one namespace's workloads.
type UsageReader interface {
	Read(ctx context.Context, namespace string, workloads []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error)
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
}

// Run performs one pass and returns its report. Invalid ResourceRecommends,
// missing history and targets that cannot be rendered are reported in it.
// An error means the pass could not be completed; the report returned with
// it, if any, holds what was computed before, and nothing was pushed. When
// ctx ends (the run's deadline, a signal), the run stops where it is and
// the report, marked as cut short, holds what it had: the entries, with the
// reason of each missing recommendation, once the ResourceRecommends were
// collected.
func Run(ctx context.Context, cfg Config, collector Collector, reader UsageReader, log *slog.Logger) (*report.Report, error) {
	stage := newProgress(log)
	items, err := collector.Collect(ctx)
	if err != nil {
		return cutShort(ctx, cfg, nil, "collect"), fmt.Errorf("collecting resource recommends: %w", err)
	}
	stage.done(ctx, "collect", "resourceRecommends", len(items))

	history, err := readUsage(ctx, items, reader, log)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("reading usage history: %w", context.Cause(ctx))
	}
	if err != nil {
		// Nothing more is recommended, but the entries say why.
		rep, _, _ := recommendAll(items, history, cfg)
		return cutShort(ctx, cfg, rep, "history"), err
	}
	stage.done(ctx, "history", "workloads", len(history.usage))

	rep, changes, owners := recommendAll(items, history, cfg)
	if !cfg.DryRun {
		writeStatuses(ctx, collector, items, rep.ResourceRecommends, log)
	}
	if ctx.Err() != nil {
		return cutShort(ctx, cfg, rep, "recommend"), fmt.Errorf("recommending: %w", context.Cause(ctx))
	}
	stage.done(ctx, "recommend", "changes", len(changes))

	if cfg.Git.URL == "" {
		if !cfg.DryRun {
			return rep, errors.New("no git url configured")
		}
		return rep, nil
	}
	err = writeBack(ctx, cfg, changes, owners, rep, log)
	if err == nil && rep.Git != nil {
		stage.done(ctx, "git", "files", len(rep.Git.Files), "pushed", rep.Git.Pushed)
	}
	if err != nil {
		rep = cutShort(ctx, cfg, rep, "git")
	}
	return rep, err
}

// recommendAll makes each item's entry, and the changes to render with the
// entry index of each.
func recommendAll(items []collect.Item, h history, cfg Config) (*report.Report, []render.Change, []int) {
	rep := &report.Report{DryRun: cfg.DryRun, ResourceRecommends: []report.Entry{}}
	var changes []render.Change
	var owners []int
	for _, item := range items {
		entry, itemChanges := recommendItem(item, h, cfg)
		for _, c := range itemChanges {
			owners = append(owners, len(rep.ResourceRecommends))
			changes = append(changes, c)
		}
		rep.ResourceRecommends = append(rep.ResourceRecommends, entry)
	}
	return rep, changes, owners
}

// cutShort marks rep, created when nil, as cut short in stage when ctx
// ended, with the cause (e.g. "run deadline of 27m0s exceeded"). It
// returns rep unchanged when ctx did not end.
func cutShort(ctx context.Context, cfg Config, rep *report.Report, stage string) *report.Report {
	if ctx.Err() == nil {
		return rep
	}
	if rep == nil {
		rep = &report.Report{DryRun: cfg.DryRun, ResourceRecommends: []report.Entry{}}
	}
	rep.Interrupted = fmt.Sprintf("%v during %s", context.Cause(ctx), stage)
	return rep
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
func writeStatuses(ctx context.Context, collector Collector, items []collect.Item, entries []report.Entry, log *slog.Logger) {
	for i, item := range items {
		if ctx.Err() != nil {
			return // the run is over; each write would fail
		}
		recs, provided := statusOf(item, entries[i])
		if err := collector.WriteStatus(ctx, item, recs, provided); err != nil {
			log.WarnContext(ctx, "cannot write status", "resourceRecommend", item.Namespace+"/"+item.Name, "error", err)
		}
	}
}

// statusOf turns an entry into katalyst's recommendResources: requests
// as katalyst writes them, and limits for LimitsOnly policies, which
// recommend the limit. Like katalyst it is all or nothing: provided says
// why not, when some resource has no recommendation for a reason other
// than being held back on purpose.
func statusOf(item collect.Item, e report.Entry) ([]v1alpha1.ContainerResources, error) {
	var recs []v1alpha1.ContainerResources
	for _, c := range e.Containers {
		requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
		for _, r := range c.Resources {
			if r.Recommended == "" {
				if r.HeldBack {
					continue
				}
				return nil, fmt.Errorf("container %s %s: %s", c.Name, r.Resource, r.Reason)
			}
			q, err := resource.ParseQuantity(r.Recommended)
			if err != nil {
				return nil, fmt.Errorf("container %s %s: %w", c.Name, r.Resource, err)
			}
			if controlledValues(item, c.Name, r.Resource) == v1alpha1.ContainerControlledValuesLimitsOnly {
				limits[corev1.ResourceName(r.Resource)] = q
				continue
			}
			requests[corev1.ResourceName(r.Resource)] = q
			if r.RecommendedLimit != "" {
				l, err := resource.ParseQuantity(r.RecommendedLimit)
				if err != nil {
					return nil, fmt.Errorf("container %s %s limit: %w", c.Name, r.Resource, err)
				}
				limits[corev1.ResourceName(r.Resource)] = l
			}
		}
		cr := v1alpha1.ContainerResources{ContainerName: c.Name}
		if len(requests) > 0 {
			cr.Requests = &v1alpha1.ContainerResourceList{Target: requests}
		}
		if len(limits) > 0 {
			cr.Limits = &v1alpha1.ContainerResourceList{Target: limits}
		}
		if cr.Requests != nil || cr.Limits != nil {
			recs = append(recs, cr)
		}
	}
	return recs, nil
}

// controlledValues is the policy's controlledValues for one container
// resource of item.
func controlledValues(item collect.Item, container, res string) v1alpha1.ContainerControlledValues {
	for _, p := range item.Policies {
		if p.ContainerName != container {
			continue
		}
		for _, rp := range p.Resources {
			if string(rp.Resource) == res {
				return rp.ControlledValues
			}
		}
	}
	return ""
}
