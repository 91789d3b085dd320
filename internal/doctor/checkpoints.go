package doctor

import (
	"context"
	"slices"
	"time"

	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
)

// checkpoints shows the age of each namespace's checkpoint, as the next
// run would find it, and the pages it would ignore.
func (d *checks) checkpoints(ctx context.Context, cfg Config, items []collect.Item) {
	cp, err := cfg.Checkpoints.Load(ctx)
	if err != nil {
		d.fail("reading the checkpoints", err)
		return
	}
	now := time.Now()
	if cfg.Now != nil {
		now = cfg.Now()
	}
	if cp.Generation.IsZero() {
		d.ok("no checkpoint yet: the next run reads every window whole")
	} else {
		d.ok("checkpoint of %d targets, written %s ago", len(cp.Entries), now.Sub(cp.Generation).Round(time.Second))
	}
	for _, s := range cp.Skipped {
		d.info("ignored page %s: its targets are read whole", s)
	}
	var namespaces []string
	for _, it := range items {
		if it.Invalid == nil && !slices.Contains(namespaces, it.Namespace) {
			namespaces = append(namespaces, it.Namespace)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		if age, ok := cp.Age(ns, now); ok {
			d.info("namespace %s: checkpoint %s old", ns, age.Round(time.Second))
		} else {
			d.info("namespace %s: no checkpoint", ns)
		}
	}
}

var _ interface {
	Load(ctx context.Context) (*checkpoint.Checkpoint, error)
} = (*checkpoint.Store)(nil)
