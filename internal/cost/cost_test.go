package cost

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

func ptr[T any](v T) *T { return &v }

func q(s string) *resource.Quantity { return ptr(resource.MustParse(s)) }

// TestReplicasCount checks where the replicas come from: the object for
// a target no HPA scales, the average over the window for one an HPA
// scales, the HPA's current count when kube-state-metrics had no series.
func TestReplicasCount(t *testing.T) {
	tests := []struct {
		name       string
		in         Replicas
		want       float64
		wantSource string
	}{
		{"spec", Replicas{Spec: ptr(int32(3))}, 3, "spec"},
		{"spec of zero", Replicas{Spec: ptr(int32(0))}, 0, "spec"},
		{"HPA average, to a tenth", Replicas{Spec: ptr(int32(2)), Scaled: true, HPACurrent: ptr(int32(5)), Average: 4.2371, HasAverage: true, Window: 7 * 24 * time.Hour},
			4.2, "average over 7d, kube-state-metrics"},
		{"HPA average over hours", Replicas{Scaled: true, Average: 2, HasAverage: true, Window: 36 * time.Hour}, 2, "average over 36h0m0s, kube-state-metrics"},
		{"HPA without series", Replicas{Spec: ptr(int32(2)), Scaled: true, HPACurrent: ptr(int32(5))}, 5, "HPA current, no kube-state-metrics series"},
		{"HPA without series nor status", Replicas{Spec: ptr(int32(2)), Scaled: true}, 2, "spec"},
		{"nothing", Replicas{}, 1, "assumed, the target states no replica count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, source := tt.in.Count()
			if got != tt.want || source != tt.wantSource {
				t.Errorf("Count() = %v, %q; want %v, %q", got, source, tt.want, tt.wantSource)
			}
		})
	}
}

// TestOf checks the arithmetic: the change per replica times replicas,
// its price over 730 hours, increases and decreases kept apart.
func TestOf(t *testing.T) {
	prices := plan.Prices{CPUCoreHour: 0.04, MemoryGiBHour: 0.005, Currency: "USD", Source: "settings"}
	tests := []struct {
		name       string
		containers []plan.Container
		replicas   float64
		want       plan.Cost
	}{
		{
			name: "a cut and a raise",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("500m"), Recommended: q("250m"), Changed: true},
				{Resource: corev1.ResourceMemory, Current: q("1Gi"), Recommended: q("1536Mi"), Changed: true},
			}}},
			replicas: 4,
			// cpu: -0.25 x 4 = -1 core; x 0.04 x 730 = -29.2.
			// memory: +0.5 GiB x 4 = +2 GiB; x 0.005 x 730 = +7.3.
			want: plan.Cost{
				CPUCores:   plan.Delta{Net: -1, Cut: -1},
				MemoryGiB:  plan.Delta{Net: 2, Raised: 2},
				Monthly:    plan.Delta{Net: -21.9, Raised: 7.3, Cut: -29.2},
				Containers: []plan.ContainerCost{{Name: "app", CPUCores: -1, MemoryGiB: 2, Monthly: -21.9}},
			},
		},
		{
			name: "two containers, one raised, a request set where none was",
			containers: []plan.Container{
				{Name: "app", Resources: []plan.Resource{{Resource: corev1.ResourceCPU, Current: q("2"), Recommended: q("1"), Changed: true}}},
				{Name: "sidecar", Resources: []plan.Resource{{Resource: corev1.ResourceCPU, Recommended: q("100m"), Changed: true}}},
			},
			replicas: 2,
			want: plan.Cost{
				CPUCores:  plan.Delta{Net: -1.8, Raised: 0.2, Cut: -2},
				MemoryGiB: plan.Delta{},
				Monthly:   plan.Delta{Net: -1.8 * 0.04 * 730, Raised: 0.2 * 0.04 * 730, Cut: -2 * 0.04 * 730},
				Containers: []plan.ContainerCost{{Name: "app", CPUCores: -2, Monthly: -2 * 0.04 * 730},
					{Name: "sidecar", CPUCores: 0.2, Monthly: 0.2 * 0.04 * 730}},
			},
		},
		{
			// Kubernetes requests the limit when only the limit is set:
			// 4Gi held now, 1Gi proposed, a cut of 3 GiB a replica.
			name: "no request under a limit counts from the limit",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceMemory, LiveLimit: q("4Gi"), Recommended: q("1Gi"), Changed: true},
			}}},
			replicas: 10,
			want: plan.Cost{
				MemoryGiB:  plan.Delta{Net: -30, Cut: -30},
				Monthly:    plan.Delta{Net: -30 * 0.005 * 730, Cut: -30 * 0.005 * 730},
				Containers: []plan.ContainerCost{{Name: "app", MemoryGiB: -30, Monthly: -30 * 0.005 * 730}},
			},
		},
		{
			name: "held back, unchanged and limit-only values count nothing",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("1"), Recommended: q("500m"), Changed: true, HeldBack: true},
				{Resource: corev1.ResourceMemory, Current: q("1Gi"), Recommended: q("1Gi")},
				{Resource: corev1.ResourceMemory, Current: q("2Gi"), Recommended: q("1Gi"), Changed: true, LimitsOnly: true},
				{Resource: corev1.ResourceCPU, Current: q("1"), Recommended: q("1"), Changed: true, Evidence: &plan.Evidence{HPA: "scales on cpu"}},
			}}},
			replicas: 3,
			want:     plan.Cost{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(&plan.Item{Containers: tt.containers}, tt.replicas, "spec", prices)
			if got.Replicas != tt.replicas || got.ReplicasSource != "spec" || got.Prices != prices {
				t.Errorf("Of() replicas %v from %q at %+v, want %v from spec at %+v", got.Replicas, got.ReplicasSource, got.Prices, tt.replicas, prices)
			}
			for _, d := range []struct {
				what      string
				got, want plan.Delta
			}{{"cpuCores", got.CPUCores, tt.want.CPUCores}, {"memoryGiB", got.MemoryGiB, tt.want.MemoryGiB}, {"monthly", got.Monthly, tt.want.Monthly}} {
				if !near(d.got.Net, d.want.Net) || !near(d.got.Raised, d.want.Raised) || !near(d.got.Cut, d.want.Cut) {
					t.Errorf("%s = %+v, want %+v", d.what, d.got, d.want)
				}
			}
			if len(got.Containers) != len(tt.want.Containers) {
				t.Fatalf("containers = %+v, want %+v", got.Containers, tt.want.Containers)
			}
			for i, c := range got.Containers {
				w := tt.want.Containers[i]
				if c.Name != w.Name || !near(c.CPUCores, w.CPUCores) || !near(c.MemoryGiB, w.MemoryGiB) || !near(c.Monthly, w.Monthly) {
					t.Errorf("container %d = %+v, want %+v", i, c, w)
				}
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestOfSaturates checks that figures no cluster reaches (a tenant's
// minAllowed of 1e15 cores over two billion replicas) are capped at
// plan.MaxFigure and named in Beyond, never wrapped or infinite, and that
// the figures of a sane change stay exact beside them.
func TestOfSaturates(t *testing.T) {
	prices := plan.Prices{CPUCoreHour: DefaultCPUCoreHour, MemoryGiBHour: DefaultMemoryGiBHour, Currency: "USD", Source: "settings"}
	const bound = plan.MaxFigure
	tests := []struct {
		name       string
		containers []plan.Container
		replicas   float64
		beyond     string
		cpu, gib   plan.Delta
		monthly    plan.Delta
	}{
		{
			name: "minAllowed 1e15 over 2e9 replicas",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("1"), Recommended: q("1e15"), Changed: true},
				{Resource: corev1.ResourceMemory, Current: q("1Gi"), Recommended: q("2Gi"), Changed: true},
			}}},
			replicas: 2e9,
			beyond:   "cpu cores, money per month",
			cpu:      plan.Delta{Net: bound, Raised: bound},
			gib:      plan.Delta{Net: 2e9, Raised: 2e9}, // within the bound: as it is
			monthly:  plan.Delta{Net: bound, Raised: bound},
		},
		{
			name: "money alone beyond: 1e11 cores at 730 hours",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("2e11"), Recommended: q("1e11"), Changed: true},
			}}},
			replicas: 1,
			beyond:   "money per month",
			cpu:      plan.Delta{Net: -1e11, Cut: -1e11},
			monthly:  plan.Delta{Net: -bound, Cut: -bound},
		},
		{
			name: "an infinite raise and an infinite cut are not a number",
			containers: []plan.Container{
				{Name: "up", Resources: []plan.Resource{{Resource: corev1.ResourceCPU, Current: q("1"), Recommended: q("1e308"), Changed: true}}},
				{Name: "down", Resources: []plan.Resource{{Resource: corev1.ResourceCPU, Current: q("1e308"), Recommended: q("1"), Changed: true}}},
			},
			replicas: 2e9,
			beyond:   "cpu cores, money per month",
			cpu:      plan.Delta{Net: 0, Raised: bound, Cut: -bound},
			monthly:  plan.Delta{Net: 0, Raised: bound, Cut: -bound},
		},
		{
			name: "a sane change is exact",
			containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("2"), Recommended: q("1"), Changed: true},
			}}},
			replicas: 1000,
			cpu:      plan.Delta{Net: -1000, Cut: -1000},
			monthly:  plan.Delta{Net: -1000 * DefaultCPUCoreHour * 730, Cut: -1000 * DefaultCPUCoreHour * 730},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(&plan.Item{Containers: tt.containers}, tt.replicas, "spec", prices)
			if got.Beyond != tt.beyond {
				t.Errorf("Beyond = %q, want %q", got.Beyond, tt.beyond)
			}
			for _, d := range []struct {
				what      string
				got, want plan.Delta
			}{{"cpuCores", got.CPUCores, tt.cpu}, {"memoryGiB", got.MemoryGiB, tt.gib}, {"monthly", got.Monthly, tt.monthly}} {
				if !near(d.got.Net, d.want.Net) || !near(d.got.Raised, d.want.Raised) || !near(d.got.Cut, d.want.Cut) {
					t.Errorf("%s = %+v, want %+v", d.what, d.got, d.want)
				}
			}
			for _, c := range got.Containers {
				for _, v := range []float64{c.CPUCores, c.MemoryGiB, c.Monthly} {
					if math.IsNaN(v) || math.Abs(v) > bound {
						t.Errorf("container %s = %+v, want its figures within ±%g", c.Name, c, bound)
					}
				}
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("the cost does not encode as the report's JSON: %v", err)
			}
		})
	}
}

// TestPricesFor checks the annotations that set a ResourceRecommend's own
// prices: taken when both or one is a decimal in bounds, refused whole
// (the run's prices used, the problem said) when one is not.
func TestPricesFor(t *testing.T) {
	run := plan.Prices{CPUCoreHour: DefaultCPUCoreHour, MemoryGiBHour: DefaultMemoryGiBHour, Currency: "USD"}
	tests := []struct {
		name        string
		annotations map[string]string
		want        plan.Prices
		problem     string
	}{
		{"none", nil, plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, ""},
		{"both", map[string]string{AnnotationPriceCPUCoreHour: "0.05", AnnotationPriceMemoryGiBHour: "0.0065"},
			plan.Prices{CPUCoreHour: 0.05, MemoryGiBHour: 0.0065, Currency: "USD", Source: "annotation"}, ""},
		{"cpu alone", map[string]string{AnnotationPriceCPUCoreHour: "1.5"},
			plan.Prices{CPUCoreHour: 1.5, MemoryGiBHour: 0.004237, Currency: "USD", Source: "annotation"}, ""},
		{"not a decimal", map[string]string{AnnotationPriceCPUCoreHour: "0.05", AnnotationPriceMemoryGiBHour: "1e-3"},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, `annotation recommend-job.io/price-memory-gib-hour: "1e-3" is not a decimal`},
		{"negative", map[string]string{AnnotationPriceCPUCoreHour: "-1"},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, "is not a decimal"},
		{"zero", map[string]string{AnnotationPriceCPUCoreHour: "0.000"},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, "0.000 is not above 0 and at most 1000"},
		{"above the bound", map[string]string{AnnotationPriceCPUCoreHour: "1000.5"},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, "is not above 0 and at most 1000"},
		{"NaN", map[string]string{AnnotationPriceCPUCoreHour: "NaN"},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, "is not a decimal"},
		{"long, cut in the message", map[string]string{AnnotationPriceCPUCoreHour: strings.Repeat("9", 5000)},
			plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}, `"` + strings.Repeat("9", 32) + `..." is not a decimal`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := PricesFor(tt.annotations, run)
			if got != tt.want {
				t.Errorf("PricesFor() = %+v, want %+v", got, tt.want)
			}
			if tt.problem == "" && problem != "" || !strings.Contains(problem, tt.problem) {
				t.Errorf("problem = %q, want one containing %q", problem, tt.problem)
			}
			if len(problem) > 200 {
				t.Errorf("problem is %d bytes long: the tenant's value is not cut", len(problem))
			}
		})
	}
}
