package job

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
)

// TestRecordRenderingKeepsTheMethod checks that the plan says how each
// item's file was edited: of its containers' edits, the one that rewrote
// the most, so that a re-serialised subtree is never reported as a splice;
// and why its source was chosen among several.
func TestRecordRenderingKeepsTheMethod(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web", Containers: []plan.Container{{Name: "app"}, {Name: "proxy"}}},
		{Namespace: "shop", Name: "api", Containers: []plan.Container{{Name: "api"}}},
	}}
	recordRendering(context.Background(), p, []render.Result{
		{Change: render.Change{Owner: "shop/web", Container: "app"}, File: "web.yaml", Changed: true, Method: render.MethodSubtree,
			Chosen: "chosen among a, b"},
		{Change: render.Change{Owner: "shop/web", Container: "proxy"}, File: "web.yaml", Changed: true, Method: render.MethodSplice},
		{Change: render.Change{Owner: "shop/api", Container: "api"}, File: "api.yaml"},
	}, slog.New(slog.DiscardHandler))
	if got := p.Items[0].Source.Method; got != plan.MethodSubtree {
		t.Errorf("web's method = %q, want %q", got, plan.MethodSubtree)
	}
	if got := p.Items[0].Source.Chosen; got != "chosen among a, b" {
		t.Errorf("web's source chosen = %q, want why", got)
	}
	if got := p.Items[1].Source.Method; got != "" {
		t.Errorf("api's file did not change, yet its method is %q", got)
	}
}

// TestRecordRenderingFollowsHelm checks that the plan says which Helm
// release an item's values went through and, per container, at which
// values keys; that a container rendered without Helm gets no keys; and
// that a retry forgets them.
func TestRecordRenderingFollowsHelm(t *testing.T) {
	shop := &render.HelmSource{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop",
		Chart: "shop", Version: "1.4.0", ChartSource: "https://charts.example.com shop 1.4.0",
		Layer: "the values file charts/shop/values-production.yaml"}
	withKeys := func(keys map[string]string) *render.HelmSource {
		h := *shop
		h.Keys = keys
		return &h
	}
	wantHelm := &plan.Helm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop",
		Chart: "shop", Version: "1.4.0", ChartSource: "https://charts.example.com shop 1.4.0",
		Layer: "the values file charts/shop/values-production.yaml"}
	tests := []struct {
		name     string
		results  []render.Result
		wantHelm *plan.Helm
		wantKeys map[string]map[string]string
		wantErr  string
	}{
		{
			name: "keys at paths and scalar keys",
			results: []render.Result{
				{Change: render.Change{Owner: "shop/web", Container: "web"}, File: "charts/shop/values-production.yaml", Changed: true,
					Helm: withKeys(map[string]string{"requests.cpu": "web.resources.requests.cpu", "requests.memory": "web.resources.requests.memory"})},
				{Change: render.Change{Owner: "shop/web", Container: "worker"}, File: "charts/shop/values-production.yaml", Changed: true,
					Helm: withKeys(map[string]string{"requests.cpu": "cpuRequest"})},
			},
			wantHelm: wantHelm,
			wantKeys: map[string]map[string]string{
				"web":    {"requests.cpu": "web.resources.requests.cpu", "requests.memory": "web.resources.requests.memory"},
				"worker": {"requests.cpu": "cpuRequest"},
			},
		},
		{
			name: "already in the values",
			results: []render.Result{
				{Change: render.Change{Owner: "shop/web", Container: "web"}, File: "charts/shop/values-production.yaml",
					Helm: withKeys(map[string]string{"requests.cpu": "web.resources.requests.cpu"})},
			},
			wantHelm: wantHelm,
			wantKeys: map[string]map[string]string{"web": {"requests.cpu": "web.resources.requests.cpu"}},
		},
		{
			name: "no key found",
			results: []render.Result{
				{Change: render.Change{Owner: "shop/web", Container: "web"}, File: "apps/shop.yaml", Helm: shop,
					Err: errors.New("helm: no values key sets requests.cpu of web")},
			},
			wantHelm: wantHelm,
			wantErr:  "helm: no values key sets requests.cpu of web",
		},
		{
			name: "a manifest",
			results: []render.Result{
				{Change: render.Change{Owner: "shop/web", Container: "web"}, File: "apps/web.yaml", Changed: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Containers: []plan.Container{{Name: "web"}, {Name: "worker"}}}}}
			recordRendering(context.Background(), p, tt.results, slog.New(slog.DiscardHandler))
			src := p.Items[0].Source
			if d := cmp.Diff(tt.wantHelm, src.Helm); d != "" {
				t.Errorf("source's Helm (-want +got):\n%s", d)
			}
			if src.Error != tt.wantErr {
				t.Errorf("source's error = %q, want %q", src.Error, tt.wantErr)
			}
			for _, c := range p.Items[0].Containers {
				if d := cmp.Diff(tt.wantKeys[c.Name], c.ValuesKeys); d != "" {
					t.Errorf("%s's values keys (-want +got):\n%s", c.Name, d)
				}
			}
			// The plan's keys are its own: render's map may be reused.
			for _, r := range tt.results {
				if r.Helm != nil && r.Helm.Keys != nil {
					r.Helm.Keys["requests.cpu"] = "changed"
				}
			}
			if got := p.Items[0].Containers[0].ValuesKeys["requests.cpu"]; got == "changed" {
				t.Error("the plan shares its values keys with render's result")
			}
			forgetRendering(p)
			for _, c := range p.Items[0].Containers {
				if p.Items[0].Source != nil || c.ValuesKeys != nil {
					t.Errorf("after forgetRendering, %s keeps source %+v and keys %v", c.Name, p.Items[0].Source, c.ValuesKeys)
				}
			}
		})
	}
}

// TestMethodsAgree checks that render's methods are the plan's words.
func TestMethodsAgree(t *testing.T) {
	for r, p := range map[render.Method]string{render.MethodSplice: plan.MethodSplice, render.MethodSubtree: plan.MethodSubtree, render.MethodNewFile: plan.MethodNewFile} {
		if string(r) != p {
			t.Errorf("render's %q is the plan's %q", r, p)
		}
	}
}

// TestRecordRenderingHoldsWhatAnUnadjustedHPAScalesOn checks that a
// resource render held for an HPA it could not adjust stays in the plan,
// with the reason, in every container, its HPA's target with it, while the
// container's other values go on.
func TestRecordRenderingHoldsWhatAnUnadjustedHPAScalesOn(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web",
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
			{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Request: q("250m"), Changed: true},
			{Resource: "memory", Current: q("1Gi"), Recommended: q("512Mi"), Request: q("512Mi"), Changed: true},
		}}},
		Autoscalers: []plan.Autoscaler{{Name: "web", Targets: []plan.UtilizationTarget{{Resource: "cpu", From: 40, To: 80,
			Containers: []string{"app"}, Live: map[string]resource.Quantity{"app": *q("500m")}}}}},
	}}}
	recordRendering(context.Background(), p, []render.Result{{
		Change: render.Change{Owner: "shop/web", Container: "app"},
		Held:   []corev1.ResourceName{"cpu"}, HeldReason: "a Helm chart renders its HorizontalPodAutoscaler web",
	}}, slog.New(slog.DiscardHandler))
	it := p.Items[0]
	if cpu := it.Containers[0].Resources[0]; !cpu.HeldBack || cpu.Request != nil || cpu.Changed ||
		cpu.Reason != "held back: a Helm chart renders its HorizontalPodAutoscaler web" {
		t.Errorf("cpu = %+v, want held with the reason", cpu)
	}
	if memory := it.Containers[0].Resources[1]; memory.HeldBack || memory.Request == nil || !memory.Changed {
		t.Errorf("memory = %+v, want it still changed", memory)
	}
	if target := it.Autoscalers[0].Targets[0]; target.To != 40 {
		t.Errorf("HPA target = %d%%, want 40%%, as the cpu request stays", target.To)
	}
}
