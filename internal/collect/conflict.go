package collect

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// CodeTargetConflict reports that several ResourceRecommends would change
// the same workload's manifest: the same target, or a target and the
// object it takes its pod template from. Katalyst has no such code; it
// lets the last writer win.
const CodeTargetConflict = "TargetConflict"

const msgTargetConflict = "%s %s is also changed by ResourceRecommend %s: a workload takes one ResourceRecommend, so none of them changes it"

// claim is a ResourceRecommend outside this shard and the target it names.
type claim struct {
	namespace, name string
	ref             v1alpha1.CrossVersionObjectReference
}

// claimOf is the claim of a ResourceRecommend of another shard, when it
// would be valid as far as can be told without reading its target: its
// policies are checked against the containers they name. ok is false for
// one of another recommender, or one that is invalid anyway.
func claimOf(u *unstructured.Unstructured) (claim, bool) {
	rec := &v1alpha1.ResourceRecommend{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rec); err != nil || !IsDefaultRecommender(rec.Spec) {
		return claim{}, false
	}
	named := func() ([]string, error) {
		var names []string
		for _, p := range rec.Spec.ResourcePolicy.ContainerPolicies {
			if p.ContainerName != WildcardContainer {
				names = append(names, p.ContainerName)
			}
		}
		return names, nil
	}
	if _, invalid := Validate(rec.Spec, named); invalid != nil {
		return claim{}, false
	}
	return claim{namespace: rec.Namespace, name: rec.Name, ref: rec.Spec.TargetRef}, true
}

// otherClaims resolves the targets of the ResourceRecommends of other
// shards. A target that does not resolve claims nothing; discovery is
// cached, so this costs no request per object.
func (c *Collector) otherClaims(others []claim, targets *targetSet) map[targetKey][]string {
	out := map[targetKey][]string{}
	for _, o := range others {
		rk := refKey{apiVersion: o.ref.APIVersion, kind: o.ref.Kind}
		res, ok := targets.resolved[rk]
		if !ok {
			var err error
			if res, err = c.resolve(o.ref); err != nil {
				continue
			}
			targets.resolved[rk] = res
		}
		if res.err != nil {
			continue
		}
		key := targetKey{gk: res.gk, namespace: o.namespace, name: o.ref.Name}
		out[key] = append(out[key], o.name)
	}
	return out
}

// markConflicts rejects every valid item that shares a claim with another
// valid ResourceRecommend: which of them should win is the namespace
// owner's decision, and a run that picked one would change the manifest
// behind the owner's back. An invalid one changes nothing, so it claims
// nothing. A target and a namespace are one key, so a conflict never
// involves two namespaces.
func markConflicts(ctx context.Context, items []Item, others map[targetKey][]string, log *slog.Logger) {
	owners := map[targetKey][]string{}
	for key, names := range others {
		owners[key] = slices.Clone(names)
	}
	for _, it := range items {
		if it.Invalid != nil {
			continue
		}
		for _, key := range it.claims {
			if !slices.Contains(owners[key], it.Name) {
				owners[key] = append(owners[key], it.Name)
			}
		}
	}
	for i := range items {
		it := &items[i]
		if it.Invalid != nil {
			continue
		}
		var rivals []string
		for _, key := range it.claims {
			for _, name := range owners[key] {
				if name != it.Name && !slices.Contains(rivals, name) {
					rivals = append(rivals, name)
				}
			}
		}
		if len(rivals) == 0 {
			continue
		}
		slices.Sort(rivals)
		it.Invalid = invalid(CodeTargetConflict, msgTargetConflict, it.Target.Kind, it.Target.Name, strings.Join(rivals, ", "))
		log.InfoContext(ctx, "conflicting resource recommends", "resourceRecommend", it.Namespace+"/"+it.Name, "others", rivals)
	}
}

// sourceKey is the key of the object a workload takes its pod template
// from.
func sourceKey(src *ObjectRef) targetKey {
	gk := schema.FromAPIVersionAndKind(src.APIVersion, src.Kind).GroupKind()
	return targetKey{gk: gk, namespace: src.Namespace, name: src.Name}
}
