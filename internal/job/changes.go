package job

import (
	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
)

// changesOf are the render intents of p: per container of a valid item,
// the values to write. Each change's Owner is its item's key.
func changesOf(p *plan.Plan) []render.Change {
	changes := make([]render.Change, 0, changeCount(p))
	for i := range p.Items {
		it := &p.Items[i]
		for _, c := range it.Containers {
			if !c.Writes() {
				continue
			}
			rc := render.Change{
				Target: render.Target{
					APIVersion:  it.Object.APIVersion,
					Kind:        it.Object.Kind,
					Namespace:   it.Object.Namespace,
					Name:        it.Object.Name,
					Labels:      it.Object.Labels,
					Annotations: it.Object.Annotations,
					PodPrint:    kinds.PodPrint(it.Object.PodPrint),
				},
				Container: c.Name,
				Requests:  make(render.Values, 0, len(c.Resources)),
				Mode:      render.Mode(it.Annotations[render.AnnotationMode]),
				Path:      it.Annotations[render.AnnotationPath],
				Owner:     it.Key(),
			}
			for _, r := range c.Resources {
				if r.Request != nil {
					rc.Requests = rc.Requests.Set(r.Resource, *r.Request)
				}
				if r.Limit != nil {
					rc.Limits = rc.Limits.Set(r.Resource, *r.Limit)
				}
			}
			rc.Autoscaler = autoscalerOf(it, rc.Requests)
			changes = append(changes, rc)
		}
	}
	return changes
}

// changeCount is len(changesOf(p)), without making the changes: at tens
// of thousands of containers, each with its resource lists, that is tens
// of MiB for a count.
func changeCount(p *plan.Plan) int {
	n := 0
	for i := range p.Items {
		for _, c := range p.Items[i].Containers {
			if c.Writes() {
				n++
			}
		}
	}
	return n
}

// autoscalerOf is the HPA whose targets move with requests, a container's
// requests in it; nil when none moves. The targets of an HPA that scales
// on the pod's summed requests go with each container's change.
func autoscalerOf(it *plan.Item, requests render.Values) *render.Autoscaler {
	for _, a := range it.Autoscalers {
		as := &render.Autoscaler{Target: render.Target{
			APIVersion: a.Object.APIVersion, Kind: a.Object.Kind, Namespace: a.Object.Namespace, Name: a.Object.Name,
			Labels: a.Object.Labels, Annotations: a.Object.Annotations,
		}}
		moves := false
		for _, t := range a.Targets {
			_, sets := requests.Get(t.Resource)
			moves = moves || sets && t.Changes()
			as.Utilization = append(as.Utilization, plan.Utilization{Index: t.Index, Resource: t.Resource, Container: t.Container, Percent: t.To})
		}
		if moves {
			return as
		}
	}
	return nil
}
