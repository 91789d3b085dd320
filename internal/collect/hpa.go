package collect

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hpaGVR is autoscaling/v2, the version that says what a
// HorizontalPodAutoscaler scales on.
var hpaGVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

// defaultHPAUtilization is the target an autoscaling/v2 HPA without
// metrics gets: 80% average CPU utilisation.
const defaultHPAUtilization = 80

// readHPAs lists the HorizontalPodAutoscalers in scope, one paged list, and
// returns for each target the resources it scales on by utilisation. A
// utilisation target is relative to the request: changing the request
// changes the scaling, so that resource is left to the HPA. Value and
// AverageValue targets do not depend on the request and hold nothing back.
func (c *Collector) readHPAs(ctx context.Context) (map[targetKey]map[corev1.ResourceName]string, error) {
	holds := map[targetKey]map[corev1.ResourceName]string{}
	err := c.eachObject(ctx, hpaGVR, c.scope.namespaces(), "", func(u *unstructured.Unstructured) error {
		ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "scaleTargetRef")
		if ref["kind"] == "" || ref["name"] == "" {
			return nil
		}
		key := targetKey{
			gk:        schema.FromAPIVersionAndKind(ref["apiVersion"], ref["kind"]).GroupKind(),
			namespace: u.GetNamespace(),
			name:      ref["name"],
		}
		for res, reason := range utilizationResources(u) {
			if holds[key] == nil {
				holds[key] = map[corev1.ResourceName]string{}
			}
			if _, seen := holds[key][res]; !seen {
				holds[key][res] = reason
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return holds, nil
}

// utilizationResources returns the resources hpa scales on by utilisation,
// with a reason naming the HPA.
func utilizationResources(hpa *unstructured.Unstructured) map[corev1.ResourceName]string {
	name := fmt.Sprintf("HorizontalPodAutoscaler %s/%s", hpa.GetNamespace(), hpa.GetName())
	metrics, found, _ := unstructured.NestedSlice(hpa.Object, "spec", "metrics")
	if !found || len(metrics) == 0 {
		return map[corev1.ResourceName]string{
			corev1.ResourceCPU: fmt.Sprintf("%s scales on cpu utilization (%d%%, the default without metrics)", name, defaultHPAUtilization),
		}
	}
	out := map[corev1.ResourceName]string{}
	for _, m := range metrics {
		metric, ok := m.(map[string]any)
		if !ok {
			continue
		}
		typ, _, _ := unstructured.NestedString(metric, "type")
		var field string
		switch typ {
		case "Resource":
			field = "resource"
		case "ContainerResource":
			field = "containerResource"
		default:
			continue
		}
		res, _, _ := unstructured.NestedString(metric, field, "name")
		target, _, _ := unstructured.NestedString(metric, field, "target", "type")
		if res == "" || target != "Utilization" {
			continue
		}
		reason := fmt.Sprintf("%s scales on %s utilization", name, res)
		if field == "containerResource" {
			container, _, _ := unstructured.NestedString(metric, field, "container")
			reason = fmt.Sprintf("%s scales on %s utilization of container %s", name, res, container)
		}
		if pct, ok, _ := unstructured.NestedInt64(metric, field, "target", "averageUtilization"); ok {
			reason += fmt.Sprintf(" (%d%%)", pct)
		}
		out[corev1.ResourceName(res)] = reason
	}
	return out
}
