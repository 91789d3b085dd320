package history

import (
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// Series a verification of a change reads besides usage.
const (
	// RequestsMetric is kube-state-metrics' request of a pod's container.
	RequestsMetric = "kube_pod_container_resource_requests"
	// PeriodsMetric and ThrottledMetric are cAdvisor's CFS counters: the
	// enforcement periods that elapsed, and those in which the container
	// was throttled.
	PeriodsMetric   = "container_cpu_cfs_periods_total"
	ThrottledMetric = "container_cpu_cfs_throttled_periods_total"
)

// cfsPeriod is the kernel's default CFS period.
const cfsPeriod = 100 * time.Millisecond

// Requests is kube-state-metrics' series of the request of resource (cpu
// in cores, memory in bytes) of a pod's container, value(t) at each
// scrape from start to end.
func Requests(namespace, pod, container, resource string, value func(time.Time) float64, start, end time.Time, interval time.Duration) testbed.Series {
	unit := "byte"
	if resource == "cpu" {
		unit = "core"
	}
	s := testbed.Series{Name: RequestsMetric, Labels: map[string]string{
		"namespace": namespace, "pod": pod, "container": container, "resource": resource, "unit": unit, "job": "kube-state-metrics",
	}}
	for t := start; !t.After(end); t = t.Add(interval) {
		s.Samples = append(s.Samples, testbed.Sample{Time: t, Value: value(t)})
	}
	return s
}

// Throttling is cAdvisor's CFS counters of a pod's container from start to
// end: a period every 100ms, of which the share throttled(t) is
// throttled.
func Throttling(namespace, pod, container string, throttled func(time.Time) float64, start, end time.Time, interval time.Duration) []testbed.Series {
	labels := map[string]string{"namespace": namespace, "pod": pod, "container": container, "job": "kubelet"}
	periods := testbed.Series{Name: PeriodsMetric, Labels: labels}
	throttledPeriods := testbed.Series{Name: ThrottledMetric, Labels: labels}
	perInterval := float64(interval / cfsPeriod)
	var total, slow float64
	for t := start; !t.After(end); t = t.Add(interval) {
		periods.Samples = append(periods.Samples, testbed.Sample{Time: t, Value: total})
		throttledPeriods.Samples = append(throttledPeriods.Samples, testbed.Sample{Time: t, Value: slow})
		total += perInterval
		slow += perInterval * throttled(t)
	}
	return []testbed.Series{periods, throttledPeriods}
}
