package recommend

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// Defaults of the algorithm, katalyst's where katalyst has one.
const (
	// DefaultPercentile is the usage percentile a recommendation is based
	// on, katalyst's (and VPA's) p90, for CPU and memory alike.
	DefaultPercentile = 0.9
	// DefaultHalfLife halves a sample's weight for every day of its age.
	DefaultHalfLife = 24 * time.Hour
	// DefaultMinSpan is katalyst's: a day of history before any value.
	DefaultMinSpan = 24 * time.Hour
	// DefaultMinSamples is half a day of hourly memory peaks: fewer samples
	// than that say too little, however long the span between them.
	DefaultMinSamples = 12
	// DefaultMaxAge is katalyst's: without a sample in the last day there
	// is no recommendation, as the workload may no longer run.
	DefaultMaxAge = 24 * time.Hour
	// DefaultChangeThreshold is the least relative change worth a commit,
	// VPA updater's default.
	DefaultChangeThreshold = 0.10
)

// OOM bump, VPA's and katalyst's: at least 100Mi or 20% above the peak.
const (
	oomMinBump   = 100 << 20
	oomBumpRatio = 1.2
)

// minCPUWeight is katalyst's DefaultMinSampleWeight: a CPU sample weighs
// its usage in cores, so busy minutes count more, but never less than this.
const minCPUWeight = 0.1

// Options are the algorithm's settings; zero fields take the defaults.
type Options struct {
	// CPUPercentile and MemoryPercentile are in (0, 1].
	CPUPercentile, MemoryPercentile float64
	// HalfLife is the age at which a sample weighs half as much.
	HalfLife time.Duration
	// MinSpan and MinSamples are the least history to recommend from.
	MinSpan    time.Duration
	MinSamples int
	// MaxAge is the longest the newest sample may lie before Input.Now.
	MaxAge time.Duration
	// ChangeThreshold is the relative difference to the current value
	// below which the current value is kept; EveryChange keeps none, and
	// zero is the default's.
	ChangeThreshold float64
}

// EveryChange is the ChangeThreshold that keeps no current value: every
// change is written. The setting change-threshold: 0 means it.
const EveryChange = -1.0

// WithDefaults fills zero fields with the defaults.
func (o Options) WithDefaults() Options {
	if o.CPUPercentile == 0 {
		o.CPUPercentile = DefaultPercentile
	}
	if o.MemoryPercentile == 0 {
		o.MemoryPercentile = DefaultPercentile
	}
	if o.HalfLife == 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.MinSpan == 0 {
		o.MinSpan = DefaultMinSpan
	}
	if o.MinSamples == 0 {
		o.MinSamples = DefaultMinSamples
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.ChangeThreshold == 0 {
		o.ChangeThreshold = DefaultChangeThreshold
	}
	return o
}

// Sample is one usage measurement: cores for CPU, bytes for memory.
type Sample struct {
	Time  time.Time
	Value float64
}

// Input is one container resource: its history, policy and current values.
type Input struct {
	Resource corev1.ResourceName
	// Samples are CPU usage rates, or memory peaks per interval.
	Samples []Sample
	// Fold, when set, holds the samples already folded, in place of
	// Samples; its half-life must be the options'.
	Fold *Fold
	// First and Last, when set, widen the span the samples cover, as
	// katalyst extends it by the range a memory peak was taken over.
	First, Last time.Time
	// Window is how far back the samples were read, for the evidence.
	Window time.Duration
	// Resolution is how CPU samples were read, for the evidence.
	Resolution string
	// Now is when the window ended; zero skips the check of the newest
	// sample's age.
	Now           time.Time
	BufferPercent int32
	// MinAllowed and MaxAllowed bound the value; nil means no bound.
	MinAllowed, MaxAllowed *resource.Quantity
	// ControlledValues is RequestsOnly when empty.
	ControlledValues v1alpha1.ContainerControlledValues
	// Request and Limit are the current values; nil when unset.
	Request, Limit *resource.Quantity
	// OOMKilled reports an out-of-memory kill in the window, and OOMKills
	// how many were seen; an OOMKilled without a count counts as one.
	OOMKilled bool
	OOMKills  int
	// StartupPeak is the highest working set within the startup window
	// after a start of one of the pods, in bytes (memory only): the value
	// is never below it, but for a cap. Zero when none was seen.
	StartupPeak float64
}

// Result is what to write. Request and Limit are nil when they stay as they
// are; Reason says why no value could be computed.
type Result struct {
	// Value is the recommended request, also when it is held back; nil
	// when none could be computed.
	Value *resource.Quantity
	// LimitValue is the recommended limit, also when it is held back; nil
	// when the policy computes none.
	LimitValue     *resource.Quantity
	Request, Limit *resource.Quantity
	Reason         string
	Evidence       plan.Evidence
}

// Compute recommends one container resource: the decaying histogram's
// percentile of the samples (never above the highest sample), plus the buffer, raised to the OOM floor and
// to the startup peak, rounded up to a friendly step, bounded by
// minAllowed and maxAllowed, applied to the request and/or limit as
// controlledValues says, and held back when it differs from the current
// value by less than the change threshold. The evidence also shows the
// history as it was observed, as Observe does.
func Compute(in Input, opts Options) (Result, error) {
	opts = opts.WithDefaults()
	o, err := observe(in, opts)
	if err != nil {
		return Result{}, err
	}
	f, ev, p := o.fold, o.evidence, o.evidence.Percentile
	if f.samples == 0 {
		return Result{Reason: "insufficient data: no samples in the window", Evidence: ev}, nil
	}
	last, span, peak := o.last, o.span, f.peak
	if age := in.Now.Sub(last); !in.Now.IsZero() && age > opts.MaxAge {
		return Result{Reason: fmt.Sprintf("insufficient data: no samples in the last %s, the newest is %s old", opts.MaxAge, age.Round(time.Minute)),
			Evidence: ev}, nil
	}
	if span < opts.MinSpan || f.samples < opts.MinSamples {
		return Result{Reason: fmt.Sprintf("insufficient data: %d samples over %s, need %d over %s",
			f.samples, span, opts.MinSamples, opts.MinSpan), Evidence: ev}, nil
	}

	// A bucket's end can lie far above every sample at the low end, where
	// the first bucket alone is 10m or 1e7 bytes wide: no sample needed
	// more than the highest one, which is exact.
	start, end := f.hist.PercentileBucket(p)
	ev.RawValue, ev.BucketWidth = end, end-start
	if peak < end {
		ev.RawValue, ev.PercentileAtMax = peak, true
	}
	value := ev.RawValue * (1 + float64(in.BufferPercent)/100)
	ev.BufferedValue = value
	if in.OOMKilled && in.Resource == corev1.ResourceMemory {
		ev.OOMKilled = true
		ev.OOMFloor = math.Max(peak+oomMinBump, peak*oomBumpRatio)
		value = math.Max(value, ev.OOMFloor)
	}
	// A pod must survive its first minutes to reach its steady usage: the
	// peak of a startup, rare among hourly peaks, is a floor, not a sample.
	if ev.StartupPeak > value {
		value, ev.StartupFloor = ev.StartupPeak, true
	}
	q, step := Round(in.Resource, value)
	ev.RoundingStep = step
	if in.MinAllowed != nil && q.Cmp(*in.MinAllowed) < 0 {
		q = in.MinAllowed.DeepCopy()
		ev.Capped = append(ev.Capped, "minAllowed "+q.String())
	}
	if in.MaxAllowed != nil && q.Cmp(*in.MaxAllowed) > 0 {
		q = in.MaxAllowed.DeepCopy()
		ev.Capped = append(ev.Capped, "maxAllowed "+q.String()+belowStartup(q, ev))
	}

	res := Result{Evidence: ev}
	switch in.ControlledValues {
	case "", v1alpha1.ContainerControlledValuesRequestsOnly:
		// A request above the limit would make the pod template invalid.
		if in.Limit != nil && q.Cmp(*in.Limit) > 0 {
			q = in.Limit.DeepCopy()
			res.Evidence.Capped = append(res.Evidence.Capped, "limit "+q.String()+belowStartup(q, res.Evidence))
		}
		res.Request = &q
	case v1alpha1.ContainerControlledValuesRequestsAndLimits:
		res.Request = &q
		if in.Limit != nil {
			l, ratio := scaleLimit(in.Resource, q, in.Request, *in.Limit)
			res.Limit, res.Evidence.LimitRatio = &l, ratio
		}
	case v1alpha1.ContainerControlledValuesLimitsOnly:
		if in.Limit == nil {
			res.Value = &q
			res.Evidence.HeldBack = "no limit to control: a container without a limit keeps none"
			return res, nil
		}
		l, ratio := scaleLimit(in.Resource, q, in.Request, *in.Limit)
		// The request stays, and a limit below it would be invalid.
		if in.Request != nil && l.Cmp(*in.Request) < 0 {
			l = in.Request.DeepCopy()
			res.Evidence.Capped = append(res.Evidence.Capped, "request "+l.String())
		}
		res.Limit, res.Evidence.LimitRatio = &l, ratio
	default:
		return Result{}, fmt.Errorf("unsupported controlledValues %q", in.ControlledValues)
	}
	res.Value = &q
	if res.Limit != nil {
		res.LimitValue = res.Limit
		res.Evidence.Limit = res.Limit.String()
	}
	holdBack(&res, in, opts.ChangeThreshold)
	return res, nil
}

// Observe is the evidence of in's history alone, for a resource that is
// held back without a value (an autoscaler scales on it): the window, the
// samples and their span, the usage observed and the OOM kills, with the
// settings a value would have been computed with.
func Observe(in Input, opts Options) (plan.Evidence, error) {
	o, err := observe(in, opts.WithDefaults())
	return o.evidence, err
}

// observation is what Compute starts from: the samples folded, their
// last time and span, and the evidence of them.
type observation struct {
	fold     *Fold
	last     time.Time
	span     time.Duration
	evidence plan.Evidence
}

// observe folds in's samples, unless they come folded, and writes down
// what they show; opts have their defaults.
func observe(in Input, opts Options) (observation, error) {
	p := opts.CPUPercentile
	switch in.Resource {
	case corev1.ResourceCPU:
	case corev1.ResourceMemory:
		p = opts.MemoryPercentile
	default:
		return observation{}, fmt.Errorf("unsupported resource %q", in.Resource)
	}
	if p <= 0 || p > 1 {
		return observation{}, fmt.Errorf("percentile %v out of range (0, 1]", p)
	}
	f := in.Fold
	if f == nil {
		f = foldOf(in.Resource, opts.HalfLife, in.Samples)
	}
	ev := plan.Evidence{Samples: f.samples, Percentile: p, HalfLife: opts.HalfLife.String(), BufferPercent: in.BufferPercent}
	if in.Window > 0 {
		ev.Window, ev.WindowDays = in.Window.String(), days(in.Window)
	}
	ev.Resolution = in.Resolution
	if in.Resource == corev1.ResourceMemory {
		ev.StartupPeak = in.StartupPeak
		ev.OOMKills = in.OOMKills
		if in.OOMKilled && ev.OOMKills == 0 {
			ev.OOMKills = 1
		}
	}
	o := observation{fold: f}
	if f.samples == 0 {
		ev.Span = "0s"
		o.evidence = ev
		return o, nil
	}
	first, last := f.first, f.last
	if !in.First.IsZero() {
		first = minTime(first, in.First)
	}
	last = maxTime(last, in.Last)
	o.last, o.span = last, last.Sub(first)
	ev.Span, ev.SpanDays = o.span.String(), days(o.span)
	p50, p90, peak := f.Observed(0.5), f.Observed(0.9), f.peak
	ev.UsageP50, ev.UsageP90, ev.UsageMax = &p50, &p90, &peak
	o.evidence = ev
	return o, nil
}

// belowStartup notes that a cap at q undercuts the startup peak the value
// was raised to, so that a reviewer sees the pods may not survive their
// start; empty otherwise.
func belowStartup(q resource.Quantity, ev plan.Evidence) string {
	if !ev.StartupFloor || q.AsApproximateFloat64() >= ev.StartupPeak {
		return ""
	}
	return ", below the startup peak " + strconv.FormatFloat(math.Round(ev.StartupPeak/(1<<20)*10)/10, 'f', -1, 64) + "Mi"
}

// days is d in days, to a hundredth.
func days(d time.Duration) float64 {
	return math.Round(d.Hours()/24*100) / 100
}

// holdBack keeps the current values when the controlled one moves by less
// than threshold, unless the current value is outside minAllowed and
// maxAllowed. An equal value is not held back: it is written, which changes
// nothing in the cluster but corrects a repository that disagrees.
func holdBack(res *Result, in Input, threshold float64) {
	newV, cur := res.Request, in.Request
	what := "request"
	if res.Request == nil {
		newV, cur, what = res.Limit, in.Limit, "limit"
	}
	if threshold < 0 || cur == nil || newV == nil || cur.IsZero() || newV.Cmp(*cur) == 0 {
		return
	}
	if (in.MinAllowed != nil && cur.Cmp(*in.MinAllowed) < 0) || (in.MaxAllowed != nil && cur.Cmp(*in.MaxAllowed) > 0) {
		return
	}
	diff := math.Abs(newV.AsApproximateFloat64()-cur.AsApproximateFloat64()) / cur.AsApproximateFloat64()
	if diff >= threshold {
		return
	}
	res.Evidence.HeldBack = fmt.Sprintf("%s %s is %.1f%% from the current %s, below the %g%% change threshold",
		what, newV.String(), diff*100, cur.String(), threshold*100)
	res.Request, res.Limit = nil, nil
}

// scaleLimit keeps the limit:request ratio for the new request, as VPA does:
// without a current request (Kubernetes then takes the limit as request) or
// with request == limit the new limit is the new request.
func scaleLimit(name corev1.ResourceName, newRequest resource.Quantity, request *resource.Quantity, limit resource.Quantity) (resource.Quantity, float64) {
	if request == nil || request.IsZero() || request.Cmp(limit) == 0 {
		return newRequest.DeepCopy(), 1
	}
	ratio := float64(limit.MilliValue()) / float64(request.MilliValue())
	l, _ := Round(name, newRequest.AsApproximateFloat64()*ratio)
	if l.Cmp(newRequest) < 0 {
		l = newRequest.DeepCopy()
	}
	return l, ratio
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
