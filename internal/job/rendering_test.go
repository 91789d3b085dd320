package job

import (
	"context"
	"log/slog"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
)

// TestRecordRenderingKeepsTheMethod checks that the plan says how each
// item's file was edited: of its containers' edits, the one that rewrote
// the most, so that a re-serialised subtree is never reported as a splice.
func TestRecordRenderingKeepsTheMethod(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web", Containers: []plan.Container{{Name: "app"}, {Name: "proxy"}}},
		{Namespace: "shop", Name: "api", Containers: []plan.Container{{Name: "api"}}},
	}}
	recordRendering(context.Background(), p, []render.Result{
		{Change: render.Change{Owner: "shop/web", Container: "app"}, File: "web.yaml", Changed: true, Method: render.MethodSubtree},
		{Change: render.Change{Owner: "shop/web", Container: "proxy"}, File: "web.yaml", Changed: true, Method: render.MethodSplice},
		{Change: render.Change{Owner: "shop/api", Container: "api"}, File: "api.yaml"},
	}, slog.New(slog.DiscardHandler))
	if got := p.Items[0].Source.Method; got != plan.MethodSubtree {
		t.Errorf("web's method = %q, want %q", got, plan.MethodSubtree)
	}
	if got := p.Items[1].Source.Method; got != "" {
		t.Errorf("api's file did not change, yet its method is %q", got)
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
