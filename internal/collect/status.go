package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// CodeRecommendationNotReady is katalyst's reason of a False
// RecommendationProvided condition.
const CodeRecommendationNotReady = "RecommendationNotReady"

// WriteStatus writes the outcome p of a ResourceRecommend of the last
// Collect, as Recommendations sees it, to its status (see patchStatus).
func (c *Collector) WriteStatus(ctx context.Context, p plan.Item) error {
	if !c.writeStatus {
		return nil
	}
	item, ok := c.listed[p.Key()]
	if !ok {
		return fmt.Errorf("status of %s: not collected in this run", p.Key())
	}
	recs, provided := Recommendations(p)
	return c.patchStatus(ctx, item, recs, provided)
}

// Recommendations is p as katalyst's recommendResources: requests as
// katalyst writes them, and limits for LimitsOnly policies, which
// recommend the limit. Like katalyst it is all or nothing: provided says
// why not, when some resource has no recommendation for a reason other
// than being held back on purpose.
func Recommendations(p plan.Item) (recs []v1alpha1.ContainerResources, provided error) {
	for _, c := range p.Containers {
		requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
		for _, r := range c.Resources {
			if r.Recommended == nil {
				if r.HeldBack {
					continue
				}
				return nil, fmt.Errorf("container %s %s: %s", c.Name, r.Resource, r.Reason)
			}
			if r.LimitsOnly {
				limits[r.Resource] = *r.Recommended
				continue
			}
			requests[r.Resource] = *r.Recommended
			if r.RecommendedLimit != nil {
				limits[r.Resource] = *r.RecommendedLimit
			}
		}
		cr := v1alpha1.ContainerResources{ContainerName: c.Name}
		if len(requests) > 0 {
			cr.Requests = &v1alpha1.ContainerResourceList{Target: requests}
		}
		if len(limits) > 0 {
			cr.Limits = &v1alpha1.ContainerResourceList{Target: limits}
		}
		if cr.Requests != nil || cr.Limits != nil {
			recs = append(recs, cr)
		}
	}
	return recs, nil
}

// patchStatus writes item's outcome to its ResourceRecommend's status
// subresource as katalyst does: the conditions Validated, Initialized and
// RecommendationProvided, and recommendResources with
// lastRecommendationTime when a recommendation was made. provided is why
// none was (nil when recs are the recommendation). The write is a JSON
// merge patch, sent only when the status differs from the one listed, so an
// unchanged recommendation costs no request. It does nothing unless status
// writing is enabled (WithStatusWriting).
//
// Unlike katalyst, a condition keeps its lastTransitionTime while its
// status stays the same, and lastRecommendationTime changes only with the
// recommendation; otherwise every run would rewrite every status.
func (c *Collector) patchStatus(ctx context.Context, item Item, recs []v1alpha1.ContainerResources, provided error) error {
	if !c.writeStatus {
		return nil
	}
	old := item.status
	next := desiredStatus(item, recs, provided, metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
	if equality.Semantic.DeepEqual(old, next) {
		return nil
	}
	patch, err := statusPatch(old, next)
	if err != nil {
		return fmt.Errorf("status of %s/%s: %w", item.Namespace, item.Name, err)
	}
	_, err = c.client.Resource(v1alpha1.GroupVersionResource()).Namespace(item.Namespace).
		Patch(ctx, item.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing the status of %s/%s: %w", item.Namespace, item.Name, err)
	}
	return nil
}

// desiredStatus is the status katalyst would write for item, with times
// kept from old where nothing changed.
func desiredStatus(item Item, recs []v1alpha1.ContainerResources, provided error, now metav1.Time) v1alpha1.ResourceRecommendStatus {
	old := item.status
	next := v1alpha1.ResourceRecommendStatus{ObservedGeneration: item.generation}
	cond := func(t v1alpha1.ResourceRecommendConditionType, err error, reason string) v1alpha1.ResourceRecommendCondition {
		c := v1alpha1.ResourceRecommendCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
		if err != nil {
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, reason, err.Error()
		}
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
	}
	if item.Invalid != nil {
		// Katalyst rebuilds the conditions each time: a rejected object
		// has only Validated, and loses its last recommendation.
		next.Conditions = []v1alpha1.ResourceRecommendCondition{cond(v1alpha1.Validated, item.Invalid, item.Invalid.Code)}
		return next
	}
	// Sorted by type, as katalyst writes them.
	next.Conditions = []v1alpha1.ResourceRecommendCondition{
		cond(v1alpha1.Initialized, nil, ""),
		cond(v1alpha1.RecommendationProvided, provided, CodeRecommendationNotReady),
		cond(v1alpha1.Validated, nil, ""),
	}
	if provided != nil {
		return next
	}
	sorted := make([]v1alpha1.ContainerResources, len(recs))
	for i := range recs {
		recs[i].DeepCopyInto(&sorted[i])
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ContainerName < sorted[j].ContainerName })
	next.RecommendResources = &v1alpha1.RecommendResources{ContainerRecommendations: sorted}
	next.LastRecommendationTime = &now
	if old.LastRecommendationTime != nil && equality.Semantic.DeepEqual(old.RecommendResources, next.RecommendResources) {
		next.LastRecommendationTime = old.LastRecommendationTime.DeepCopy()
	}
	return next
}

// statusPatch is a JSON merge patch from old to next: next's fields, and
// null for each field old has and next has not, which a merge patch would
// otherwise keep. Lists are replaced whole by a merge patch.
func statusPatch(old, next v1alpha1.ResourceRecommendStatus) ([]byte, error) {
	oldMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&old)
	if err != nil {
		return nil, err
	}
	nextMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return nil, err
	}
	for k := range oldMap {
		if _, ok := nextMap[k]; !ok {
			nextMap[k] = nil
		}
	}
	return json.Marshal(map[string]any{"status": nextMap})
}
