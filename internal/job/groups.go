package job

import (
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
)

// groupOf names the group of an item: what deploys its target for
// application, the ResourceRecommend's label or annotation; the
// namespace when that names nothing, and for namespace.
func groupOf(g gitops.GroupBy, it *plan.Item) string {
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
