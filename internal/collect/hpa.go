package collect

import (
	"context"
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// hpaGVR is autoscaling/v2, the version that says what a
// HorizontalPodAutoscaler scales on.
var hpaGVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

// defaultHPAUtilization is the target an autoscaling/v2 HPA without
// metrics gets: 80% average CPU utilisation.
const defaultHPAUtilization = 80

// HPAMode is what the run does with a resource a HorizontalPodAutoscaler
// scales the target on by utilisation: HPAHold or HPAAdjust.
type HPAMode string

// HPA modes.
const (
	// HPAHold leaves the request alone (Item.HeldBack).
	HPAHold HPAMode = "hold"
	// HPAAdjust changes the request and the HPA's utilisation target
	// together, so that the HPA scales at the same usage per pod
	// (Item.Autoscalers).
	HPAAdjust HPAMode = "adjust"
)

// AnnotationHPAMode overrides the run's HPA mode for one ResourceRecommend.
const AnnotationHPAMode = "recommend-job.io/hpa-mode"

// CodeHPAModeInvalid reports an AnnotationHPAMode that is neither HPAHold
// nor HPAAdjust. Katalyst reads no such annotation and has no code for it.
const CodeHPAModeInvalid = "HPAModeInvalid"

// hpaModeOf returns the HPA mode of a ResourceRecommend with annotations:
// its AnnotationHPAMode, else the run's mode.
func hpaModeOf(annotations map[string]string, run HPAMode) (HPAMode, *ValidationError) {
	value, set := annotations[AnnotationHPAMode]
	if !set {
		return run, nil
	}
	switch mode := HPAMode(value); mode {
	case HPAHold, HPAAdjust:
		return mode, nil
	}
	// The value is the tenant's: a long one is cut, so that it cannot fill
	// the status and the report.
	if len(value) > 64 {
		value = value[:64] + "..."
	}
	return "", invalid(CodeHPAModeInvalid, "annotation %s: %q is neither %s nor %s", AnnotationHPAMode, value, HPAHold, HPAAdjust)
}

// Autoscaler is a HorizontalPodAutoscaler that scales a target on the
// utilisation of a resource, which is relative to the request.
type Autoscaler struct {
	ObjectRef
	// Utilization are its utilisation targets, in spec.metrics order.
	Utilization []plan.Utilization
}

// hpaRead is what the HorizontalPodAutoscalers in scope say about each
// target: the resources to hold, with the reason, and the HPAs.
type hpaRead struct {
	holds       map[targetKey]map[corev1.ResourceName]string
	autoscalers map[targetKey][]Autoscaler
	// scalers are the HPA that scales each target, on whatever metric.
	scalers map[targetKey]Scaler
}

// Scaler is the HorizontalPodAutoscaler that sets a target's replicas,
// whatever it scales on: the target's spec.replicas is then not the
// number of pods it runs.
type Scaler struct {
	Name string
	// CurrentReplicas is its status.currentReplicas; nil before it has
	// one.
	CurrentReplicas *int32
}

// scalerOf is hpa as a Scaler.
func scalerOf(hpa *unstructured.Unstructured) Scaler {
	s := Scaler{Name: hpa.GetName()}
	if n, found, err := unstructured.NestedInt64(hpa.Object, "status", "currentReplicas"); found && err == nil && n >= 0 && n <= math.MaxInt32 {
		current := int32(n)
		s.CurrentReplicas = &current
	}
	return s
}

// readHPAs lists the HorizontalPodAutoscalers in scope, one paged list, and
// returns for each target the resources it scales on by utilisation. A
// utilisation target is relative to the request: changing the request
// changes the scaling. Value and AverageValue targets do not depend on the
// request and hold nothing back.
func (c *Collector) readHPAs(ctx context.Context) (hpaRead, error) {
	read := hpaRead{holds: map[targetKey]map[corev1.ResourceName]string{}, autoscalers: map[targetKey][]Autoscaler{}, scalers: map[targetKey]Scaler{}}
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
		// Two HPAs on one target fight; the first by name is taken.
		if s, seen := read.scalers[key]; !seen || u.GetName() < s.Name {
			read.scalers[key] = scalerOf(u)
		}
		reasons, utilization := utilizationResources(u)
		for res, reason := range reasons {
			if read.holds[key] == nil {
				read.holds[key] = map[corev1.ResourceName]string{}
			}
			if _, seen := read.holds[key][res]; !seen {
				read.holds[key][res] = reason
			}
		}
		if len(reasons) > 0 {
			read.autoscalers[key] = append(read.autoscalers[key], Autoscaler{ObjectRef: objectRefOf(u), Utilization: utilization})
		}
		return nil
	})
	if err != nil {
		return hpaRead{}, err
	}
	for _, as := range read.autoscalers {
		sort.Slice(as, func(i, j int) bool { return as[i].Name < as[j].Name })
	}
	return read, nil
}

// of returns, for the target key, the resources to hold and the HPAs to
// adjust in mode: in adjust mode, a resource is adjusted instead of held
// when exactly one HPA scales the target and it names the resource's
// utilisation target in its metrics.
func (r hpaRead) of(key targetKey, mode HPAMode) (map[corev1.ResourceName]string, []Autoscaler) {
	holds, autoscalers := r.holds[key], r.autoscalers[key]
	if mode != HPAAdjust || len(holds) == 0 {
		return holds, nil
	}
	if len(autoscalers) != 1 {
		more := map[corev1.ResourceName]string{}
		for res, why := range holds {
			more[res] = fmt.Sprintf("%s; %d HorizontalPodAutoscalers scale the target, so none is adjusted", why, len(autoscalers))
		}
		return more, nil
	}
	left := map[corev1.ResourceName]string{}
	for res, why := range holds {
		explicit := false
		for _, m := range autoscalers[0].Utilization {
			explicit = explicit || m.Resource == res
		}
		if !explicit {
			left[res] = why + "; it sets no metrics, so there is no target to adjust"
		}
	}
	if len(left) == 0 {
		left = nil
	}
	return left, autoscalers
}

// utilizationResources returns the resources hpa scales on by utilisation,
// with a reason naming the HPA, and its utilisation metrics.
func utilizationResources(hpa *unstructured.Unstructured) (map[corev1.ResourceName]string, []plan.Utilization) {
	name := fmt.Sprintf("HorizontalPodAutoscaler %s/%s", hpa.GetNamespace(), hpa.GetName())
	metrics, found, _ := unstructured.NestedSlice(hpa.Object, "spec", "metrics")
	if !found || len(metrics) == 0 {
		return map[corev1.ResourceName]string{
			corev1.ResourceCPU: fmt.Sprintf("%s scales on cpu utilization (%d%%, the default without metrics)", name, defaultHPAUtilization),
		}, nil
	}
	out := map[corev1.ResourceName]string{}
	var utilization []plan.Utilization
	for i, m := range metrics {
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
		var container string
		if field == "containerResource" {
			container, _, _ = unstructured.NestedString(metric, field, "container")
			reason = fmt.Sprintf("%s scales on %s utilization of container %s", name, res, container)
		}
		pct, ok, _ := unstructured.NestedInt64(metric, field, "target", "averageUtilization")
		if ok {
			reason += fmt.Sprintf(" (%d%%)", pct)
			utilization = append(utilization, plan.Utilization{Index: i, Resource: corev1.ResourceName(res), Container: container, Percent: int32(pct)})
		}
		if _, seen := out[corev1.ResourceName(res)]; !seen {
			out[corev1.ResourceName(res)] = reason
		}
	}
	return out, utilization
}
