package history

import (
	"context"
	"iter"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// WriteBlock writes containers' usage, scraped at interval, as one TSDB
// block into dir, where a Prometheus started afterwards serves it. It
// makes each container's series only when testbed.WriteBlock takes them,
// so that the millions of samples of a cluster-sized week are never all
// in memory at once.
func WriteBlock(ctx context.Context, dir string, containers []Container, interval time.Duration) error {
	return testbed.WriteBlock(ctx, dir, seriesOf(containers, interval))
}

// seriesOf yields the series Series makes of containers, one container at
// a time.
func seriesOf(containers []Container, interval time.Duration) iter.Seq[testbed.Series] {
	return func(yield func(testbed.Series) bool) {
		for i := range containers {
			for _, s := range Series(containers[i:i+1], interval) {
				if !yield(s) {
					return
				}
			}
		}
	}
}
