package collect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestUtilizationResources(t *testing.T) {
	hpa := func(metrics ...any) *unstructured.Unstructured {
		spec := map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
		if metrics != nil {
			spec["metrics"] = metrics
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"namespace": "shop", "name": "web"}, "spec": spec,
		}}
	}
	resource := func(typ, name, target string, extra map[string]any) map[string]any {
		field := map[string]any{"name": name, "target": map[string]any{"type": target}}
		if target == "Utilization" {
			field["target"].(map[string]any)["averageUtilization"] = int64(70)
		}
		for k, v := range extra {
			field[k] = v
		}
		key := "resource"
		if typ == "ContainerResource" {
			key = "containerResource"
		}
		return map[string]any{"type": typ, key: field}
	}
	tests := []struct {
		name string
		hpa  *unstructured.Unstructured
		want map[corev1.ResourceName]string
	}{
		{name: "no metrics means 80% cpu", hpa: hpa(),
			want: map[corev1.ResourceName]string{"cpu": "HorizontalPodAutoscaler shop/web scales on cpu utilization (80%, the default without metrics)"}},
		{name: "cpu and memory utilization", hpa: hpa(resource("Resource", "cpu", "Utilization", nil), resource("Resource", "memory", "Utilization", nil)),
			want: map[corev1.ResourceName]string{
				"cpu":    "HorizontalPodAutoscaler shop/web scales on cpu utilization (70%)",
				"memory": "HorizontalPodAutoscaler shop/web scales on memory utilization (70%)",
			}},
		{name: "average value does not depend on the request", hpa: hpa(resource("Resource", "cpu", "AverageValue", nil)),
			want: map[corev1.ResourceName]string{}},
		{name: "container resource", hpa: hpa(resource("ContainerResource", "cpu", "Utilization", map[string]any{"container": "app"})),
			want: map[corev1.ResourceName]string{"cpu": "HorizontalPodAutoscaler shop/web scales on cpu utilization of container app (70%)"}},
		{name: "pods and external metrics hold nothing back", hpa: hpa(map[string]any{"type": "Pods"}, map[string]any{"type": "External"}),
			want: map[corev1.ResourceName]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, utilizationResources(tt.hpa)); d != "" {
				t.Errorf("utilizationResources() (-want +got):\n%s", d)
			}
		})
	}
}
