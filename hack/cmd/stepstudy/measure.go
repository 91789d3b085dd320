package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// outcome is what the algorithm made of one history.
type outcome struct {
	// raw is the decaying histogram's p90, in cores.
	raw float64
	// request is the recommended request, in cores: raw plus the default
	// buffer, rounded.
	request float64
	samples int
}

// recommendCPU runs the job's algorithm on samples as the job does for a
// container without current values or bounds: katalyst's p90, a 24h
// half-life and the default 30% buffer.
func recommendCPU(in recommend.Input) (outcome, error) {
	in.Resource = corev1.ResourceCPU
	in.BufferPercent = collect.DefaultBufferPercent
	res, err := recommend.Compute(in, recommend.Options{})
	if err != nil {
		return outcome{}, fmt.Errorf("computing the recommendation: %w", err)
	}
	if res.Value == nil {
		return outcome{}, fmt.Errorf("computing the recommendation: no value: %s", res.Reason)
	}
	return outcome{raw: res.Evidence.RawValue, request: res.Value.AsApproximateFloat64(), samples: len(in.Samples)}, nil
}

// fromHistory is the algorithm's input for h, as recommend.ForItem makes it.
func fromHistory(h *usage.History) recommend.Input {
	in := recommend.Input{Window: h.Window, Now: h.End, First: h.First, Last: h.Last}
	in.Samples = make([]recommend.Sample, len(h.Values))
	for i, v := range h.Values {
		in.Samples[i] = recommend.Sample{Time: h.Time(i), Value: v}
	}
	return in
}

// truthInput is the exact history of the counters: the rate of every
// scrape interval of every pod, at the end of the interval, for the
// intervals that end in the window (end - window, end]. The samples of a
// series must be in time order, as history.Series makes them.
func truthInput(series []testbed.Series, end time.Time, window time.Duration) (recommend.Input, error) {
	in := recommend.Input{Window: window, Now: end}
	from := end.Add(-window)
	for _, s := range series {
		for i := 1; i < len(s.Samples); i++ {
			prev, cur := s.Samples[i-1], s.Samples[i]
			if !cur.Time.After(from) || cur.Time.After(end) {
				continue
			}
			d := cur.Time.Sub(prev.Time).Seconds()
			if d <= 0 {
				return recommend.Input{}, errors.New("the samples of a series are not in time order")
			}
			in.Samples = append(in.Samples, recommend.Sample{Time: cur.Time, Value: (cur.Value - prev.Value) / d})
		}
	}
	return in, nil
}

// stored counts the samples of series in (end - window, end].
func stored(series []testbed.Series, end time.Time, window time.Duration) int64 {
	var n int64
	from := end.Add(-window)
	for _, s := range series {
		for _, smp := range s.Samples {
			if smp.Time.After(from) && !smp.Time.After(end) {
				n++
			}
		}
	}
	return n
}

// bucket is the CPU histogram's bucket value falls in. Percentiles are
// bucket boundaries, so two of them differ by a whole number of buckets,
// each 5% wider than the one before.
func bucket(value float64) int {
	o := recommend.CPUHistogram
	if value < o.FirstBucket {
		return 0
	}
	// Rounded rather than truncated: a percentile is a bucket's start,
	// which floating point may put a hair below it.
	return int(math.Round(math.Log(value*(o.Growth-1)/o.FirstBucket+1) / math.Log(o.Growth)))
}

// percent is how far v is from ref, in percent of ref.
func percent(v, ref float64) float64 {
	if ref == 0 {
		return math.NaN()
	}
	return (v - ref) / ref * 100
}
