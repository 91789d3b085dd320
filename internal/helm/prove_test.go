package helm

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/helm/helmtest"
)

func TestProve(t *testing.T) {
	q := resource.MustParse
	web := Container{Kind: "Deployment", Name: "shop-components-web", Container: "web"}
	sidecar := Container{Kind: "Deployment", Namespace: "ns", Name: "shop-components-web", Container: "log-shipper"}
	set := func(path string, v any) map[string]any {
		keys := strings.Split(path, ".")
		m := map[string]any{keys[len(keys)-1]: v}
		for i := len(keys) - 2; i >= 0; i-- {
			m = map[string]any{keys[i]: m}
		}
		return m
	}
	tests := []struct {
		name   string
		chart  map[string]string
		values map[string]any
		after  map[string]any
		want   []Expect
		// fails are what the error must say; none for a proof that holds.
		fails []string
		// not are what the error must not say.
		not []string
	}{
		{
			name:  "the requests and a new limit of one container",
			chart: helmtest.Components(),
			after: Merge(set("web.resources.requests.cpu", "300m"), set("web.resources.limits.cpu", "1")),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}, Limits: corev1.ResourceList{"cpu": q("1")}}},
		},
		{
			name:  "a quantity written another way is the same quantity",
			chart: helmtest.Components(),
			after: set("web.resources.requests.memory", "0.25Gi"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"memory": q("256Mi")}}},
		},
		{
			name:   "two containers of one object, on values that already set them",
			chart:  helmtest.Components(),
			values: set("web.resources.requests.cpu", "400m"),
			after: Merge(set("web.resources.requests.cpu", "350m"), map[string]any{"sidecars": []any{map[string]any{
				"name": "log-shipper", "image": "registry.example.com/tools/log-shipper:1.4.2",
				"resources": map[string]any{"requests": map[string]any{"cpu": "20m", "memory": "64Mi"}},
			}}}),
			want: []Expect{
				{Container: web, Requests: corev1.ResourceList{"cpu": q("350m")}},
				// An expected value may be the one it had.
				{Container: sidecar, Requests: corev1.ResourceList{"cpu": q("20m"), "memory": q("64Mi")}},
			},
		},
		{
			name:  "a list replaced without a value it held",
			chart: helmtest.Components(),
			after: map[string]any{"sidecars": []any{map[string]any{
				"name": "log-shipper", "image": "registry.example.com/tools/log-shipper:1.4.2",
				"resources": map[string]any{"requests": map[string]any{"cpu": "20m"}},
			}}},
			want:  []Expect{{Container: sidecar, Requests: corev1.ResourceList{"cpu": q("20m")}}},
			fails: []string{`Deployment ns/shop-components-web: spec.template.spec.containers[1].resources.requests.memory: "64Mi" → absent`},
		},
		{
			name:  "a value the change leaves out",
			chart: helmtest.Resources(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m"), "memory": q("128Mi")}}},
			fails: []string{"Deployment ns/shop-resources:app requests.memory is not set after the change, want 128Mi"},
		},
		{
			name:  "a change that also moves another container",
			chart: helmtest.Components(),
			after: Merge(set("web.resources.requests.cpu", "300m"), set("worker.resources.requests.cpu", "600m")),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Deployment ns/shop-components-worker: spec.template.spec.containers[0].resources.requests.cpu: "500m" → "600m"`},
			not:   []string{"shop-components-web:"},
		},
		{
			name:  "a change that also moves a label",
			chart: helmtest.Resources(),
			after: Merge(set("resources.requests.cpu", "300m"), set("podLabels.team", "checkout")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Deployment ns/shop-resources: spec.template.metadata.labels.team: absent → "checkout"`},
		},
		{
			name:  "a change that does not reach the target",
			chart: helmtest.Components(),
			after: set("web.resource.requests.cpu", "300m"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"Deployment ns/shop-components-web:web requests.cpu is 250m after the change, want 300m"},
		},
		{
			name:  "a change that sets another field than asked",
			chart: helmtest.Components(),
			after: set("web.resources.limits.cpu", "300m"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{
				"requests.cpu is 250m after the change, want 300m",
				`spec.template.spec.containers[0].resources.limits.cpu: absent → "300m"`,
			},
		},
		{
			name:  "a change that renames the objects",
			chart: helmtest.Resources(),
			after: map[string]any{"fullnameOverride": "renamed"},
			want:  nil,
			fails: []string{"Deployment ns/shop-resources is no longer rendered", "Deployment ns/renamed is rendered only after the change"},
		},
		{
			name:  "an expected container the release does not render",
			chart: helmtest.Resources(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "nginx"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"Deployment ns/shop-resources:nginx is not rendered after the change"},
		},
		{
			name:  "values the schema refuses",
			chart: helmtest.Strict(),
			after: set("resources.requests.gpu", "1"),
			fails: []string{"rendering after the change", "schema"},
		},
		{
			name:  "a chart that renders differently each time",
			chart: helmtest.Random(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"chart random 0.1.0 renders differently each time with the same values", "Secret ns/shop-random: data.password"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Release{Name: "shop", Namespace: "ns", Chart: testChart(t, tt.chart), Values: tt.values}
			err := Prove(context.Background(), r, Merge(tt.values, tt.after), tt.want)
			if len(tt.fails) == 0 {
				if err != nil {
					t.Fatalf("Prove: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrProofFailed) {
				t.Fatalf("Prove = %v, want ErrProofFailed", err)
			}
			for _, s := range tt.fails {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q says %q", err, s)
				}
			}
		})
	}
}

func TestProveBoundsItsReport(t *testing.T) {
	r := Release{Name: "shop", Namespace: "ns", Chart: testChart(t, helmtest.Resources())}
	labels := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		labels[k] = "x"
	}
	err := Prove(context.Background(), r, map[string]any{"podLabels": labels}, nil)
	if !errors.Is(err, ErrProofFailed) {
		t.Fatalf("Prove = %v, want ErrProofFailed", err)
	}
	if !strings.Contains(err.Error(), "and 3 more") || strings.Contains(err.Error(), "labels.f") {
		t.Errorf("error %q does not stop after %d differences", err, proofLines)
	}
}

func TestProveReleaseThatDoesNotRender(t *testing.T) {
	r := Release{Name: "api", Namespace: "ns", Chart: testChart(t, helmtest.Profiles()), Values: map[string]any{"profile": "huge"}}
	err := Prove(context.Background(), r, map[string]any{"profile": "small"}, nil)
	if !errors.Is(err, ErrRender) || errors.Is(err, ErrProofFailed) {
		t.Fatalf("Prove of a release that does not render = %v, want ErrRender alone", err)
	}
}
