package recommend

import (
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// shortWindow is the window under which usage is shown per hour rather
// than per day: fewer than three points say nothing of a shape.
const shortWindow = 3 * 24 * time.Hour

// PeriodOf is the length of the periods a window's usage is shown in, and
// of the slots a checkpoint keeps of it: a day, or an hour for a window
// under three days.
func PeriodOf(window time.Duration) time.Duration {
	if window > 0 && window < shortWindow {
		return time.Hour
	}
	return DaySlot
}

// AnchorOf is where the periods of length of a window ending at end start:
// at a whole UTC day or hour, so that a cold run, a run from a checkpoint
// and a run without checkpoints cut the window the same way.
func AnchorOf(end time.Time, length time.Duration) time.Time {
	return end.UTC().Truncate(length)
}

// periods counts samples per period of time, for the usage of each
// period: per bucket of the histogram's, neither decayed nor weighted,
// and the peak. Slots keep the same counts in their slots; a Fold without
// slots keeps these beside its histogram.
type periods struct {
	length time.Duration
	anchor time.Time
	opts   HistogramOptions
	slots  map[int64]*slot
	// at and cur are the last sample's period: a series' samples come in
	// time order, most of them in the period of the one before.
	at  int64
	cur *slot
}

func newPeriods(res corev1.ResourceName, length time.Duration, anchor time.Time) *periods {
	opts := CPUHistogram
	if res == corev1.ResourceMemory {
		opts = MemoryHistogram
	}
	return &periods{length: length, anchor: anchor, opts: opts, slots: map[int64]*slot{}}
}

// add counts the sample v, of the given bucket, taken at t; weights are
// left to the fold.
func (p *periods) add(t time.Time, v float64, bucket int) {
	d := t.Sub(p.anchor)
	k := int64(d / p.length)
	if d < 0 && d%p.length != 0 {
		k--
	}
	sl := p.cur
	if sl == nil || k != p.at {
		if sl = p.slots[k]; sl == nil {
			sl = &slot{counts: map[int]uint32{}}
			p.slots[k] = sl
		}
		p.at, p.cur = k, sl
	}
	if sl.samples == 0 || v > sl.peak {
		sl.peak = v
	}
	sl.samples++
	sl.counts[bucket]++
}

// points are the usage of each period that ends after from and holds a
// sample, in time order.
func (p *periods) points(from time.Time) []plan.UsagePoint {
	keys := make([]int64, 0, len(p.slots))
	for k, sl := range p.slots {
		if sl.samples > 0 && p.anchor.Add(time.Duration(k+1)*p.length).After(from) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]plan.UsagePoint, 0, len(keys))
	for _, k := range keys {
		sl := p.slots[k]
		out = append(out, plan.UsagePoint{Start: p.anchor.Add(time.Duration(k) * p.length), P90: sl.observed(p.opts, 0.9), Max: sl.peak})
	}
	return out
}

// observed is the p-quantile of the slot's samples as Fold.Observed takes
// it: the end of the bucket of the ceil(p x n)-th smallest, never above
// the peak.
func (sl *slot) observed(opts HistogramOptions, p float64) float64 {
	rank := max(uint64(math.Ceil(p*float64(sl.samples)-1e-9)), 1)
	buckets := make([]int, 0, len(sl.counts))
	for b := range sl.counts {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	last := opts.numBuckets() - 1
	var seen uint64
	for _, b := range buckets {
		seen += uint64(sl.counts[b])
		if seen >= rank {
			if b == last {
				// The last bucket has no end.
				return sl.peak
			}
			return math.Min(opts.bucketStart(b+1), sl.peak)
		}
	}
	return sl.peak
}

// Points are the usage of each slot that ends after from and holds a
// sample: its start, the 90th percentile and the highest of its samples.
func (s *Slots) Points(from time.Time) []plan.UsagePoint {
	return (&periods{length: s.Length, anchor: s.Anchor, opts: s.opts(), slots: s.slots}).points(from)
}

// Points are the usage of each period of the fold's window: from its
// periods when it counted them (see FoldFor), or from the slots it was
// made of; and the periods' length.
func (f *Fold) Points() ([]plan.UsagePoint, time.Duration) {
	if f.periods != nil {
		return f.periods.points(time.Time{}), f.periods.length
	}
	return f.points, f.period
}

// pointsOf are the usage points of h and their periods' length: its
// fold's, or those of its samples in periods of PeriodOf its window. A
// fold's periods are its slots', which a window of an item's own may
// share with a longer one of its namespace.
func pointsOf(res corev1.ResourceName, h *usage.History) ([]plan.UsagePoint, time.Duration) {
	if h == nil {
		return nil, 0
	}
	if f, ok := h.Fold.(*Fold); ok {
		return f.Points()
	}
	if res == corev1.ResourceMemory {
		return memoryPoints(h), PeriodOf(h.Window)
	}
	return samplePoints(res, h), PeriodOf(h.Window)
}

// memoryPoints are the usage points of a memory history read whole, from
// its peaks per interval; a checkpointed one has its slots' (pointsOf).
func memoryPoints(h *usage.History) []plan.UsagePoint {
	return samplePoints(corev1.ResourceMemory, h)
}

// samplePoints are the usage points of the samples h keeps.
func samplePoints(res corev1.ResourceName, h *usage.History) []plan.UsagePoint {
	if len(h.Values) == 0 {
		return nil
	}
	length := PeriodOf(h.Window)
	p := newPeriods(res, length, AnchorOf(h.End, length))
	n := p.opts.numBuckets()
	for i, v := range h.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		p.add(h.Time(i), v, p.opts.findBucket(v, n))
	}
	return p.points(time.Time{})
}

// UsagePeriodName names a period length for people: "day" or "hour".
func UsagePeriodName(length time.Duration) string {
	if length == time.Hour {
		return "hour"
	}
	return "day"
}
