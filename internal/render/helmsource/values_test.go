package helmsource

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestChooseLayer covers where a release's values go: the environment's
// own layers, never one a later layer overrides.
func TestChooseLayer(t *testing.T) {
	cpu := []Assignment{{Path: KeysPath("web", "resources", "requests", "cpu"), Quantity: resource.MustParse("1")}}
	file := func(what string, writable bool, values map[string]any) Layer {
		return Layer{What: what, File: what, Writable: writable, Values: values}
	}
	object := func(values map[string]any) Layer {
		return Layer{What: "object", Prefix: KeysPath("spec", "values"), Writable: true, Values: values}
	}
	sets := map[string]any{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}
	other := map[string]any{"web": map[string]any{"replicas": 2}}
	tests := []struct {
		name   string
		layers []Layer
		want   string
		err    string
	}{
		{"the environment's values file before empty object values", []Layer{file("shared", false, nil), file("own", true, other), object(nil)}, "own", ""},
		{"the layer that already sets the key", []Layer{file("own", true, other), object(sets)}, "object", ""},
		{"the object when the environment has no file", []Layer{file("shared", false, sets), object(other)}, "object", ""},
		{"not a file a later layer overrides", []Layer{file("own", true, nil), {What: "helm.values", Values: sets}, object(nil)}, "object", ""},
		{"refused when a layer above every own one sets it", []Layer{object(nil), {What: "parameters", Values: sets}}, "", "parameters sets web.resources.requests.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseLayer(tt.layers, cpu)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.What != tt.want {
				t.Errorf("chose %s, want %s", got.What, tt.want)
			}
		})
	}
}
