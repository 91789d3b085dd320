package helmsource

import (
	"strings"
	"testing"
)

// TestValuesFromExactName checks that the ConfigMap a valuesFrom names is
// read when the build also renders a generated one of that name: the
// choice must not depend on the order of a map.
func TestValuesFromExactName(t *testing.T) {
	out := map[string]map[string]any{
		"/ConfigMap/shop/web-values":            {"metadata": map[string]any{"name": "web-values"}, "data": map[string]any{"values.yaml": "a: exact\n"}},
		"/ConfigMap/shop/web-values-5f8d9g7h2k": {"metadata": map[string]any{"name": "web-values-5f8d9g7h2k"}, "data": map[string]any{"values.yaml": "a: generated\n"}},
	}
	for range 100 {
		l, err := ValuesFrom("ConfigMap", "web-values", "", "", "shop", out)
		if err != nil || l.Values["a"] != "exact" {
			t.Fatalf("ValuesFrom = %v, %v; want the ConfigMap named web-values", l.Values, err)
		}
	}
}

// TestValuesFromSeveralGenerated checks that, with no ConfigMap of the
// very name, two generated from it are refused, naming both, rather than
// one read by chance.
func TestValuesFromSeveralGenerated(t *testing.T) {
	out := map[string]map[string]any{
		"/ConfigMap/shop/web-values-5f8d9g7h2k": {"metadata": map[string]any{"name": "web-values-5f8d9g7h2k"}, "data": map[string]any{"values.yaml": "a: one\n"}},
		"/ConfigMap/shop/web-values-7c6b5m4t2d": {"metadata": map[string]any{"name": "web-values-7c6b5m4t2d"}, "data": map[string]any{"values.yaml": "a: two\n"}},
	}
	_, err := ValuesFrom("ConfigMap", "web-values", "", "", "shop", out)
	if err == nil || !strings.Contains(err.Error(), "several ConfigMaps generated from it (web-values-5f8d9g7h2k, web-values-7c6b5m4t2d)") {
		t.Errorf("ValuesFrom = %v; want a refusal naming both generated ConfigMaps", err)
	}
	delete(out, "/ConfigMap/shop/web-values-7c6b5m4t2d")
	if l, err := ValuesFrom("ConfigMap", "web-values", "", "", "shop", out); err != nil || l.Values["a"] != "one" {
		t.Errorf("ValuesFrom with one generated = %v, %v; want it read", l.Values, err)
	}
}
