package usage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// ownerRef is a kind and name, as kube-state-metrics labels an owner.
type ownerRef struct{ kind, name string }

// ownershipMetrics are kube-state-metrics' ownership series, each with the
// label of its subject: a pod's owner, a ReplicaSet's, a Job's.
var ownershipMetrics = []struct{ metric, subject, kind string }{
	{"kube_pod_owner", "pod", ""},
	{"kube_replicaset_owner", "replicaset", "ReplicaSet"},
	{"kube_job_owner", "job_name", "Job"},
}

// ownership reads kube-state-metrics' ownership series of namespace over
// the window, in one request, and resolves each pod to its top-level
// owner: a ReplicaSet's Deployment, a Job's CronJob. A pod whose owner is
// known maps to its workload when that is one of workloads and to nil
// when it is not, so that no naming pattern claims it; pods without
// ownership series are left to the patterns. Without kube-state-metrics
// the answer is empty and patterns decide everything.
//
// Only the series' labels matter, not their samples: when the API is a
// SeriesLister, they are listed from Prometheus's index (the series that
// have samples between the window's start and its end), else, or where
// the endpoint is not served, a query takes the highest of every sample
// of the window, reading them all.
//
// With a cpu selector, the same listing also counts the CPU counter's
// series of each pod and container from lookback before the window on
// (see cpuSeries); the count is nil when nothing was listed.
func (r *Reader) ownership(ctx context.Context, namespace string, workloads []WorkloadRef, cpu string, lookback time.Duration) (map[string]*WorkloadRef, cpuSeries, error) {
	sel := `__name__=~"kube_pod_owner|kube_replicaset_owner|kube_job_owner",namespace=` + strconv.Quote(namespace)
	if r.filter != "" {
		sel += "," + r.filter
	}
	end := r.now()
	o := owners{pods: map[string]ownerRef{}, parents: map[ownerRef]ownerRef{}}
	var err error
	var counted cpuSeries
	listed := false
	if lister, ok := r.api.(SeriesLister); ok {
		matches, start := []string{"{" + sel + "}"}, end.Add(-r.window)
		if cpu != "" {
			matches, start = append(matches, cpuMetric+"{"+cpu+"}"), start.Add(-lookback)
			counted = cpuSeries{}
		}
		err = r.call(ctx, namespace, "ownership", func(ctx context.Context) (promv1.Warnings, error) {
			sets, warnings, _, err := lister.Series(ctx, matches, start, end)
			for _, s := range sets {
				if m := model.Metric(s); m[model.MetricNameLabel] == cpuMetric {
					counted.add(m)
				} else {
					o.add(m)
				}
			}
			return warnings, err
		})
		listed = !errors.Is(err, ErrSeriesUnsupported)
	}
	// Where the series endpoint is not served, the query reads the same.
	if !listed {
		counted = nil
		q := fmt.Sprintf(`max by (pod, replicaset, job_name, owner_kind, owner_name) (max_over_time({%s}[%s]))`,
			sel, model.Duration(r.window))
		err = r.query(ctx, namespace, "ownership", q, promv1.Range{Start: end, End: end, Step: cmp.Or(r.step, DefaultStep)}, func(s *model.SampleStream) {
			o.add(s.Metric)
		})
	}
	if err != nil {
		return nil, nil, err
	}
	wanted := map[ownerRef]WorkloadRef{}
	for _, w := range workloads {
		wanted[ownerRef{kind: w.Kind, name: w.Name}] = w
	}
	out := make(map[string]*WorkloadRef, len(o.pods))
	for pod, owner := range o.pods {
		if parent, ok := o.parents[owner]; ok {
			owner = parent
		}
		if w, ok := wanted[owner]; ok {
			out[pod] = &w
		} else {
			out[pod] = nil
		}
	}
	return out, counted, nil
}

// owners are the owners the ownership series name.
type owners struct {
	pods    map[string]ownerRef
	parents map[ownerRef]ownerRef // ReplicaSet or Job -> its owner
}

// add takes the owner one ownership series names, ignoring none
// ("<none>"). A listed series has its metric's name, which says which
// label is its subject; the query's functions drop the name, and then
// the first subject label it has decides.
func (o *owners) add(m model.Metric) {
	owner := ownerRef{kind: string(m["owner_kind"]), name: string(m["owner_name"])}
	if owner.kind == "" || owner.kind == "<none>" {
		return
	}
	name := string(m[model.MetricNameLabel])
	for _, om := range ownershipMetrics {
		if name != "" && name != om.metric {
			continue
		}
		subject := string(m[model.LabelName(om.subject)])
		switch {
		case subject == "":
			continue
		case om.kind == "":
			o.pods[subject] = owner
		default:
			o.parents[ownerRef{kind: om.kind, name: subject}] = owner
		}
		return
	}
}
