package collect

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReplicasOf checks the replica count collect reads from a live
// object: spec.replicas, a DaemonSet's desired pods, none when the object
// has no number in range.
func TestReplicasOf(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]any
		want int32 // -1: none
	}{
		{"deployment", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": int64(3)}}, 3},
		{"scaled to zero", map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": map[string]any{"replicas": int64(0)}}, 0},
		{"daemonset", map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": map[string]any{},
			"status": map[string]any{"desiredNumberScheduled": int64(12)}}, 12},
		{"cronjob", map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "spec": map[string]any{}}, -1},
		{"not a number", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": "3"}}, -1},
		{"out of range", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": int64(1) << 40}}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replicasOf(&unstructured.Unstructured{Object: tt.obj})
			switch {
			case tt.want < 0 && got != nil:
				t.Errorf("replicasOf() = %d, want none", *got)
			case tt.want >= 0 && (got == nil || *got != tt.want):
				t.Errorf("replicasOf() = %v, want %d", got, tt.want)
			}
		})
	}
}

// TestScalerOf checks the HPA's current replica count: its status's, none
// before it has one.
func TestScalerOf(t *testing.T) {
	hpa := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "web"},
		"status": map[string]any{"currentReplicas": int64(5)}}}
	if s := scalerOf(hpa); s.Name != "web" || s.CurrentReplicas == nil || *s.CurrentReplicas != 5 {
		t.Errorf("scalerOf() = %+v, want web at 5", s)
	}
	delete(hpa.Object, "status")
	if s := scalerOf(hpa); s.CurrentReplicas != nil {
		t.Errorf("scalerOf() without status = %d, want none", *s.CurrentReplicas)
	}
}
