package recommend

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

func TestAutoscale(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	cpu := func(current, request string) plan.Resource {
		r := plan.Resource{Resource: corev1.ResourceCPU, Current: q(current), Evidence: &plan.Evidence{}}
		if request != "" {
			r.Recommended, r.Request, r.Changed = q(request), q(request), current != request
		}
		return r
	}
	item := func(target plan.UtilizationTarget, containers ...plan.Container) plan.Item {
		live := map[string]resource.Quantity{}
		for _, c := range containers {
			target.Containers = append(target.Containers, c.Name)
			if cur := c.Resources[0].Current; cur != nil {
				live[c.Name] = *cur
			}
		}
		target.Live, target.To = live, target.From
		return plan.Item{Containers: containers, Autoscalers: []plan.Autoscaler{{Name: "web", Targets: []plan.UtilizationTarget{target}}}}
	}
	tests := []struct {
		name     string
		item     plan.Item
		wantTo   int32
		wantHeld string // in the reason of every container's cpu, when held
	}{
		{name: "a halved request doubles the target",
			item:   item(plan.UtilizationTarget{Resource: "cpu", From: 40}, plan.Container{Name: "app", Resources: []plan.Resource{cpu("500m", "250m")}}),
			wantTo: 80},
		{name: "a pod's target is of the summed requests",
			item: item(plan.UtilizationTarget{Resource: "cpu", From: 60},
				plan.Container{Name: "app", Resources: []plan.Resource{cpu("800m", "400m")}},
				plan.Container{Name: "proxy", Resources: []plan.Resource{cpu("200m", "200m")}}),
			wantTo: 100},
		{name: "a container's target is of its own request",
			item: item(plan.UtilizationTarget{Resource: "cpu", From: 50, Container: "proxy"},
				plan.Container{Name: "app", Resources: []plan.Resource{cpu("800m", "400m")}},
				plan.Container{Name: "proxy", Resources: []plan.Resource{cpu("300m", "200m")}}),
			wantTo: 75},
		{name: "rounded to a whole percent",
			item:   item(plan.UtilizationTarget{Resource: "cpu", From: 70}, plan.Container{Name: "app", Resources: []plan.Resource{cpu("1", "700m")}}),
			wantTo: 100},
		{name: "beyond 100% holds",
			item:     item(plan.UtilizationTarget{Resource: "cpu", From: 80}, plan.Container{Name: "app", Resources: []plan.Resource{cpu("500m", "250m")}}),
			wantTo:   80,
			wantHeld: "HorizontalPodAutoscaler web targets 80% cpu utilization; with 250m in place of 500m per pod it would need 160%, outside 10-100%"},
		{name: "below 10% holds",
			item:     item(plan.UtilizationTarget{Resource: "cpu", From: 15}, plan.Container{Name: "app", Resources: []plan.Resource{cpu("100m", "200m")}}),
			wantTo:   15,
			wantHeld: "would need 8%, outside 10-100%"},
		{name: "a container without a request leaves the pod's utilization undefined",
			item: item(plan.UtilizationTarget{Resource: "cpu", From: 50},
				plan.Container{Name: "app", Resources: []plan.Resource{cpu("500m", "250m")}},
				plan.Container{Name: "proxy", Resources: []plan.Resource{{Resource: "cpu", Recommended: q("100m"), Request: q("100m"), Changed: true}}}),
			wantTo:   50,
			wantHeld: "which is undefined: container proxy has no cpu request"},
		{name: "a held request keeps the target",
			item:   item(plan.UtilizationTarget{Resource: "cpu", From: 40}, plan.Container{Name: "app", Resources: []plan.Resource{cpu("500m", "")}}),
			wantTo: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := tt.item
			Autoscale(&it)
			if got := it.Autoscalers[0].Targets[0].To; got != tt.wantTo {
				t.Errorf("To = %d%%, want %d%%", got, tt.wantTo)
			}
			for _, c := range it.Containers {
				r := c.Resources[0]
				switch {
				case tt.wantHeld == "" && r.HeldBack:
					t.Errorf("%s: held back: %s", c.Name, r.Reason)
				case tt.wantHeld != "" && (!r.HeldBack || r.Request != nil || r.Changed || !strings.Contains(r.Reason, tt.wantHeld)):
					t.Errorf("%s: held %v, request %v, reason %q; want held with %q", c.Name, r.HeldBack, r.Request, r.Reason, tt.wantHeld)
				}
			}
		})
	}
}

func TestAutoscaleLetsACorrectionThrough(t *testing.T) {
	from, to := resource.MustParse("100m"), resource.MustParse("400m")
	it := plan.Item{
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: "cpu", Current: &from, Request: &to, Changed: true, Correction: true}}}},
		Autoscalers: []plan.Autoscaler{{Name: "web", Targets: []plan.UtilizationTarget{{Resource: "cpu", From: 80, To: 80,
			Containers: []string{"app"}, Live: map[string]resource.Quantity{"app": from}}}}},
	}
	Autoscale(&it)
	if r := it.Containers[0].Resources[0]; r.HeldBack || r.Request == nil {
		t.Fatalf("the correction was held back: %s", r.Reason)
	}
	if got := it.Autoscalers[0].Targets[0].To; got != 20 {
		t.Errorf("To = %d%%, want 20%%", got)
	}
}
