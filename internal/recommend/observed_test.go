package recommend

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// repeat is n samples of v, a minute apart from start.
func repeat(start time.Time, v float64, n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Time: start.Add(time.Duration(i) * time.Minute), Value: v}
	}
	return out
}

// bucketEnd is the end of the CPU bucket that holds v.
func bucketEnd(v float64) float64 {
	o := CPUHistogram
	return o.bucketStart(o.findBucket(v, o.numBuckets()) + 1)
}

// TestFoldObserved checks the usage a fold shows a reviewer: each sample
// counted once, whatever its value (the decaying histogram weighs CPU by
// usage) or its age (it halves old samples' weight).
func TestFoldObserved(t *testing.T) {
	var tenths []Sample
	for i := 1; i <= 10; i++ {
		tenths = append(tenths, Sample{Time: t0.Add(time.Duration(i) * time.Hour), Value: float64(i) / 10})
	}
	tests := []struct {
		name          string
		halfLife      time.Duration
		samples       []Sample
		p50, p90, max float64
	}{
		// 50 at 0.1, 40 at 0.2, 10 at 1 core: the 50th is 0.1 and the
		// 90th 0.2 (bucket ends 0.110266 and 0.215786). Weighted by usage,
		// 1 core holds 10 of the 23 cores' weight, and the decaying p90
		// would be its bucket.
		{name: "each sample counts once", halfLife: DefaultHalfLife,
			samples: append(append(repeat(t0, 0.1, 50), repeat(t0, 0.2, 40)...), repeat(t0, 1, 10)...),
			p50:     bucketEnd(0.1), p90: bucketEnd(0.2), max: 1},
		// The same, the busy minutes a week older with a 1h half-life:
		// their weight is gone from the decaying histogram, not from what
		// was observed.
		{name: "not decayed", halfLife: time.Hour,
			samples: append(append(repeat(t0, 0.1, 50), repeat(t0, 0.2, 40)...), repeat(t0.Add(-7*24*time.Hour), 1, 10)...),
			p50:     bucketEnd(0.1), p90: bucketEnd(0.2), max: 1},
		// 0.9 x 10 samples is the 9th, 0.9 core: its bucket ends at 0.9032;
		// the 5th, 0.5 core, in a bucket ending at 0.5111.
		{name: "rank of p x n", halfLife: DefaultHalfLife, samples: tenths, p50: bucketEnd(0.5), p90: bucketEnd(0.9), max: 1},
		// A bucket's end above every sample shows the highest sample.
		{name: "never above the max", halfLife: DefaultHalfLife, samples: repeat(t0, 0.1, 26), p50: 0.1, p90: 0.1, max: 0.1},
		{name: "idle", halfLife: DefaultHalfLife, samples: repeat(t0, 0, 26), p50: 0, p90: 0, max: 0},
		// Beyond the last bucket's start (1000 cores): the highest.
		{name: "last bucket", halfLife: DefaultHalfLife, samples: repeat(t0, 5000, 3), p50: 5000, p90: 5000, max: 5000},
		{name: "no samples", halfLife: DefaultHalfLife},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := foldOf(corev1.ResourceCPU, tt.halfLife, tt.samples)
			got := [3]float64{f.Observed(0.5), f.Observed(0.9), f.Peak()}
			want := [3]float64{tt.p50, tt.p90, tt.max}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9 {
					t.Errorf("p50, p90, max = %v, want %v", got, want)
					break
				}
			}
		})
	}
	// Bucket ends the comments above rely on.
	for v, end := range map[float64]float64{0.1: 0.110266, 0.2: 0.215786, 0.5: 0.511135, 0.9: 0.903203} {
		if math.Abs(bucketEnd(v)-end) > 1e-6 {
			t.Errorf("bucket end of %v = %v, want %v", v, bucketEnd(v), end)
		}
	}
}

func TestComputeObservedUsage(t *testing.T) {
	week := 7 * 24 * time.Hour
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		name                string
		in                  Input
		wantReason          string
		wantP50, wantP90    *float64
		wantMax             *float64
		wantWindow, wantSpn float64
		wantKills           int
	}{
		// 26 hourly peaks of 200Mi: the bucket ends above them, so the
		// percentiles are the peak.
		{name: "memory peaks", in: Input{Resource: corev1.ResourceMemory, Samples: hourly(t0, 200*mib, 25), Window: week, OOMKills: 3, OOMKilled: true},
			wantP50: f64(200 * mib), wantP90: f64(200 * mib), wantMax: f64(200 * mib), wantWindow: 7, wantSpn: 1.04, wantKills: 3},
		// A kill without a count is one.
		{name: "oom killed, no count", in: Input{Resource: corev1.ResourceMemory, Samples: hourly(t0, 200*mib, 25), OOMKilled: true},
			wantP50: f64(200 * mib), wantP90: f64(200 * mib), wantMax: f64(200 * mib), wantSpn: 1.04, wantKills: 1},
		// OOM kills are memory's: a CPU history shows none.
		{name: "cpu", in: Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, 0.2, 25), Window: 3 * 24 * time.Hour, OOMKills: 2},
			wantP50: f64(0.2), wantP90: f64(0.2), wantMax: f64(0.2), wantWindow: 3, wantSpn: 1.04},
		// Too little history for a value still shows what it holds.
		{name: "insufficient data", in: Input{Resource: corev1.ResourceCPU, Samples: repeat(t0, 0.3, 5), Window: week},
			wantReason: "insufficient data: 5 samples over 4m0s, need 12 over 24h0m0s",
			wantP50:    f64(0.3), wantP90: f64(0.3), wantMax: f64(0.3), wantWindow: 7},
		{name: "no samples", in: Input{Resource: corev1.ResourceMemory, Window: week, OOMKills: 1},
			wantReason: "insufficient data: no samples in the window", wantWindow: 7, wantKills: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := got.Evidence
			if got.Reason != tt.wantReason {
				t.Errorf("reason %q, want %q", got.Reason, tt.wantReason)
			}
			for _, v := range []struct {
				name      string
				got, want *float64
			}{{"p50", e.UsageP50, tt.wantP50}, {"p90", e.UsageP90, tt.wantP90}, {"max", e.UsageMax, tt.wantMax}} {
				if (v.got == nil) != (v.want == nil) || v.got != nil && math.Abs(*v.got-*v.want) > 1e-9 {
					t.Errorf("usage %s = %v, want %v", v.name, deref(v.got), deref(v.want))
				}
			}
			if e.WindowDays != tt.wantWindow || e.SpanDays != tt.wantSpn || e.OOMKills != tt.wantKills {
				t.Errorf("window %v days, span %v days, %d OOM kills; want %v, %v, %d", e.WindowDays, e.SpanDays, e.OOMKills, tt.wantWindow, tt.wantSpn, tt.wantKills)
			}
			// Observe shows the same, without a value.
			obs, err := Observe(tt.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if obs.Samples != e.Samples || obs.Span != e.Span || deref(obs.UsageP90) != deref(e.UsageP90) || obs.OOMKills != e.OOMKills || obs.RawValue != 0 {
				t.Errorf("Observe() = %+v, want the history of %+v and no value", obs, e)
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// TestItemHeldForAutoscaler checks that a request an HPA scales on keeps
// its value and shows what the history holds, the HPA, and the limit
// beside it; and that every resource shows its live limit.
func TestItemHeldForAutoscaler(t *testing.T) {
	it := collect.Item{Namespace: "shop", Name: "web",
		Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Containers: []collect.Container{{Name: "app",
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
			{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}}},
		HeldBack: map[corev1.ResourceName]string{corev1.ResourceCPU: "HorizontalPodAutoscaler shop/web scales on cpu utilization (70%)"},
	}
	reader := &windowUsage{history: hourlyHistory(0.1)}
	h, err := usage.ReadAll(context.Background(), reader, Wants([]collect.Item{it}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	u, err := h.Of(WantOf(it))
	if err != nil {
		t.Fatal(err)
	}
	p := ForItem(it, u, nil, Options{})
	cpu, mem := p.Containers[0].Resources[0], p.Containers[0].Resources[1]
	if cpu.Recommended != nil || cpu.Request != nil || !cpu.HeldBack || s(cpu.Current) != "100m" || s(cpu.LiveLimit) != "1" {
		t.Errorf("cpu: %+v, want 100m held back with its limit 1 and no value", cpu)
	}
	ev := cpu.Evidence
	if ev == nil || ev.HPA != it.HeldBack[corev1.ResourceCPU] || ev.Samples != 26 || ev.UsageMax == nil || *ev.UsageMax != 0.1 || ev.WindowDays != 7 || ev.RoundingStep != "" {
		t.Errorf("cpu evidence %+v, want the HPA and 26 samples of 0.1 over 7 days, no value", ev)
	}
	if s(mem.LiveLimit) != "1Gi" || mem.Evidence == nil || mem.Evidence.HPA != "" || mem.Evidence.UsageP50 == nil {
		t.Errorf("memory: %+v, want its 1Gi limit and its usage", mem)
	}
	// Without history, nothing to show but the hold.
	if r := heldForAutoscaler(it.Policies[0].Resources[0], &it.Workload.Containers[0], nil, "HPA", Options{}.WithDefaults()); r.Evidence != nil || !r.HeldBack {
		t.Errorf("held without history: %+v, want no evidence", r)
	}
}
