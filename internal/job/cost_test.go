package job

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/cost"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestWithCost checks that an item's cost is of its final requests at the
// replicas it was started with, at its own prices when its annotations
// set good ones, and at the run's, the problem said, when one is bad.
func TestWithCost(t *testing.T) {
	run := plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD"}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		wantPrice   float64
		problem     string
	}{
		{"run's prices", nil, 0.031611, ""},
		{"own price", map[string]string{cost.AnnotationPriceCPUCoreHour: "0.1"}, 0.1, ""},
		{"bad price", map[string]string{cost.AnnotationPriceCPUCoreHour: "cheap"}, 0.031611, `"cheap" is not a decimal`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			it := plan.Item{Namespace: "shop", Name: "web", Annotations: tt.annotations,
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
					{Resource: corev1.ResourceCPU, Current: q("1"), Recommended: q("500m"), Changed: true}}}},
				Cost: &plan.Cost{Replicas: 2, ReplicasSource: "spec"}}
			withCost(context.Background(), &it, run, slog.New(slog.DiscardHandler))
			c := it.Cost
			if c.Replicas != 2 || c.ReplicasSource != "spec" || c.CPUCores.Net != -1 || c.Prices.CPUCoreHour != tt.wantPrice {
				t.Errorf("cost = %+v, want -1 core over 2 replicas at %v", c, tt.wantPrice)
			}
			if want := -1 * tt.wantPrice * plan.HoursPerMonth; c.Monthly.Net != want {
				t.Errorf("monthly = %v, want %v", c.Monthly.Net, want)
			}
			if tt.problem == "" && c.PriceError != "" || !strings.Contains(c.PriceError, tt.problem) {
				t.Errorf("priceError = %q, want %q", c.PriceError, tt.problem)
			}
		})
	}
	var none plan.Item
	withCost(context.Background(), &none, run, slog.New(slog.DiscardHandler))
	if none.Cost != nil {
		t.Errorf("an item without replicas got a cost: %+v", none.Cost)
	}
}
