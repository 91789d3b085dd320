// Package history makes synthetic container usage history, in the shape
// cAdvisor exports it, for loading into the test bed's Prometheus.
package history

import (
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// Metric names as cAdvisor (through the kubelet) exports them.
const (
	CPUMetric    = "container_cpu_usage_seconds_total"
	MemoryMetric = "container_memory_working_set_bytes"
)

// Container is one container of one pod, alive from Start to End.
type Container struct {
	Namespace string
	Pod       string
	Container string
	Start     time.Time
	End       time.Time
	// CPU is the usage rate in cores at a time.
	CPU func(time.Time) float64
	// Memory is the working set in bytes at a time.
	Memory func(time.Time) float64
}

// Series turns containers into scraped series at interval: the CPU counter
// accumulates the rate over each interval, as a real counter would, and
// the memory gauge samples the working set.
func Series(containers []Container, interval time.Duration) []testbed.Series {
	var out []testbed.Series
	for _, c := range containers {
		labels := map[string]string{
			"namespace": c.Namespace,
			"pod":       c.Pod,
			"container": c.Container,
			"job":       "kubelet",
		}
		cpu := testbed.Series{Name: CPUMetric, Labels: labels}
		mem := testbed.Series{Name: MemoryMetric, Labels: labels}
		total := 0.0
		for t := c.Start; !t.After(c.End); t = t.Add(interval) {
			if c.CPU != nil {
				cpu.Samples = append(cpu.Samples, testbed.Sample{Time: t, Value: total})
				total += c.CPU(t) * interval.Seconds()
			}
			if c.Memory != nil {
				mem.Samples = append(mem.Samples, testbed.Sample{Time: t, Value: c.Memory(t)})
			}
		}
		if c.CPU != nil {
			out = append(out, cpu)
		}
		if c.Memory != nil {
			out = append(out, mem)
		}
	}
	return out
}

// Constant returns a usage function with the same value at all times.
func Constant(v float64) func(time.Time) float64 {
	return func(time.Time) float64 { return v }
}

// DailyPeak returns a usage function at base all day except for peak hours
// [from, to) UTC, when it is at peak.
func DailyPeak(base, peak float64, from, to int) func(time.Time) float64 {
	return func(t time.Time) float64 {
		if h := t.UTC().Hour(); h >= from && h < to {
			return peak
		}
		return base
	}
}

// Rollouts splits [start, end) into n equal spans, one per ReplicaSet of a
// Deployment, and returns each span's pod names: replicas pods named
// <name>-<hash>-<suffix>, the hash changing with every rollout as a
// Deployment's pod-template-hash does.
func Rollouts(name string, replicas, n int, start, end time.Time) []Span {
	spans := make([]Span, n)
	step := end.Sub(start) / time.Duration(n)
	for i := range spans {
		s := Span{Start: start.Add(time.Duration(i) * step), End: start.Add(time.Duration(i+1) * step)}
		if i == n-1 {
			s.End = end
		}
		hash := podHash(name, i)
		for r := 0; r < replicas; r++ {
			s.Pods = append(s.Pods, name+"-"+hash+"-"+podSuffix(name, i, r))
		}
		spans[i] = s
	}
	return spans
}

// Span is one ReplicaSet's lifetime and its pods.
type Span struct {
	Start, End time.Time
	Pods       []string
}

// alphabet is the one Kubernetes uses for generated name suffixes.
const alphabet = "bcdfghjklmnpqrstvwxz2456789"

// podHash and podSuffix are deterministic stand-ins for the random parts
// of pod names, so that a test's data is the same on every run.
func podHash(name string, rollout int) string {
	return pick(name, rollout, 0, 9)
}

func podSuffix(name string, rollout, replica int) string {
	return pick(name, rollout, replica+1, 5)
}

func pick(name string, a, b, n int) string {
	h := uint32(2166136261)
	for _, c := range []byte(name) {
		h = (h ^ uint32(c)) * 16777619
	}
	h = (h ^ uint32(a)) * 16777619
	h = (h ^ uint32(b)) * 16777619
	out := make([]byte, n)
	for i := range out {
		h = h*1664525 + 1013904223
		out[i] = alphabet[(h>>16)%uint32(len(alphabet))]
	}
	return string(out)
}
