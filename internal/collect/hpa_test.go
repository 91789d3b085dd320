package collect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/recommend-job/recommend-job/internal/plan"
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
		// wantUtil are the metrics an adjustment changes.
		wantUtil []plan.Utilization
	}{
		{name: "no metrics means 80% cpu", hpa: hpa(),
			want: map[corev1.ResourceName]string{"cpu": "HorizontalPodAutoscaler shop/web scales on cpu utilization (80%, the default without metrics)"}},
		{name: "cpu and memory utilization", hpa: hpa(resource("Resource", "cpu", "Utilization", nil), resource("Resource", "memory", "Utilization", nil)),
			want: map[corev1.ResourceName]string{
				"cpu":    "HorizontalPodAutoscaler shop/web scales on cpu utilization (70%)",
				"memory": "HorizontalPodAutoscaler shop/web scales on memory utilization (70%)",
			},
			wantUtil: []plan.Utilization{{Index: 0, Resource: "cpu", Percent: 70}, {Index: 1, Resource: "memory", Percent: 70}}},
		{name: "average value does not depend on the request", hpa: hpa(resource("Resource", "cpu", "AverageValue", nil)),
			want: map[corev1.ResourceName]string{}},
		{name: "container resource", hpa: hpa(resource("ContainerResource", "cpu", "Utilization", map[string]any{"container": "app"})),
			want:     map[corev1.ResourceName]string{"cpu": "HorizontalPodAutoscaler shop/web scales on cpu utilization of container app (70%)"},
			wantUtil: []plan.Utilization{{Index: 0, Resource: "cpu", Container: "app", Percent: 70}}},
		{name: "the index is the metric's place among all", hpa: hpa(map[string]any{"type": "Pods"}, resource("Resource", "cpu", "Utilization", nil)),
			want:     map[corev1.ResourceName]string{"cpu": "HorizontalPodAutoscaler shop/web scales on cpu utilization (70%)"},
			wantUtil: []plan.Utilization{{Index: 1, Resource: "cpu", Percent: 70}}},
		{name: "pods and external metrics hold nothing back", hpa: hpa(map[string]any{"type": "Pods"}, map[string]any{"type": "External"}),
			want: map[corev1.ResourceName]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reasons, util := utilizationResources(tt.hpa)
			if d := cmp.Diff(tt.want, reasons); d != "" {
				t.Errorf("utilizationResources() reasons (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantUtil, util); d != "" {
				t.Errorf("utilizationResources() metrics (-want +got):\n%s", d)
			}
		})
	}
}

func TestHPAModes(t *testing.T) {
	key := targetKey{name: "web"}
	web := Autoscaler{ObjectRef: ObjectRef{Name: "web"}, Utilization: []plan.Utilization{{Resource: "cpu", Percent: 40}}}
	other := Autoscaler{ObjectRef: ObjectRef{Name: "other"}}
	cpuHeld := map[corev1.ResourceName]string{"cpu": "scales on cpu utilization (40%)"}
	tests := []struct {
		name      string
		read      hpaRead
		mode      HPAMode
		wantHolds map[corev1.ResourceName]string
		wantHPAs  []Autoscaler
	}{
		{name: "hold holds", mode: HPAHold, wantHolds: cpuHeld,
			read: hpaRead{holds: map[targetKey]map[corev1.ResourceName]string{key: cpuHeld}, autoscalers: map[targetKey][]Autoscaler{key: {web}}}},
		{name: "adjust adjusts one HPA's explicit target", mode: HPAAdjust, wantHPAs: []Autoscaler{web},
			read: hpaRead{holds: map[targetKey]map[corev1.ResourceName]string{key: cpuHeld}, autoscalers: map[targetKey][]Autoscaler{key: {web}}}},
		{name: "adjust holds what two HPAs scale", mode: HPAAdjust,
			wantHolds: map[corev1.ResourceName]string{"cpu": "scales on cpu utilization (40%); 2 HorizontalPodAutoscalers scale the target, so none is adjusted"},
			read:      hpaRead{holds: map[targetKey]map[corev1.ResourceName]string{key: cpuHeld}, autoscalers: map[targetKey][]Autoscaler{key: {other, web}}}},
		{name: "adjust holds the default target of an HPA without metrics", mode: HPAAdjust, wantHPAs: []Autoscaler{other},
			wantHolds: map[corev1.ResourceName]string{"cpu": "scales on cpu utilization (40%); it sets no metrics, so there is no target to adjust"},
			read:      hpaRead{holds: map[targetKey]map[corev1.ResourceName]string{key: cpuHeld}, autoscalers: map[targetKey][]Autoscaler{key: {other}}}},
		{name: "no HPA", mode: HPAAdjust, read: hpaRead{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holds, hpas := tt.read.of(key, tt.mode)
			if d := cmp.Diff(tt.wantHolds, holds); d != "" {
				t.Errorf("holds (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantHPAs, hpas); d != "" {
				t.Errorf("autoscalers (-want +got):\n%s", d)
			}
		})
	}
}

func TestHPAModeOf(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		run         HPAMode
		want        HPAMode
		wantErr     string
	}{
		{name: "no annotation takes the run's", run: HPAAdjust, want: HPAAdjust},
		{name: "adjust overrides hold", annotations: map[string]string{AnnotationHPAMode: "adjust"}, run: HPAHold, want: HPAAdjust},
		{name: "hold overrides adjust", annotations: map[string]string{AnnotationHPAMode: "hold"}, run: HPAAdjust, want: HPAHold},
		{name: "anything else is invalid", annotations: map[string]string{AnnotationHPAMode: "Adjust"}, run: HPAHold,
			wantErr: `annotation recommend-job.io/hpa-mode: "Adjust" is neither hold nor adjust`},
		{name: "a long value is cut", annotations: map[string]string{AnnotationHPAMode: strings.Repeat("x", 1000)}, run: HPAHold,
			wantErr: `annotation recommend-job.io/hpa-mode: "` + strings.Repeat("x", 64) + `..." is neither hold nor adjust`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, invalid := hpaModeOf(tt.annotations, tt.run)
			if tt.wantErr != "" {
				if invalid == nil || invalid.Code != CodeHPAModeInvalid || invalid.Message != tt.wantErr {
					t.Errorf("hpaModeOf = %q, %+v; want %s: %s", got, invalid, CodeHPAModeInvalid, tt.wantErr)
				}
				return
			}
			if invalid != nil || got != tt.want {
				t.Errorf("hpaModeOf = %q, %v; want %q", got, invalid, tt.want)
			}
		})
	}
}
