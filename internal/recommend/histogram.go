package recommend

import (
	"math"
	"time"
)

// HistogramOptions shape a histogram's exponential buckets: bucket i >= 1
// starts at FirstBucket x (Growth^i - 1) / (Growth - 1), so every bucket is
// Growth times wider than the one before it.
type HistogramOptions struct {
	// FirstBucket is the width of bucket 0.
	FirstBucket float64
	// MaxValue is the start of the last bucket's range; larger values land
	// in the last bucket.
	MaxValue float64
	// Growth is the ratio of a bucket's width to the previous one's.
	Growth float64
	// Epsilon is the weight below which a bucket counts as empty.
	Epsilon float64
}

// Katalyst's (and VPA's) histograms: 5% bucket growth, from 0.01 core to
// 1000 cores for CPU and from 1e7 bytes to 1e12 bytes for memory.
var (
	CPUHistogram    = HistogramOptions{FirstBucket: 0.01, MaxValue: 1000, Growth: 1.05, Epsilon: 1e-4}
	MemoryHistogram = HistogramOptions{FirstBucket: 1e7, MaxValue: 1e12, Growth: 1.05, Epsilon: 1e-4}
)

// numBuckets is enough buckets for the last one to start at or above
// MaxValue, as VPA counts them (176 for both default histograms).
func (o HistogramOptions) numBuckets() int {
	ratio := o.Growth - 1
	return int(math.Ceil(math.Log(o.MaxValue*ratio/o.FirstBucket+1)/math.Log(o.Growth))) + 1
}

// bucketStart is the smallest value of bucket b.
func (o HistogramOptions) bucketStart(b int) float64 {
	return o.FirstBucket * (math.Pow(o.Growth, float64(b)) - 1) / (o.Growth - 1)
}

// findBucket is the bucket value falls in.
func (o HistogramOptions) findBucket(value float64, n int) int {
	if value < o.FirstBucket {
		return 0
	}
	return o.bucketOf(value, n, math.Log(o.Growth))
}

// bucketOf is findBucket with the log of Growth given, for callers that
// find the buckets of many samples.
func (o HistogramOptions) bucketOf(value float64, n int, logGrowth float64) int {
	if value < o.FirstBucket {
		return 0
	}
	b := int(math.Log(value*(o.Growth-1)/o.FirstBucket+1) / logGrowth)
	return min(b, n-1)
}

// maxDecayExponent bounds the weights' exponent before the reference time
// moves forward, so that weights stay far from overflowing.
const maxDecayExponent = 100

// Histogram is VPA's decaying exponential histogram: a sample's weight
// doubles with every half-life it is newer than the reference time, which is
// the same as halving the weight of everything older, so recent usage
// counts more.
type Histogram struct {
	opts      HistogramOptions
	halfLife  time.Duration
	weights   []float64
	total     float64
	minBucket int
	maxBucket int
	reference time.Time
}

// NewHistogram returns an empty histogram; a zero halfLife means no decay.
func NewHistogram(opts HistogramOptions, halfLife time.Duration) *Histogram {
	n := opts.numBuckets()
	return &Histogram{opts: opts, halfLife: halfLife, weights: make([]float64, n), minBucket: n - 1}
}

// Add adds value with weight, as of time t; a value or weight that is not
// a finite number is left out.
func (h *Histogram) Add(value, weight float64, t time.Time) {
	if weight <= 0 || math.IsNaN(value) || math.IsInf(value, 0) || math.IsNaN(weight) || math.IsInf(weight, 0) {
		return
	}
	h.addTo(h.opts.findBucket(value, len(h.weights)), weight, t)
}

// addTo adds weight, taken at t, to bucket b: Add's work once the bucket
// is known, so that a fold finds each sample's bucket once.
func (h *Histogram) addTo(b int, weight float64, t time.Time) {
	weight *= h.decay(t)
	h.weights[b] += weight
	h.total += weight
	if b < h.minBucket && h.weights[b] >= h.opts.Epsilon {
		h.minBucket = b
	}
	if b > h.maxBucket && h.weights[b] >= h.opts.Epsilon {
		h.maxBucket = b
	}
}

// decay is 2^((t - reference) / halfLife), moving the reference forward
// (in whole half-lives, rescaling the weights) when t is too far past it.
func (h *Histogram) decay(t time.Time) float64 {
	if h.halfLife <= 0 {
		return 1
	}
	switch {
	case h.reference.IsZero():
		h.reference = t.Round(h.halfLife)
	case t.After(h.reference.Add(h.halfLife * maxDecayExponent)):
		newRef := t.Round(h.halfLife)
		exp := math.Round(float64(h.reference.Sub(newRef)) / float64(h.halfLife))
		h.scale(math.Ldexp(1, int(exp)))
		h.reference = newRef
	}
	return math.Exp2(float64(t.Sub(h.reference)) / float64(h.halfLife))
}

func (h *Histogram) scale(f float64) {
	for b := range h.weights {
		h.weights[b] *= f
	}
	h.total *= f
	last := len(h.weights) - 1
	for h.weights[h.minBucket] < h.opts.Epsilon && h.minBucket < last {
		h.minBucket++
	}
	for h.weights[h.maxBucket] < h.opts.Epsilon && h.maxBucket > 0 {
		h.maxBucket--
	}
}

// Empty reports whether no bucket holds a weight above epsilon.
func (h *Histogram) Empty() bool {
	return h.weights[h.minBucket] < h.opts.Epsilon
}

// Percentile returns the end of the bucket in which the cumulative weight
// reaches p of the total, so the result is rounded up to a bucket boundary
// (by up to 5% of the value plus the first bucket's width); for the last
// bucket, its start. An empty histogram gives 0.
func (h *Histogram) Percentile(p float64) float64 {
	_, end := h.PercentileBucket(p)
	return end
}

// PercentileBucket returns the start and end of the bucket in which the
// cumulative weight reaches p of the total; for the last bucket, which has
// no end, its start twice. An empty histogram gives 0, 0.
func (h *Histogram) PercentileBucket(p float64) (start, end float64) {
	if h.Empty() {
		return 0, 0
	}
	threshold := p * h.total
	sum := 0.0
	b := h.minBucket
	for ; b < h.maxBucket; b++ {
		sum += h.weights[b]
		if sum >= threshold {
			break
		}
	}
	start = h.opts.bucketStart(b)
	if b < len(h.weights)-1 {
		return start, h.opts.bucketStart(b + 1)
	}
	return start, start
}
