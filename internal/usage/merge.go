package usage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
)

// cpuMetric is cAdvisor's CPU counter, which the CPU history is read from.
const cpuMetric = "container_cpu_usage_seconds_total"

// cpuQuery is the CPU query of the containers selector matches, a rate
// over rateWindow: one series per pod, container and source (see
// bySource), the highest where a container has several of one source (a
// restart's new cgroup, another instance). merged leaves that to the
// reader (see cpuSeries) and asks for the rates alone.
func cpuQuery(selector string, rateWindow time.Duration, merged bool) string {
	rate := fmt.Sprintf(`rate(%s{%s}[%s])`, cpuMetric, selector, model.Duration(rateWindow))
	if merged {
		return rate
	}
	return `max by (` + bySource + `) (` + rate + `)`
}

// containerKey is a pod and container, as max by (pod, container) groups
// series.
type containerKey struct{ pod, container string }

func keyOf(m model.Metric) containerKey {
	return containerKey{pod: string(m["pod"]), container: string(m["container"])}
}

// cpuSeries counts the CPU counter's series of each pod and container, as
// a series listing over the window names them.
//
// With it, the CPU query is a rate() alone, without the max by (pod,
// container) that merges a container's series: Prometheus (2.42 measured)
// evaluates an aggregation anew at every step, which at a step of one
// scrape interval cost 3.5x the rates themselves. The points of a range
// query lie on its steps, the same times in every series, so the reader
// takes the highest of a container's series at each time and gets exactly
// what max by would have answered; it holds only the series of the
// containers listed with several, until the end of their query. A
// container listed with one is handed on as it is decoded.
type cpuSeries map[containerKey]int

func (c cpuSeries) add(m model.Metric) { c[keyOf(m)]++ }

// merger returns what merges one query's series; nil, which hands every
// series on, when c is nil: the query merged them itself.
func (c cpuSeries) merger() *merger {
	if c == nil {
		return nil
	}
	return &merger{counted: c, seen: map[containerKey]bool{}, held: map[containerKey][]model.SamplePair{}}
}

// merger merges the series of one query that belong to the same pod and
// container.
type merger struct {
	counted cpuSeries
	seen    map[containerKey]bool
	held    map[containerKey][]model.SamplePair
	// unlisted is a container that came with several series though the
	// listing had one: its first was handed on unmerged.
	unlisted *containerKey
}

// take hands series on with each, or holds it when its container has
// several series.
func (m *merger) take(series *model.SampleStream, each func(*model.SampleStream)) {
	if m == nil {
		each(series)
		return
	}
	k := keyOf(series.Metric)
	if m.counted[k] > 1 {
		// The series is only valid during the call: its points are copied.
		m.held[k] = append(m.held[k], series.Values...)
		return
	}
	if m.seen[k] {
		if m.unlisted == nil {
			m.unlisted = &k
		}
		return
	}
	m.seen[k] = true
	each(series)
}

// flush hands on the held containers' series, each merged into one with
// the highest value at each time, as max does (a NaN gives way to any
// value). It fails when a container came with more series than listed.
func (m *merger) flush(each func(*model.SampleStream)) error {
	if m == nil {
		return nil
	}
	if m.unlisted != nil {
		return fmt.Errorf("pod %s container %s answered with more CPU series than the series listing named", m.unlisted.pod, m.unlisted.container)
	}
	keys := make([]containerKey, 0, len(m.held))
	for k := range m.held {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b containerKey) int {
		return cmp.Or(cmp.Compare(a.pod, b.pod), cmp.Compare(a.container, b.container))
	})
	for _, k := range keys {
		points := m.held[k]
		slices.SortStableFunc(points, func(a, b model.SamplePair) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		merged := points[:0]
		for _, p := range points {
			if n := len(merged); n > 0 && merged[n-1].Timestamp == p.Timestamp {
				if last := &merged[n-1]; last.Value < p.Value || math.IsNaN(float64(last.Value)) {
					last.Value = p.Value
				}
				continue
			}
			merged = append(merged, p)
		}
		each(&model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(k.pod), "container": model.LabelValue(k.container)}, Values: merged})
		delete(m.held, k)
	}
	return nil
}
