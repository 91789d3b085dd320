package usage

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// ReplicaReader reads how many replicas workloads of one namespace ran on
// average over a window, in one query for all of them; Reader is one.
type ReplicaReader interface {
	AverageReplicas(ctx context.Context, namespace string, workloads []WorkloadRef, window time.Duration) (map[WorkloadRef]float64, time.Duration, error)
}

// replicaSeries is kube-state-metrics' replica count of each kind, and
// the label that names the object.
var replicaSeries = map[string]struct{ metric, label string }{
	"Deployment":  {"kube_deployment_status_replicas", "deployment"},
	"StatefulSet": {"kube_statefulset_status_replicas", "statefulset"},
	"DaemonSet":   {"kube_daemonset_status_desired_number_scheduled", "daemonset"},
	"ReplicaSet":  {"kube_replicaset_status_replicas", "replicaset"},
}

// AverageReplicas is the average of kube-state-metrics' replica count of
// each workload over window, ending now: one instant query for the
// namespace, one selector per kind with a regular expression of the
// names. A window of zero is the reader's own; the window read is
// returned. A workload of a kind kube-state-metrics does not count, or
// without series, is absent.
func (r *Reader) AverageReplicas(ctx context.Context, namespace string, workloads []WorkloadRef, window time.Duration) (map[WorkloadRef]float64, time.Duration, error) {
	if window <= 0 {
		window = r.window
	}
	q := r.replicaQuery(namespace, workloads, window)
	if q == "" {
		return nil, window, nil
	}
	byLabel := map[string]map[string]WorkloadRef{}
	for _, w := range workloads {
		if s, ok := replicaSeries[w.Kind]; ok && w.Namespace == namespace {
			if byLabel[s.label] == nil {
				byLabel[s.label] = map[string]WorkloadRef{}
			}
			byLabel[s.label][w.Name] = w
		}
	}
	// An instant query, sent as a range of one point, which every backend
	// answers like Prometheus.
	now := r.now()
	out := map[WorkloadRef]float64{}
	err := r.query(ctx, namespace, "replicas", q, promv1.Range{Start: now, End: now, Step: time.Minute}, func(series *model.SampleStream) {
		if len(series.Values) == 0 {
			return
		}
		// A count is a number of pods: NaN, an infinity or a negative
		// one is no count, and the workload falls back as without series.
		v := float64(series.Values[len(series.Values)-1].Value)
		if !(v >= 0) || math.IsInf(v, 0) {
			return
		}
		for label, names := range byLabel {
			if w, ok := names[string(series.Metric[model.LabelName(label)])]; ok {
				out[w] = v
			}
		}
	})
	if err != nil {
		return nil, window, err
	}
	return out, window, nil
}

// replicaQuery is the query of AverageReplicas: "" when no workload is of
// a kind kube-state-metrics counts.
func (r *Reader) replicaQuery(namespace string, workloads []WorkloadRef, window time.Duration) string {
	names := map[string][]string{}
	for _, w := range workloads {
		if _, ok := replicaSeries[w.Kind]; ok && w.Namespace == namespace && !slices.Contains(names[w.Kind], w.Name) {
			names[w.Kind] = append(names[w.Kind], regexp.QuoteMeta(w.Name))
		}
	}
	kinds := make([]string, 0, len(names))
	for k := range names {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		s := replicaSeries[k]
		slices.Sort(names[k])
		sel := fmt.Sprintf(`namespace=%s,%s=~%s`, strconv.Quote(namespace), s.label, strconv.Quote(strings.Join(names[k], "|")))
		if r.filter != "" {
			sel += "," + r.filter
		}
		// Two kube-state-metrics count each object twice: one series is
		// kept.
		parts = append(parts, fmt.Sprintf(`max by (%s) (avg_over_time(%s{%s}[%s]))`, s.label, s.metric, sel, model.Duration(window)))
	}
	return strings.Join(parts, " or ")
}
