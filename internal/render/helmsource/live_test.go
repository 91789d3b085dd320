package helmsource

import (
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestCheckLive checks that a HelmRelease file is refused when the
// cluster's HelmRelease of that name, which is what Flux installs, names
// another chart or other values, and passes when they differ only as the
// API server or Flux's substitution would make them.
func TestCheckLive(t *testing.T) {
	const spec = "  chart:\n    spec:\n      chart: web\n      sourceRef: {kind: HelmRepository, name: charts}\n"
	repo := fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n")
	tests := []struct {
		name, file, live string
		why              string // "" when the file passes
	}{
		{"the same, numbers and a defaulted version aside",
			spec + "  values: {replicas: 2}\n",
			spec + "      version: '*'\n  values: {replicas: 2.0}\n", ""},
		{"other values",
			spec + "  values: {replicas: 2}\n",
			spec + "  values: {replicas: 3}\n", "says otherwise at spec.values"},
		{"another chart",
			spec,
			strings.Replace(spec, "chart: web", "chart: api", 1), "says otherwise at spec.chart.spec.chart"},
		{"another release name",
			spec,
			spec + "  releaseName: other\n", "says otherwise at spec.releaseName"},
		{"values Flux substitutes",
			spec + "  values: {host: '${cluster}.example.com'}\n",
			spec + "  values: {host: eu.example.com}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var live map[string]any
			if err := sigsyaml.Unmarshal([]byte(helmRelease(tt.live)), &live); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"apps/web.yaml": helmRelease(tt.file), "infra/charts.yaml": repo}
			_, _, _, err := loadLive(t, files, hrTarget, nil, []map[string]any{live})
			switch {
			case tt.why == "" && err != nil:
				t.Errorf("Load = %v, want the file to pass", err)
			case tt.why != "" && (err == nil || !strings.Contains(err.Error(), tt.why)):
				t.Errorf("Load = %v, want a refusal saying %q", err, tt.why)
			}
		})
	}
}
