package history

import (
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// StartTimeMetric is cAdvisor's start time of a container, in seconds
// since the epoch, which tells its first minutes from the rest.
const StartTimeMetric = "container_start_time_seconds"

// StartTimes are cAdvisor's start time series of containers, scraped at
// interval while each lives, as Series scrapes their usage.
func StartTimes(containers []Container, interval time.Duration) []testbed.Series {
	out := make([]testbed.Series, 0, len(containers))
	for _, c := range containers {
		s := testbed.Series{Name: StartTimeMetric, Labels: map[string]string{
			"namespace": c.Namespace, "pod": c.Pod, "container": c.Container, "job": "kubelet",
		}}
		start := float64(c.Start.Unix())
		for t := c.Start; !t.After(c.End); t = t.Add(interval) {
			s.Samples = append(s.Samples, testbed.Sample{Time: t, Value: start})
		}
		out = append(out, s)
	}
	return out
}

// WithStartupSpike is c with a working set of peak bytes for the first d
// after it starts, as a JVM warming up or a cache filled on start has,
// and its own memory after.
func WithStartupSpike(c Container, peak float64, d time.Duration) Container {
	steady, start := c.Memory, c.Start
	c.Memory = func(t time.Time) float64 {
		if !t.Before(start) && t.Before(start.Add(d)) {
			return peak
		}
		return steady(t)
	}
	return c
}
