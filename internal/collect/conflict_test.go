package collect

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestCollectConflicts(t *testing.T) {
	bad := recommendObj("shop", "cart-typo", "Deployment", "cart", map[string]any{
		"containerName": "app", "controlledResourcesPolicies": []any{map[string]any{"resourceName": "cpu", "bufferPercent": int64(500)}},
	})
	// Two names in different shards of two, both on shop/pay.
	var pay []string
	for i := 0; len(pay) < 2; i++ {
		name := fmt.Sprintf("pay-%d", i)
		if len(pay) == 0 || Shard("shop", name, 2) != Shard("shop", pay[0], 2) {
			pay = append(pay, name)
		}
	}
	objs := []runtime.Object{
		deployment("shop", "web", container("app", "1", "1Gi")),
		deployment("shop", "api", container("app", "1", "1Gi")),
		deployment("shop", "cart", container("app", "1", "1Gi")),
		deployment("shop", "pay", container("app", "1", "1Gi")),
		deployment("other", "web", container("app", "1", "1Gi")),
		recommendObj("shop", "web", "Deployment", "web"),
		recommendObj("shop", "web-too", "Deployment", "web", map[string]any{
			"containerName": "app", "controlledResourcesPolicies": []any{map[string]any{"resourceName": "memory"}},
		}),
		recommendObj("shop", "api", "Deployment", "api"),
		recommendObj("shop", "cart", "Deployment", "cart"),
		bad,
		recommendObj("shop", pay[0], "Deployment", "pay"),
		recommendObj("shop", pay[1], "Deployment", "pay"),
		// Invalid in any shard: no rival of the pay ones.
		recommendObj("shop", "pay-typo", "Deployment", "pay", map[string]any{
			"containerName": "app", "controlledResourcesPolicies": []any{map[string]any{"resourceName": "gpu"}},
		}),
		// The same name in another namespace is another workload.
		recommendObj("other", "web", "Deployment", "web"),
	}
	summarize := func(items []Item) map[string]string {
		out := map[string]string{}
		for _, it := range items {
			out[it.Namespace+"/"+it.Name] = "valid"
			if it.Invalid != nil {
				out[it.Namespace+"/"+it.Name] = it.Invalid.Code + ": " + it.Invalid.Message
			}
		}
		return out
	}
	c, _ := newFakeCollector(t, objs...)
	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	want := map[string]string{
		"shop/web":     "TargetConflict: Deployment web is also changed by ResourceRecommend web-too: a workload takes one ResourceRecommend, so none of them changes it",
		"shop/web-too": "TargetConflict: Deployment web is also changed by ResourceRecommend web: a workload takes one ResourceRecommend, so none of them changes it",
		"shop/api":     "valid",
		// An invalid ResourceRecommend changes nothing, so it is no rival.
		"shop/cart":      "valid",
		"shop/cart-typo": "ResourceBuffersUnsupported: resource buffers should be in the range from 0 to 100",
		"shop/" + pay[0]: "TargetConflict: Deployment pay is also changed by ResourceRecommend " + pay[1] + ": a workload takes one ResourceRecommend, so none of them changes it",
		"shop/" + pay[1]: "TargetConflict: Deployment pay is also changed by ResourceRecommend " + pay[0] + ": a workload takes one ResourceRecommend, so none of them changes it",
		"other/web":      "valid",
		"shop/pay-typo":  "ResourceNameUnsupported: unsupported ResourceName, current supported values: [cpu memory]",
	}
	if d := cmp.Diff(want, summarize(items)); d != "" {
		t.Errorf("Collect() (-want +got):\n%s", d)
	}

	// Each shard sees the conflict with the other shard's ResourceRecommend.
	for shard := range 2 {
		c, _ := newFakeCollector(t, objs...)
		WithShard(shard, 2)(c)
		items, err := c.Collect(context.Background())
		if err != nil {
			t.Fatalf("shard %d: Collect() error = %v", shard, err)
		}
		got := summarize(items)
		for _, name := range pay {
			if Shard("shop", name, 2) != shard {
				continue
			}
			if got["shop/"+name] != want["shop/"+name] {
				t.Errorf("shard %d: shop/%s = %q, want %q", shard, name, got["shop/"+name], want["shop/"+name])
			}
		}
	}
}
