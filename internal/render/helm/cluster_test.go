package helm

import (
	"context"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// TestRenderWithTheCluster renders a chart whose templates read
// .Capabilities and whose kubeVersion sets a floor: with the Engine's
// cluster they see its version and API versions, in this process and in
// a render process alike, and a cluster below the floor refuses the
// chart; without one, Helm's defaults and no check. The cases run at the
// same time: each Engine's cluster is its own.
func TestRenderWithTheCluster(t *testing.T) {
	files := helmtest.Resources()
	files["Chart.yaml"] = strings.Replace(files["Chart.yaml"], "version:", "kubeVersion: \">=1.30.0-0\"\nversion:", 1)
	files["templates/caps.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" | quote }}
`
	ch := testChart(t, files)
	caps := func(objects []Object) string {
		for _, o := range objects {
			if o.Kind == "ConfigMap" && o.Name == "caps" {
				data, _ := o.Body["data"].(map[string]any)
				return data["kube"].(string) + " " + data["monitoring"].(string)
			}
		}
		return ""
	}
	tests := []struct {
		name    string
		cluster *Cluster
		isolate bool
		want    string
		wantErr string
	}{
		{name: "helm's defaults", want: "v1.20.0 false"},
		{name: "the cluster", cluster: &Cluster{KubeVersion: "v1.31.2-eks-1", APIVersions: []string{"v1", "apps/v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}},
			want: "v1.31.2-eks-1 true"},
		{name: "the cluster in a render process", isolate: true, cluster: &Cluster{KubeVersion: "v1.31.2", APIVersions: []string{"v1", "monitoring.coreos.com/v1/ServiceMonitor"}},
			want: "v1.31.2 true"},
		{name: "below the chart's kubeVersion", cluster: &Cluster{KubeVersion: "v1.29.4"},
			wantErr: "chart requires kubeVersion: >=1.30.0-0 which is incompatible with Kubernetes v1.29.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := testEngine()
			if tt.isolate {
				e = isolatedEngine(DefaultLimits())
			}
			e.Cluster = tt.cluster
			objects, err := e.Render(context.Background(), Release{Name: "shop", Namespace: "prod", Chart: ch,
				Values: map[string]any{"podLabels": map[string]any{"team": "checkout"}}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Render = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := caps(objects); got != tt.want {
				t.Errorf("capabilities seen = %q, want %q", got, tt.want)
			}
		})
	}
}
