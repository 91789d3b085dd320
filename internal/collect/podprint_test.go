package collect

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

// The print read with a workload is the one render computes from a
// built manifest, so that the two compare.
func TestWorkloadPodPrint(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "nginx:1.26",
				"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}},
			"volumes": []any{map[string]any{"name": "data"}},
		}}},
	}}
	w, err := workloadFrom(obj)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := kinds.PodPrintOf("apps", "Deployment", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": "nginx:1.26"}},
		"volumes":    []any{map[string]any{"name": "data"}},
	}}}})
	if w.PodPrint == "" || w.PodPrint != want {
		t.Errorf("PodPrint = %q, want %q", w.PodPrint, want)
	}
}
