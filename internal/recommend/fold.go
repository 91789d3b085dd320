package recommend

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// Fold is the history of one container resource folded into its decaying
// histogram as the samples arrive, in any order: all that Compute needs
// of them (how many, their first and last time, the highest) without
// keeping them, so that a run's memory does not grow with its history.
// Beside the decaying histogram it counts the samples per bucket of the
// same buckets, neither decayed nor weighted, for the usage a reviewer
// sees: 4 bytes a bucket, 704 bytes a fold, against the 1,408 of the
// decaying histogram's weights.
type Fold struct {
	resource    corev1.ResourceName
	hist        *Histogram
	counts      []uint32
	logGrowth   float64 // of the histogram's Growth, found once
	samples     int
	first, last time.Time
	peak        float64
	// periods counts the samples per period for the usage chart when the
	// fold takes them itself; points are those of the slots it was made
	// of, period their length.
	periods *periods
	points  []plan.UsagePoint
	period  time.Duration
}

// NewFold returns an empty fold of res, whose samples decay with halfLife
// (none when zero) from reference, the start of the window they come
// from: fixing it in advance, rather than at the first sample, makes the
// fold's weights the same whatever order the samples come in. A zero
// reference is the first sample's time.
func NewFold(res corev1.ResourceName, halfLife time.Duration, reference time.Time) *Fold {
	opts := CPUHistogram
	if res == corev1.ResourceMemory {
		opts = MemoryHistogram
	}
	h := NewHistogram(opts, halfLife)
	if halfLife > 0 && !reference.IsZero() {
		h.reference = reference.Round(halfLife)
	}
	return &Fold{resource: res, hist: h, counts: make([]uint32, len(h.weights)), logGrowth: math.Log(opts.Growth)}
}

// Add folds in the sample v taken at t. A value that is not a finite,
// non-negative number says nothing about usage and is left out.
func (f *Fold) Add(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return
	}
	if f.samples == 0 || t.Before(f.first) {
		f.first = t
	}
	if f.samples == 0 || t.After(f.last) {
		f.last = t
	}
	if f.samples == 0 || v > f.peak {
		f.peak = v
	}
	f.samples++
	b := f.hist.opts.bucketOf(v, len(f.counts), f.logGrowth)
	if w := sampleWeight(f.resource, v); w > 0 && !math.IsNaN(w) && !math.IsInf(w, 0) {
		f.hist.addTo(b, w, t)
	}
	f.counts[b]++
	if f.periods != nil {
		f.periods.add(t, v, b)
	}
}

// Observed is the p-quantile (p in (0, 1]) of the samples as they were
// observed, each counted once whatever its time or value: the upper end
// of the bucket that holds the ceil(p x n)-th smallest of the n samples,
// so at most 5% above it (or the width of the first bucket), and never
// above the highest sample. It is 0 without samples.
func (f *Fold) Observed(p float64) float64 {
	if f.samples == 0 {
		return 0
	}
	// The slack keeps 0.9 x 10 the 9th sample, not the 10th.
	rank := max(uint64(math.Ceil(p*float64(f.samples)-1e-9)), 1)
	var seen uint64
	for b, n := range f.counts[:len(f.counts)-1] {
		seen += uint64(n)
		if seen >= rank {
			return math.Min(f.hist.opts.bucketStart(b+1), f.peak)
		}
	}
	// The last bucket has no end: what lands there is at most the peak.
	return f.peak
}

// Peak is the highest sample; 0 without samples.
func (f *Fold) Peak() float64 { return f.peak }

// Samples is how many samples were folded in.
func (f *Fold) Samples() int { return f.samples }

// foldOf folds samples, in their order.
func foldOf(res corev1.ResourceName, halfLife time.Duration, samples []Sample) *Fold {
	f := NewFold(res, halfLife, time.Time{})
	for _, s := range samples {
		f.Add(s.Time, s.Value)
	}
	return f
}

// sampleWeight is a sample's weight in the histogram: a CPU sample weighs
// its usage, so busy minutes count more; a memory peak counts once.
func sampleWeight(res corev1.ResourceName, v float64) float64 {
	if res == corev1.ResourceCPU {
		return math.Max(v, minCPUWeight)
	}
	return 1
}
