package usage

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// TestReaderFindsRolloutPodsByName checks that an Argo Rollout's pods,
// named like a Deployment's after the Rollout (with a template of its own
// or a workloadRef), are its history without kube-state-metrics'
// ownership series.
func TestReaderFindsRolloutPodsByName(t *testing.T) {
	api := &recordingAPI{answer: func(q string) model.Matrix {
		return model.Matrix{
			series("checkout-6c9b8f7d4-qz2xw", "app", 0.2),
			series("checkout-5b7c9d-h4j6k", "app", 0.4),
			series("checkout-canary-6c9b8f7d4-qz2xw", "app", 9),
		}
	}}
	rollout := WorkloadRef{Kind: "Rollout", Namespace: "shop", Name: "checkout"}
	got, err := NewReader(api, WithWindow(time.Hour)).Read(context.Background(), "shop", []WorkloadRef{rollout})
	if err != nil {
		t.Fatal(err)
	}
	cpu := got[rollout]["app"][corev1.ResourceCPU]
	if cpu == nil || len(cpu.Values) != 2 {
		t.Fatalf("rollout cpu history = %+v, want the samples of its two pods and not the canary's", cpu)
	}
	for _, v := range cpu.Values {
		if v == 9 {
			t.Errorf("checkout-canary's pod counted for checkout")
		}
	}
}
