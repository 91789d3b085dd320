package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// ErrUsageUnavailable is returned when no usage history could be read at all.
var ErrUsageUnavailable = errors.New("usage history unavailable")

// Collector lists the ResourceRecommends and their targets.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
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
	// MinSpan is the least time the samples of a resource must cover for a
	// recommendation; DefaultMinSpan when zero.
	MinSpan time.Duration
}

// DefaultMinSpan is katalyst's: a day of history before any recommendation.
const DefaultMinSpan = 24 * time.Hour

// Run performs one pass and returns its report. Invalid ResourceRecommends,
// missing history and targets that cannot be rendered are reported in it.
// An error means the pass could not be completed; the report returned with
// it, if any, holds what was computed before, and nothing was pushed.
func Run(ctx context.Context, cfg Config, collector Collector, reader UsageReader, log *slog.Logger) (*report.Report, error) {
	if cfg.MinSpan == 0 {
		cfg.MinSpan = DefaultMinSpan
	}
	items, err := collector.Collect(ctx)
	if err != nil {
		return nil, fmt.Errorf("collecting resource recommends: %w", err)
	}
	log.InfoContext(ctx, "collected resource recommends", "count", len(items))

	history, err := readUsage(ctx, items, reader, log)
	if err != nil {
		return nil, err
	}

	rep := &report.Report{DryRun: cfg.DryRun, ResourceRecommends: []report.Entry{}}
	var changes []render.Change
	var owners []int // entry index of each change
	for _, item := range items {
		entry, itemChanges := recommendItem(item, history, cfg.MinSpan)
		for _, c := range itemChanges {
			owners = append(owners, len(rep.ResourceRecommends))
			changes = append(changes, c)
		}
		rep.ResourceRecommends = append(rep.ResourceRecommends, entry)
	}

	if cfg.Git.URL == "" {
		if !cfg.DryRun {
			return rep, errors.New("no git url configured")
		}
		return rep, nil
	}
	return rep, writeBack(ctx, cfg, changes, owners, rep, log)
}
