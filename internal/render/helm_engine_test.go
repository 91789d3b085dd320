package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// TestApplyRendersWithItsHelmEngine renders, with the Engine of
// WithHelmEngine, a HelmRelease's chart and an app of apps' chart whose
// kubeVersion admits Kubernetes 1.30 and later: Helm's defaults check no
// kubeVersion and a cluster the chart admits renders it, so the change
// lands; a cluster below it refuses the chart, which the change's error
// says, so the change does not.
func TestApplyRendersWithItsHelmEngine(t *testing.T) {
	admits := helm.Engine{Cluster: &helm.Cluster{KubeVersion: "v1.31.2"}}
	below := helm.Engine{Cluster: &helm.Cluster{KubeVersion: "v1.29.4"}}
	tests := []struct {
		name, dir, chart string
		opts             []Option
		wantChanged      bool
	}{
		{name: "a release, helm's defaults", dir: "helm-flux-inline", chart: "charts/shop/Chart.yaml", wantChanged: true},
		{name: "a release, a cluster the chart admits", dir: "helm-flux-inline", chart: "charts/shop/Chart.yaml", opts: []Option{WithHelmEngine(admits)}, wantChanged: true},
		{name: "a release, a cluster below the chart's kubeVersion", dir: "helm-flux-inline", chart: "charts/shop/Chart.yaml", opts: []Option{WithHelmEngine(below)}},
		{name: "an app of apps, helm's defaults", dir: "argo-app-of-apps", chart: "apps/Chart.yaml", wantChanged: true},
		{name: "an app of apps, a cluster the chart admits", dir: "argo-app-of-apps", chart: "apps/Chart.yaml", opts: []Option{WithHelmEngine(admits)}, wantChanged: true},
		{name: "an app of apps, a cluster below the chart's kubeVersion", dir: "argo-app-of-apps", chart: "apps/Chart.yaml", opts: []Option{WithHelmEngine(below)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := filepath.Join("testdata", tt.dir)
			spec := readSpec(t, filepath.Join(base, "changes.yaml"))
			dir := t.TempDir()
			copyTree(t, filepath.Join(base, "original"), dir)
			chartFile := filepath.Join(dir, filepath.FromSlash(tt.chart))
			data, err := os.ReadFile(chartFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(chartFile, []byte(strings.Replace(string(data), "\nversion:", "\nkubeVersion: \">=1.30.0-0\"\nversion:", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := Apply(context.Background(), dir, spec.Path, []Change{spec.Changes[0].change()}, tt.opts...)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			r := out.Results[0]
			if r.Changed != tt.wantChanged {
				t.Errorf("changed = %v (%v), want %v", r.Changed, r.Err, tt.wantChanged)
			}
			if refused := r.Err != nil && strings.Contains(r.Err.Error(), "incompatible with Kubernetes v1.29.4"); refused == tt.wantChanged {
				t.Errorf("err = %v; want the chart refused for the cluster's version: %v", r.Err, !tt.wantChanged)
			}
		})
	}
}
