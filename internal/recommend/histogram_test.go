package recommend

import (
	"math"
	"testing"
	"time"
)

func TestHistogramOptions(t *testing.T) {
	// ceil(log(1000 x 0.05 / 0.01 + 1) / log 1.05) + 1 = ceil(174.56) + 1 = 176,
	// and the same for memory: 1e12 x 0.05 / 1e7 = 5000 as well.
	for name, o := range map[string]HistogramOptions{"cpu": CPUHistogram, "memory": MemoryHistogram} {
		if n := o.numBuckets(); n != 176 {
			t.Errorf("%s buckets = %d, want 176", name, n)
		}
	}
	// Bucket 1 starts at 0.01 x (1.05 - 1) / 0.05 = 0.01; bucket 2 at
	// 0.01 x (1.1025 - 1) / 0.05 = 0.0205.
	if got := CPUHistogram.bucketStart(2); math.Abs(got-0.0205) > 1e-12 {
		t.Errorf("bucket 2 starts at %v, want 0.0205", got)
	}
	// 20 cores: log(20 x 5 + 1) / log 1.05 = 94.59, bucket 94.
	if got := CPUHistogram.findBucket(20, 176); got != 94 {
		t.Errorf("20 cores in bucket %d, want 94", got)
	}
	if got := CPUHistogram.findBucket(1e9, 176); got != 175 {
		t.Errorf("1e9 cores in bucket %d, want the last, 175", got)
	}
}

// TestHistogramKatalystVectors reproduces katalyst's histogram_task_test.go.
func TestHistogramKatalystVectors(t *testing.T) {
	now := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		age  time.Duration
		want float64
	}{
		// Weights 1000 x 2^-1 against 1: 20 holds 99.8% of the weight, so
		// p90 is the end of bucket 94, 0.2 x (1.05^95 - 1) = 20.40693.
		{name: "a day old", age: 24 * time.Hour, want: 20.40693},
		// 1000 x 2^-20 = 0.00095 against 1: the old sample has decayed away,
		// p90 is the end of 10's bucket 80, 0.2 x (1.05^81 - 1) = 10.207902.
		{name: "twenty days old", age: 20 * 24 * time.Hour, want: 10.207902},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistogram(CPUHistogram, DefaultHalfLife)
			h.Add(20, 1000, now.Add(-tt.age))
			h.Add(10, 1, now)
			if got := h.Percentile(0.9); math.Abs(got-tt.want) > 1e-5 { // katalyst states 5 decimals
				t.Errorf("Percentile(0.9) = %.7f, want %.7f", got, tt.want)
			}
		})
	}
}

func TestHistogramPercentile(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// Empty: 0.
	if got := NewHistogram(CPUHistogram, DefaultHalfLife).Percentile(0.9); got != 0 {
		t.Errorf("empty Percentile = %v, want 0", got)
	}
	// Nine samples of 1 core and one of 2, same time and weight: 90% of the
	// weight is reached in 1's bucket (log(1 x 5 + 1) / log 1.05 = 36.72,
	// bucket 36), which ends at 0.2 x (1.05^37 - 1) = 1.0163.
	h := NewHistogram(CPUHistogram, DefaultHalfLife)
	for i := range 9 {
		h.Add(1, 1, t0.Add(time.Duration(i)*time.Second))
	}
	h.Add(2, 1, t0)
	if got := h.Percentile(0.9); math.Abs(got-0.2*(math.Pow(1.05, 37)-1)) > 1e-9 {
		t.Errorf("Percentile(0.9) = %v, want 1.0163", got)
	}
	// Above 90% the 2-core sample's bucket counts (log 11 / log 1.05 =
	// 49.15, bucket 49): its end is 0.2 x (1.05^50 - 1) = 2.2935.
	if got := h.Percentile(0.95); math.Abs(got-0.2*(math.Pow(1.05, 50)-1)) > 1e-9 {
		t.Errorf("Percentile(0.95) = %v, want 2.2935", got)
	}
	// A value past the last bucket reports the last bucket's start.
	h = NewHistogram(CPUHistogram, DefaultHalfLife)
	h.Add(5000, 1, t0)
	if got, want := h.Percentile(0.9), CPUHistogram.bucketStart(175); got != want {
		t.Errorf("Percentile of an overflow = %v, want the last bucket's start %v", got, want)
	}
}

func TestHistogramRenormalizes(t *testing.T) {
	// 150 days apart is beyond 100 half-lives: the reference moves and the
	// old weight 2^-150 is below epsilon, so only the new sample counts.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewHistogram(CPUHistogram, DefaultHalfLife)
	h.Add(20, 1, t0)
	h.Add(10, 1, t0.Add(150*24*time.Hour))
	if got := h.Percentile(0.1); math.Abs(got-10.207902) > 1e-6 {
		t.Errorf("Percentile(0.1) = %v, want 10.207902, the old sample forgotten", got)
	}
	if math.IsInf(h.total, 0) || math.IsNaN(h.total) {
		t.Errorf("total weight = %v, want finite", h.total)
	}
}

// An infinite value or weight has no bucket and is left out.
func TestHistogramLeavesOutInfinities(t *testing.T) {
	h := NewHistogram(CPUHistogram, DefaultHalfLife)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	h.Add(math.Inf(1), 1, now)
	h.Add(1, math.Inf(1), now)
	if !h.Empty() {
		t.Errorf("histogram of infinities is not empty: total %v", h.total)
	}
}
