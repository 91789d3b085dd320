package helm

import (
	"context"
	"testing"
)

// TestWithDefaults checks that a chart given other defaults renders with
// them, keeps its own files, tells itself apart by its digest, and leaves
// the chart it came from as it was.
func TestWithDefaults(t *testing.T) {
	files := map[string][]byte{
		"Chart.yaml":                []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"),
		"values.yaml":               []byte("replicas: 1\n"),
		"values-production.yaml":    []byte("replicas: 5\n"),
		"templates/deployment.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: {{ .Values.replicas }}\n"),
	}
	ch, err := NewChart("test", files)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := ch.File("values-production.yaml")
	if !ok || string(data) != "replicas: 5\n" {
		t.Fatalf("File(values-production.yaml) = %q, %v", data, ok)
	}
	if _, ok := ch.File("missing.yaml"); ok {
		t.Error("File found a file the chart does not have")
	}
	prod, err := ch.WithDefaults(map[string]any{"replicas": 5})
	if err != nil {
		t.Fatal(err)
	}
	if prod.Digest == ch.Digest {
		t.Error("the chart with other defaults has the same digest")
	}
	replicas := func(c *Chart) any {
		objs, err := testEngine().Render(context.Background(), Release{Name: "app", Namespace: "ns", Chart: c})
		if err != nil {
			t.Fatal(err)
		}
		return objs[0].Body["spec"].(map[string]any)["replicas"]
	}
	if got := replicas(prod); got != float64(5) {
		t.Errorf("with the production defaults, replicas = %v, want 5", got)
	}
	if got := replicas(ch); got != float64(1) {
		t.Errorf("the original chart renders replicas = %v, want 1", got)
	}
}
