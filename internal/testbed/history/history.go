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

// kube-state-metrics series the reader uses.
const (
	LastTerminatedMetric  = "kube_pod_container_status_last_terminated_reason"
	RestartsMetric        = "kube_pod_container_status_restarts_total"
	PodOwnerMetric        = "kube_pod_owner"
	ReplicaSetOwnerMetric = "kube_replicaset_owner"
)

// OOMKill is kube-state-metrics' view of a container killed for memory at
// time at: from then on its last termination reason is OOMKilled and its
// restart count 1, as scraped at interval from start to end.
func OOMKill(namespace, pod, container string, start, at, end time.Time, interval time.Duration) []testbed.Series {
	labels := map[string]string{"namespace": namespace, "pod": pod, "container": container, "job": "kube-state-metrics"}
	reason := testbed.Series{Name: LastTerminatedMetric, Labels: withLabel(labels, "reason", "OOMKilled")}
	restarts := testbed.Series{Name: RestartsMetric, Labels: labels}
	for t := start; !t.After(end); t = t.Add(interval) {
		n := 0.0
		if !t.Before(at) {
			n = 1
			reason.Samples = append(reason.Samples, testbed.Sample{Time: t, Value: 1})
		}
		restarts.Samples = append(restarts.Samples, testbed.Sample{Time: t, Value: n})
	}
	return []testbed.Series{reason, restarts}
}

// PodOwner is kube-state-metrics' kube_pod_owner series of a pod, scraped at
// interval from start to end.
func PodOwner(namespace, pod, ownerKind, ownerName string, start, end time.Time, interval time.Duration) testbed.Series {
	return owner(PodOwnerMetric, map[string]string{"namespace": namespace, "pod": pod, "uid": pod},
		ownerKind, ownerName, start, end, interval)
}

// ReplicaSetOwner is kube-state-metrics' kube_replicaset_owner series.
func ReplicaSetOwner(namespace, replicaSet, ownerKind, ownerName string, start, end time.Time, interval time.Duration) testbed.Series {
	return owner(ReplicaSetOwnerMetric, map[string]string{"namespace": namespace, "replicaset": replicaSet},
		ownerKind, ownerName, start, end, interval)
}

func owner(name string, labels map[string]string, kind, ownerName string, start, end time.Time, interval time.Duration) testbed.Series {
	labels = withLabel(labels, "owner_kind", kind)
	labels = withLabel(labels, "owner_name", ownerName)
	labels = withLabel(labels, "owner_is_controller", "true")
	labels = withLabel(labels, "job", "kube-state-metrics")
	s := testbed.Series{Name: name, Labels: labels}
	for t := start; !t.After(end); t = t.Add(interval) {
		s.Samples = append(s.Samples, testbed.Sample{Time: t, Value: 1})
	}
	return s
}

// withLabel returns a copy of labels with name set to value.
func withLabel(labels map[string]string, name, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[name] = value
	return out
}

// Step returns a usage function at before until at, and at after from then.
func Step(before, after float64, at time.Time) func(time.Time) float64 {
	return func(t time.Time) float64 {
		if t.Before(at) {
			return before
		}
		return after
	}
}

// Bursts returns a usage function at idle but for n bursts an hour at
// burst, each lasting length, spread evenly over the hour (UTC) from its
// start: a gateway's spikes, which a coarse rate() averages away.
func Bursts(idle, burst float64, n int, length time.Duration) func(time.Time) float64 {
	every := time.Hour / time.Duration(n)
	return func(t time.Time) float64 {
		if t.Sub(t.Truncate(time.Hour))%every < length {
			return burst
		}
		return idle
	}
}
