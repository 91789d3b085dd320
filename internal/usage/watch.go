package usage

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// watchStep is the resolution of what a watch reads: an hour, as OOM
// kills are counted, which is fine enough for a period of days.
const watchStep = time.Hour

// Point is one value at one time.
type Point struct {
	Time  time.Time
	Value float64
}

// Watched is what one container of a workload did since a time, read for
// verifying a change to its requests: hour by hour, over all its pods.
type Watched struct {
	// Requests are, per resource, the requests its pods ran with: each
	// value a pod had at each step, in time order.
	Requests map[corev1.ResourceName][]Point
	// OOMKills are the hours in which a pod's container restarted after an
	// out-of-memory kill, a pod's kills in consecutive hours counted once.
	OOMKills []time.Time
	// Restarts, Throttled and Periods are per hour, summed over the pods:
	// the restarts, and the CFS periods in which the container was
	// throttled and in all.
	Restarts, Throttled, Periods []Point
	// MemoryPeaks are the highest working set of each hour.
	MemoryPeaks []Point
}

// WatchQueries are the PromQL queries ReadWatch sends for the pods of
// workloads in namespace, by what they read, for showing them.
func (r *Reader) WatchQueries(namespace string, workloads []WorkloadRef) (map[string]string, error) {
	pods, selector, _, err := r.selectors(namespace, workloads)
	if err != nil {
		return nil, err
	}
	return r.watchQueries(pods, selector), nil
}

func (r *Reader) watchQueries(pods, selector string) map[string]string {
	hour := model.Duration(watchStep)
	return map[string]string{
		"requests":  fmt.Sprintf(`max by (pod, container, resource) (kube_pod_container_resource_requests{resource=~"cpu|memory",%s})`, pods),
		"oom":       r.oomQuery(pods),
		"restarts":  fmt.Sprintf(`max by (pod, container) (increase(kube_pod_container_status_restarts_total{%s}[%s]))`, pods, hour),
		"throttled": fmt.Sprintf(`max by (pod, container) (increase(container_cpu_cfs_throttled_periods_total{%s}[%s]))`, selector, hour),
		"periods":   fmt.Sprintf(`max by (pod, container) (increase(container_cpu_cfs_periods_total{%s}[%s]))`, selector, hour),
		"memory":    fmt.Sprintf(`max by (pod, container) (max_over_time(container_memory_working_set_bytes{%s}[%s]))`, selector, hour),
	}
}

// watchOrder is the order in which ReadWatch sends its queries.
var watchOrder = []string{"requests", "oom", "restarts", "throttled", "periods", "memory"}

// ReadWatch reads what the containers of workloads, all in namespace, did
// from since to now: six range queries for the namespace at an hour's
// step, whatever the number of workloads and containers, with pods
// attributed as Read does.
func (r *Reader) ReadWatch(ctx context.Context, namespace string, workloads []WorkloadRef, since time.Time) (map[WorkloadRef]map[string]*Watched, error) {
	pods, selector, a, err := r.attribution(ctx, namespace, workloads)
	if err != nil {
		return nil, err
	}
	c := *r
	c.end = r.now()
	c.now = func() time.Time { return c.end }
	window := c.end.Sub(since)
	if window <= 0 {
		return nil, nil
	}
	out := map[WorkloadRef]map[string]*Watched{}
	watched := func(w WorkloadRef, container string) *Watched {
		if out[w] == nil {
			out[w] = map[string]*Watched{}
		}
		if out[w][container] == nil {
			out[w][container] = &Watched{Requests: map[corev1.ResourceName][]Point{}}
		}
		return out[w][container]
	}
	queries := c.watchQueries(pods, selector)
	hourly := map[*[]Point]map[time.Time]int{}
	seen := map[Point]bool{}
	for _, what := range watchOrder {
		step := watchStep
		if what == "requests" {
			step = c.step
			if step <= 0 {
				// Measured per read, not for a watch: the former default
				// sees a change of requests within minutes.
				step = DefaultStep
			}
		}
		err := c.eachSeries(ctx, namespace, corev1.ResourceName(what), queries[what], window, step, a, func(w WorkloadRef, container string, series *model.SampleStream) {
			wd := watched(w, container)
			switch what {
			case "requests":
				res := corev1.ResourceName(series.Metric["resource"])
				wd.Requests[res] = addRequests(wd.Requests[res], seen, series.Values)
			case "oom":
				// Each hour looks back a little further than an hour, so a
				// kill may show in two hours in a row: a pod's kills in
				// consecutive hours count once.
				for i, s := range series.Values {
					if i > 0 && s.Timestamp.Sub(series.Values[i-1].Timestamp) <= watchStep {
						continue
					}
					wd.OOMKills = append(wd.OOMKills, s.Timestamp.Time())
				}
			case "restarts":
				addHourly(hourly, &wd.Restarts, series.Values, sum)
			case "throttled":
				addHourly(hourly, &wd.Throttled, series.Values, sum)
			case "periods":
				addHourly(hourly, &wd.Periods, series.Values, sum)
			case "memory":
				addHourly(hourly, &wd.MemoryPeaks, series.Values, higher)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for _, containers := range out {
		for _, wd := range containers {
			points := [][]Point{wd.Restarts, wd.Throttled, wd.Periods, wd.MemoryPeaks}
			for _, requests := range wd.Requests {
				points = append(points, requests)
			}
			for _, points := range points {
				sort.Slice(points, func(i, j int) bool { return points[i].Time.Before(points[j].Time) })
			}
			sort.Slice(wd.OOMKills, func(i, j int) bool { return wd.OOMKills[i].Before(wd.OOMKills[j]) })
		}
	}
	return out, nil
}

func sum(a, b float64) float64    { return a + b }
func higher(a, b float64) float64 { return max(a, b) }

// addHourly merges the values of one pod's series into points, one per
// time, with merge.
func addHourly(index map[*[]Point]map[time.Time]int, points *[]Point, values []model.SamplePair, merge func(a, b float64) float64) {
	at := index[points]
	if at == nil {
		at = map[time.Time]int{}
		index[points] = at
	}
	for _, s := range values {
		t, v := s.Timestamp.Time(), float64(s.Value)
		if i, ok := at[t]; ok {
			(*points)[i].Value = merge((*points)[i].Value, v)
			continue
		}
		at[t] = len(*points)
		*points = append(*points, Point{Time: t, Value: v})
	}
}

// addRequests adds the requests of one pod's series to seen, each
// distinct value once per time.
func addRequests(seen []Point, index map[Point]bool, values []model.SamplePair) []Point {
	for _, s := range values {
		p := Point{Time: s.Timestamp.Time(), Value: float64(s.Value)}
		if !index[p] {
			index[p] = true
			seen = append(seen, p)
		}
	}
	return seen
}

// FirstRan is the first time at or after since that a pod ran with the
// request value (in cores or bytes), if one did.
func (w *Watched) FirstRan(res corev1.ResourceName, value float64, since time.Time) (time.Time, bool) {
	for _, p := range w.Requests[res] {
		if p.Value == value && !p.Time.Before(since) {
			return p.Time, true
		}
	}
	return time.Time{}, false
}
