package usage

import (
	"context"
	"fmt"
	"strconv"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// ownerRef is a kind and name, as kube-state-metrics labels an owner.
type ownerRef struct{ kind, name string }

// ownership reads kube-state-metrics' ownership series of namespace over
// the window, in one query, and resolves each pod to its top-level owner:
// a ReplicaSet's Deployment, a Job's CronJob. A pod whose owner is known
// maps to its workload when that is one of workloads and to nil when it
// is not, so that no naming pattern claims it; pods without ownership
// series are left to the patterns. Without kube-state-metrics the answer
// is empty and patterns decide everything.
func (r *Reader) ownership(ctx context.Context, namespace string, workloads []WorkloadRef) (map[string]*WorkloadRef, error) {
	sel := `__name__=~"kube_pod_owner|kube_replicaset_owner|kube_job_owner",namespace=` + strconv.Quote(namespace)
	if r.filter != "" {
		sel += "," + r.filter
	}
	q := fmt.Sprintf(`max by (pod, replicaset, job_name, owner_kind, owner_name) (max_over_time({%s}[%s]))`,
		sel, model.Duration(r.window))
	end := r.now()
	pods := map[string]ownerRef{}
	parents := map[ownerRef]ownerRef{} // ReplicaSet or Job -> its owner
	err := r.query(ctx, namespace, "ownership", q, promv1.Range{Start: end, End: end, Step: r.step}, func(s *model.SampleStream) {
		m := s.Metric
		owner := ownerRef{kind: string(m["owner_kind"]), name: string(m["owner_name"])}
		if owner.kind == "" || owner.kind == "<none>" {
			return
		}
		// The functions drop the metric name; each metric has its own
		// subject label.
		switch {
		case m["pod"] != "":
			pods[string(m["pod"])] = owner
		case m["replicaset"] != "":
			parents[ownerRef{kind: "ReplicaSet", name: string(m["replicaset"])}] = owner
		case m["job_name"] != "":
			parents[ownerRef{kind: "Job", name: string(m["job_name"])}] = owner
		}
	})
	if err != nil {
		return nil, err
	}
	wanted := map[ownerRef]WorkloadRef{}
	for _, w := range workloads {
		wanted[ownerRef{kind: w.Kind, name: w.Name}] = w
	}
	out := make(map[string]*WorkloadRef, len(pods))
	for pod, owner := range pods {
		if parent, ok := parents[owner]; ok {
			owner = parent
		}
		if w, ok := wanted[owner]; ok {
			out[pod] = &w
		} else {
			out[pod] = nil
		}
	}
	return out, nil
}
