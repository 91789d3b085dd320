package history

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// WriteBlock writes containers' usage, scraped at interval, as one TSDB
// block into dir, where a Prometheus started afterwards serves it. It
// streams the samples into the block writer rather than building series
// in memory, and skips the OpenMetrics text and promtool, which take
// minutes for the millions of samples of a cluster-sized week.
func WriteBlock(ctx context.Context, dir string, containers []Container, interval time.Duration) error {
	if len(containers) == 0 {
		return nil
	}
	first, last := containers[0].Start, containers[0].End
	for _, c := range containers {
		if c.Start.Before(first) {
			first = c.Start
		}
		if c.End.After(last) {
			last = c.End
		}
	}
	// One block for the whole range. The head accepts samples down to half
	// its chunk range below the newest, and each container starts again at
	// its beginning: twice the range.
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 2*(last.Sub(first).Milliseconds()+time.Hour.Milliseconds()))
	if err != nil {
		return fmt.Errorf("write block: %w", err)
	}
	defer w.Close() //nolint:errcheck // Flush, checked below, writes the block; Close only releases the head
	for _, c := range containers {
		app := w.Appender(ctx)
		base := []string{"container", c.Container, "job", "kubelet", "namespace", c.Namespace, "pod", c.Pod}
		cpu := labels.FromStrings(append([]string{"__name__", CPUMetric}, base...)...)
		mem := labels.FromStrings(append([]string{"__name__", MemoryMetric}, base...)...)
		var cpuRef, memRef storage.SeriesRef
		total := 0.0
		for t := c.Start; !t.After(c.End); t = t.Add(interval) {
			ms := t.UnixMilli()
			if c.CPU != nil {
				if cpuRef, err = app.Append(cpuRef, cpu, ms, total); err != nil {
					return fmt.Errorf("write block: %s/%s: %w", c.Namespace, c.Pod, err)
				}
				total += c.CPU(t) * interval.Seconds()
			}
			if c.Memory != nil {
				if memRef, err = app.Append(memRef, mem, ms, c.Memory(t)); err != nil {
					return fmt.Errorf("write block: %s/%s: %w", c.Namespace, c.Pod, err)
				}
			}
		}
		if err := app.Commit(); err != nil {
			return fmt.Errorf("write block: %w", err)
		}
	}
	if _, err := w.Flush(ctx); err != nil {
		return fmt.Errorf("write block: %w", err)
	}
	return nil
}
