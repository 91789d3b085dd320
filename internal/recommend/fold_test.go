package recommend

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// A fold given the samples in any order, decayed from the window's start,
// recommends what the samples in time order do.
func TestFoldInAnyOrderComputesAsSamples(t *testing.T) {
	end := time.Date(2026, 11, 21, 12, 7, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name     string
		resource corev1.ResourceName
		window   time.Duration
		halfLife time.Duration
		step     time.Duration
		value    func(i int) float64
	}{
		{"cpu week, bursts", corev1.ResourceCPU, 7 * 24 * time.Hour, DefaultHalfLife, time.Minute, func(i int) float64 {
			if i%97 < 3 {
				return 2 + rng.Float64()
			}
			return 0.05 + rng.Float64()/10
		}},
		{"cpu month, 1h half-life", corev1.ResourceCPU, 30 * 24 * time.Hour, time.Hour, 5 * time.Minute, func(i int) float64 { return float64(i%500) / 100 }},
		{"memory peaks", corev1.ResourceMemory, 7 * 24 * time.Hour, DefaultHalfLife, time.Hour, func(i int) float64 { return 1e8 + float64(i%24)*1e7 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var samples []Sample
			// Two pods, the second from the middle of the window on.
			n := int(tt.window / tt.step)
			for pod := range 2 {
				for i := pod * n / 2; i <= n; i++ {
					samples = append(samples, Sample{Time: end.Add(-time.Duration(n-i) * tt.step), Value: tt.value(i)})
				}
			}
			in := Input{Resource: tt.resource, BufferPercent: 10, Window: tt.window, Now: end}
			opts := Options{HalfLife: tt.halfLife}
			sorted := in
			sorted.Samples = append([]Sample(nil), samples...)
			sortSamples(sorted.Samples)
			want, err := Compute(sorted, opts)
			if err != nil {
				t.Fatal(err)
			}

			f := NewFold(tt.resource, tt.halfLife, end.Add(-tt.window))
			rng.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
			for _, s := range samples {
				f.Add(s.Time, s.Value)
			}
			folded := in
			folded.Fold = f
			got, err := Compute(folded, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Compute() of the fold differs from the samples' (-samples +fold):\n%s", diff)
			}
			if got.Evidence.Samples != len(samples) {
				t.Errorf("fold of %d samples, want %d", got.Evidence.Samples, len(samples))
			}
		})
	}
}

// Values that are no usage (NaN, infinities, negative) are left out of a
// fold, and do not stop a recommendation.
func TestFoldLeavesOutNonUsage(t *testing.T) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	f := NewFold(corev1.ResourceCPU, DefaultHalfLife, end.Add(-48*time.Hour))
	for i := range 48 {
		f.Add(end.Add(-time.Duration(i)*time.Hour), 0.5)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		f.Add(end.Add(-72*time.Hour), v)
	}
	got, err := Compute(Input{Resource: corev1.ResourceCPU, Fold: f, Now: end}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Value == nil || got.Evidence.Samples != 48 || got.Evidence.Span != "47h0m0s" {
		t.Errorf("Compute() = %v from %d samples over %s, want a value from 48 over 47h0m0s", got.Value, got.Evidence.Samples, got.Evidence.Span)
	}
}

func sortSamples(s []Sample) {
	slices.SortStableFunc(s, func(a, b Sample) int { return a.Time.Compare(b.Time) })
}
