package job

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
)

// groupOf names the group of an item: a group of its own for the
// correction of a regressed change; else what deploys its target for
// application, the ResourceRecommend's label or annotation; the
// namespace when that names nothing, and for namespace.
func groupOf(g gitops.GroupBy, it *plan.Item) string {
	if it.Regressed() {
		return regressionGroupPrefix + it.Key()
	}
	var name string
	switch g.Kind {
	case "application":
		name = render.Deployer(render.Target{Namespace: it.Object.Namespace, Labels: it.Object.Labels, Annotations: it.Object.Annotations})
	case "label":
		if v := it.Labels[g.Key]; v != "" {
			name = g.Key + "=" + v
		}
	case "annotation":
		if v := it.Annotations[g.Key]; v != "" {
			name = g.Key + "=" + v
		}
	}
	if name == "" {
		name = "namespace/" + it.Namespace
	}
	return name
}

// group is the items of one pull request group, by their index in the plan.
type group struct {
	name  string
	items []int
}

// groupItems splits the plan's items into groups, in name order.
func groupItems(p *plan.Plan, by gitops.GroupBy) []group {
	index := map[string]int{}
	var out []group
	for i := range p.Items {
		name := groupOf(by, &p.Items[i])
		j, ok := index[name]
		if !ok {
			j = len(out)
			index[name] = j
			out = append(out, group{name: name})
		}
		out[j].items = append(out[j].items, i)
	}
	slices.SortFunc(out, func(x, y group) int { return strings.Compare(x.name, y.name) })
	return out
}

// gibPerCore weighs memory against CPU when groups are ranked by what
// they save: the memory per core of general-purpose instances.
const gibPerCore = 4

// savingsOf is what the items' changes save per replica, in cores (see
// plan.Group.Savings).
func savingsOf(items []plan.Item) float64 {
	var cores float64
	for _, it := range items {
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if !r.Changed || r.Recommended == nil || r.Current == nil || r.LimitsOnly {
					continue
				}
				d := r.Current.AsApproximateFloat64() - r.Recommended.AsApproximateFloat64()
				switch r.Resource {
				case corev1.ResourceCPU:
					cores += d
				case corev1.ResourceMemory:
					cores += d / (1 << 30) / gibPerCore
				}
			}
		}
	}
	return cores
}
