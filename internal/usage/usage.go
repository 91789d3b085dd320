package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

// Defaults for reading usage history.
const (
	DefaultWindow     = 7 * 24 * time.Hour
	DefaultStep       = 5 * time.Minute
	DefaultRateWindow = 5 * time.Minute
	// DefaultPeakInterval is katalyst's memory task interval: memory
	// enters the histogram as one peak per hour.
	DefaultPeakInterval = time.Hour
	// DefaultQueryTimeout bounds one range query, its answer's body
	// included.
	DefaultQueryTimeout = 2 * time.Minute
	// DefaultStartupWindow is how long after a container starts its working
	// set counts as its startup peak: JVM warm-up, caches filled on start.
	DefaultStartupWindow = 5 * time.Minute
)

// RangeQuerier is the part of the Prometheus HTTP API a run uses.
type RangeQuerier interface {
	QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
}

// SeriesLister lists the label sets of the series that match selectors
// between two times, as Prometheus's series endpoint (/api/v1/series)
// answers them from its index, without reading samples. A Reader whose
// RangeQuerier is also a SeriesLister, as Client and the client library's
// promv1.API are, reads kube-state-metrics' ownership this way instead of
// with a query over every sample of the window.
type SeriesLister interface {
	Series(ctx context.Context, matches []string, startTime, endTime time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error)
}

// WorkloadRef names a workload whose pods' history is wanted.
type WorkloadRef struct {
	Kind      string
	Namespace string
	Name      string
}

// Usage is one workload's history: per container and resource, every sample
// of every pod the workload has had in the window.
type Usage map[string]map[corev1.ResourceName]*History

// History is the samples of one container's resource, from all its pods:
// CPU usage rates in cores, one per pod and step, or memory working-set
// peaks in bytes, one per peak interval (the highest of all pods). A
// Reader returns them in time order, and takes them at End, End - Step,
// End - 2*Step and so on, so that a shorter window's samples are those of
// a longer one that fall within it. Time(i) is the time of Values[i].
type History struct {
	Values []float64
	// Times, when set, holds the time of each value. A Reader leaves it
	// nil: its samples lie a whole number of steps apart, and it keeps
	// each one's place in the steps instead of a time.Time (4 bytes, not
	// 24); only samples off that grid are kept here. When neither says, a
	// value counts as taken at Last.
	Times []time.Time
	// First and Last are the times of the earliest and latest sample.
	First, Last time.Time
	// OOMKilled reports an out-of-memory kill of one of the container's
	// pods in the window (memory only).
	OOMKilled bool
	// OOMKills are the times at which the kills were seen, to the hour
	// (oomResolution), so that a shorter window counts only its own.
	OOMKills []time.Time
	// StartupPeaks are the highest working set of the pods within the
	// startup window after each start of the container, per hour
	// (startupResolution) in which one was seen: the hour ending at Time,
	// so that a shorter window keeps only its own (memory only).
	StartupPeaks []Point
	// Window is how far back the history was read, and End when it ended.
	Window time.Duration
	End    time.Time
	// Step is the time between two samples of one pod: the query step for
	// CPU, the peak interval for memory.
	Step time.Duration
	// Resolution is how CPU was read: its rate window and step, and the
	// scrape interval they came from (CPU only).
	Resolution Resolution

	// Fold, when set, took the samples in place of Values, which stays
	// empty; First and Last are still those of the samples. See FoldFunc.
	Fold Fold

	// Sources, when it names more than one, are the sources (job, and
	// metrics_path where set) the container's usage series came from,
	// every resource's and pod's together: another job may be writing
	// series under its labels, and no value is taken from them (see
	// Usage.Refusal). A Reader leaves it nil when they came from one.
	Sources []string

	// origin and at place the samples on the grid of Step while Times is
	// nil: sample i was taken at origin + at[i]*Step.
	origin time.Time
	at     []int32
}

// Span is the time the samples cover.
func (h *History) Span() time.Duration {
	if h == nil {
		return 0
	}
	return h.Last.Sub(h.First)
}

// Time is the time of sample i.
func (h *History) Time(i int) time.Time {
	if i < len(h.Times) {
		return h.Times[i]
	}
	if i < len(h.at) {
		return h.origin.Add(time.Duration(h.at[i]) * h.Step)
	}
	return h.Last
}

// Equal reports whether h and o hold the same values taken at the same
// times, with the same span, window, end, step and OOM kills, however
// each keeps its times.
func (h *History) Equal(o *History) bool {
	if h == nil || o == nil {
		return h == o
	}
	if len(h.Values) != len(o.Values) || !h.First.Equal(o.First) || !h.Last.Equal(o.Last) || h.OOMKilled != o.OOMKilled ||
		h.Window != o.Window || !h.End.Equal(o.End) || h.Step != o.Step ||
		!slices.EqualFunc(h.OOMKills, o.OOMKills, time.Time.Equal) ||
		!slices.EqualFunc(h.StartupPeaks, o.StartupPeaks, func(a, b Point) bool { return a.Time.Equal(b.Time) && a.Value == b.Value }) {
		return false
	}
	for i, v := range h.Values {
		if v != o.Values[i] || !h.Time(i).Equal(o.Time(i)) {
			return false
		}
	}
	return true
}

// StartupPeak is the highest working set seen within the startup window
// after a start of the container, in bytes; zero when none was seen.
func (h *History) StartupPeak() float64 {
	if h == nil {
		return 0
	}
	peak := 0.0
	for _, p := range h.StartupPeaks {
		peak = max(peak, p.Value)
	}
	return peak
}

func (h *History) add(t time.Time, v float64) {
	h.cover(t, len(h.Values) == 0)
	if h.Times == nil {
		if len(h.Values) == 0 {
			h.origin = t
		}
		if k, ok := h.step(t); ok && len(h.at) == len(h.Values) {
			h.Values = append(h.Values, v)
			h.at = append(h.at, k)
			return
		}
		h.keepTimes()
	}
	h.Values = append(h.Values, v)
	h.Times = append(h.Times, t)
}

// cover widens First and Last to a sample at t; first says it is the
// first sample.
func (h *History) cover(t time.Time, first bool) {
	if first || t.Before(h.First) {
		h.First = t
	}
	if first || t.After(h.Last) {
		h.Last = t
	}
}

// addPeak adds v as the peak at t, or raises the peak at t to v; peaks
// holds the index of each time's peak.
func (h *History) addPeak(peaks map[time.Time]int, t time.Time, v float64) {
	if i, ok := peaks[t]; ok {
		h.Values[i] = max(h.Values[i], v)
		return
	}
	peaks[t] = len(h.Values)
	h.add(t, v)
}

// step is the place of t on the grid of h's samples, if it is on it.
func (h *History) step(t time.Time) (int32, bool) {
	if h.Step <= 0 {
		return 0, false
	}
	d := t.Sub(h.origin)
	k := d / h.Step
	if d%h.Step != 0 || k < math.MinInt32 || k > math.MaxInt32 {
		return 0, false
	}
	return int32(k), true
}

// keepTimes moves h from its grid to Times, for a sample off the grid.
func (h *History) keepTimes() {
	times := make([]time.Time, len(h.Values), cap(h.Values))
	for i := range times {
		times[i] = h.Time(i)
	}
	h.Times, h.at = times, nil
}

// grow makes room for n more samples.
func (h *History) grow(n int) {
	h.Values = slices.Grow(h.Values, n)
	if h.Times == nil {
		h.at = slices.Grow(h.at, n)
	}
}

// Fold takes the samples of one container resource as they are decoded,
// in place of a History keeping them: recommend.Fold is one. Samples come
// in no particular order.
type Fold interface {
	Add(t time.Time, v float64)
}

// FoldFunc returns the fold that takes the CPU samples of container of
// the workload of w, for h, which holds the window, end and step they are
// read with and keeps their first and last time; nil keeps the samples in
// h. A read calls it once per want and container, from the goroutine
// reading the namespace.
type FoldFunc func(w Want, container string, h *History) Fold

// maxPointsPerSeries is Prometheus's limit on the points per series of one
// range query, which Thanos and Mimir share: (end - start) / step may not
// exceed 11,000, enough for a week at 1m in one query. Longer ranges are
// split.
const maxPointsPerSeries = 11000

// Reader reads usage history from a Prometheus-compatible API.
type Reader struct {
	api          RangeQuerier
	window       time.Duration
	step         time.Duration
	rateWindow   time.Duration
	peakInterval time.Duration
	filter       string
	owners       bool
	timeout      time.Duration // of one query; none when zero
	startup      time.Duration // the startup window; no startup peaks when zero
	memoryWindow time.Duration // how far back memory peaks are read, when further than window
	end          time.Time     // of the window one Read reads
	res          Resolution    // of the CPU history one Read reads
	spans        SpansFunc     // of the CPU history one Read reads; all when nil
	folding      *folding      // of the read, when its CPU samples are folded
	splits       func(Split)   // told of each query split around a backend's limit
	sources      sources       // of the series one Read reads
	now          func() time.Time
	log          *slog.Logger
}

// Option configures a Reader.
type Option func(*Reader)

// WithWindow sets how far back history is read.
func WithWindow(d time.Duration) Option { return func(r *Reader) { r.window = d } }

// WithStep sets the resolution of the CPU history; zero measures it in
// each namespace: its scrape interval.
func WithStep(d time.Duration) Option { return func(r *Reader) { r.step = d } }

// WithRateWindow sets the range of rate() over the CPU counter; it must
// hold at least two scrapes. Zero measures it in each namespace: two
// scrape intervals, at least the step.
func WithRateWindow(d time.Duration) Option { return func(r *Reader) { r.rateWindow = d } }

// WithPeakInterval sets the interval of the memory peaks.
func WithPeakInterval(d time.Duration) Option { return func(r *Reader) { r.peakInterval = d } }

// WithLabelFilter adds matchers to every selector, e.g. cluster="prod",
// for a Prometheus that holds several clusters.
func WithLabelFilter(matchers string) Option { return func(r *Reader) { r.filter = matchers } }

// WithOwnership sets whether pods are attributed through kube-state-metrics'
// ownership series (kube_pod_owner, kube_replicaset_owner, kube_job_owner)
// where they exist, before naming patterns; on by default, at the cost of
// one more request per namespace: a series listing when the API is a
// SeriesLister, else a query.
func WithOwnership(on bool) Option { return func(r *Reader) { r.owners = on } }

// WithQueryTimeout bounds each range query and series listing, from
// sending it to reading the last byte of its answer, so that a Prometheus
// that accepts connections and never answers cannot hold a run; zero
// means no bound.
func WithQueryTimeout(d time.Duration) Option { return func(r *Reader) { r.timeout = d } }

// WithStartupWindow sets how long after a container starts its working
// set counts towards its startup peak, read with one more query per
// namespace; zero reads no startup peaks. It must not exceed an hour, the
// resolution of the peaks.
func WithStartupWindow(d time.Duration) Option { return func(r *Reader) { r.startup = d } }

// WithLogger sets the logger, which receives Prometheus's warnings.
func WithLogger(l *slog.Logger) Option { return func(r *Reader) { r.log = l } }

// WithClock sets the clock, for tests.
func WithClock(now func() time.Time) Option { return func(r *Reader) { r.now = now } }

// NewReader returns a Reader querying api.
func NewReader(api RangeQuerier, opts ...Option) *Reader {
	r := &Reader{api: api, window: DefaultWindow, step: DefaultStep, rateWindow: DefaultRateWindow,
		peakInterval: DefaultPeakInterval, owners: true, timeout: DefaultQueryTimeout, startup: DefaultStartupWindow, now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Read fetches the history of workloads, which must all be in namespace,
// with a fixed number of queries for the whole namespace, never one per
// workload or container: CPU rates at the step (split in time when the
// window holds more points than Prometheus returns per series), memory
// peaks per interval, OOM kills per hour and, unless the startup window is
// zero, startup peaks per hour. Series are attributed to
// workloads by ownership when known, else by the pod naming pattern of
// each workload's kind; a pod that fits several patterns goes to the
// workload with the longest name, the most specific.
func (r *Reader) Read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error) {
	got, err := r.ReadEach(ctx, namespace, map[Settings][]WorkloadRef{{}: workloads}, nil)
	return got[Settings{}], err
}

func (r *Reader) read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error) {
	pods, selector, a, err := r.selectors(namespace, workloads)
	if err != nil {
		return nil, err
	}

	// The read is the copy ReadEach made: its resolution is the
	// namespace's own.
	if r.res, err = r.resolution(ctx, namespace, selector); err != nil {
		return nil, err
	}
	r.step, r.rateWindow = r.res.Step, r.res.RateWindow
	// The ownership listing also counts the CPU series of each container
	// back to the first rate window, which lets the CPU query go without
	// its max by (pod, container); see cpuSeries.
	var counted cpuSeries
	if r.owners {
		if a.owned, counted, err = r.ownership(ctx, namespace, workloads, selector, r.rateWindow+r.step); err != nil {
			return nil, err
		}
	}
	if r.spans != nil {
		// Every read of spans samples the same times, a whole number of
		// steps from the epoch, so that what one run folded is what a
		// later one would have read.
		r.end = r.end.Truncate(r.step)
	}

	out := make(map[WorkloadRef]Usage, len(workloads))
	cpu := cpuQuery(selector, r.rateWindow, counted != nil)
	// Each query's samples lie on its own grid from its end: with spans,
	// memory's and the hourly ones' end on a whole interval, so that a
	// later read samples the same times.
	memoryEnd, hourEnd := r.end, r.end
	var parts []Span
	if r.spans != nil {
		memoryEnd, hourEnd = r.end.Truncate(r.peakInterval), r.end.Truncate(time.Hour)
		starts := []time.Time{r.end.Add(-span(r.window, r.step)), memoryEnd.Add(-span(max(r.window, r.memoryWindow), r.peakInterval)),
			hourEnd.Add(-span(r.window, time.Hour))}
		parts = r.spans(namespace, Window{Resolution: r.res, Earliest: slices.MinFunc(starts, time.Time.Compare),
			Latest: slices.MaxFunc(starts, time.Time.Compare), End: r.end, Window: r.window,
			Memory: fmt.Sprintf("peak-interval=%s startup-window=%s", r.peakInterval, r.startup), Filter: r.filter})
	}
	err = r.eachSeriesIn(ctx, namespace, corev1.ResourceCPU, cpu, r.end, r.window, r.step, parts, a, counted, func(w WorkloadRef, container string, series *model.SampleStream) {
		if r.folding != nil {
			r.folding.add(w, container, series)
			return
		}
		h := r.history(out, w, container, corev1.ResourceCPU)
		h.grow(len(series.Values))
		for _, s := range series.Values {
			h.add(s.Timestamp.Time(), float64(s.Value))
		}
	})
	if err != nil {
		return nil, err
	}

	// The peak of each interval, over all pods of a workload: Prometheus
	// takes it per pod, the pods are merged here, as only the reader knows
	// which pods belong together.
	memory := fmt.Sprintf(`max by (%s) (max_over_time(container_memory_working_set_bytes{%s}[%s]))`,
		bySource, selector, model.Duration(r.peakInterval))
	peaks := map[*History]map[time.Time]int{}
	err = r.eachSeriesIn(ctx, namespace, corev1.ResourceMemory, memory, memoryEnd, max(r.window, r.memoryWindow), r.peakInterval, parts, a, nil, func(w WorkloadRef, container string, series *model.SampleStream) {
		h := r.history(out, w, container, corev1.ResourceMemory)
		if peaks[h] == nil {
			peaks[h] = map[time.Time]int{}
		}
		for _, s := range series.Values {
			h.addPeak(peaks[h], s.Timestamp.Time(), float64(s.Value))
		}
	})
	if err != nil {
		return nil, err
	}

	// The times of the OOM kills let a shorter window count only its own.
	err = r.eachSeriesIn(ctx, namespace, "oom", r.oomQuery(pods), hourEnd, r.window, oomResolution, parts, a, nil, func(w WorkloadRef, container string, series *model.SampleStream) {
		h := r.history(out, w, container, corev1.ResourceMemory)
		for _, s := range series.Values {
			h.OOMKills = append(h.OOMKills, s.Timestamp.Time())
		}
		h.OOMKilled = len(h.OOMKills) > 0
	})
	if err != nil {
		return nil, err
	}

	// The startup peaks, also per hour, so that a shorter window keeps
	// only its own.
	if r.startup > 0 {
		err = r.eachSeriesIn(ctx, namespace, "startup", r.startupQuery(selector), hourEnd, r.window, startupResolution, parts, a, nil, func(w WorkloadRef, container string, series *model.SampleStream) {
			h := r.history(out, w, container, corev1.ResourceMemory)
			for _, s := range series.Values {
				h.addStartupPeak(s.Timestamp.Time(), float64(s.Value))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for _, u := range out {
		for _, resources := range u {
			for _, h := range resources {
				h.sortByTime()
			}
		}
	}
	return out, nil
}

// attribution returns the selectors of the pods of workloads, which must
// all be in namespace: pods matches the pods (for kube-state-metrics'
// series), selector their containers (for cAdvisor's); and the
// attributor that tells the workload of each pod.
func (r *Reader) attribution(ctx context.Context, namespace string, workloads []WorkloadRef) (pods, selector string, a *attributor, err error) {
	pods, selector, a, err = r.selectors(namespace, workloads)
	if err != nil {
		return "", "", nil, err
	}
	if r.owners {
		if a.owned, _, err = r.ownership(ctx, namespace, workloads, "", 0); err != nil {
			return "", "", nil, err
		}
	}
	return pods, selector, a, nil
}

// selectors is attribution without ownership: the pods' selectors, and an
// attributor by naming patterns alone.
func (r *Reader) selectors(namespace string, workloads []WorkloadRef) (pods, selector string, a *attributor, err error) {
	patterns := make([]string, 0, len(workloads))
	matchers := make([]podMatcher, 0, len(workloads))
	byWorkload := make(map[WorkloadRef]string, len(workloads))
	for _, w := range workloads {
		if w.Namespace != namespace {
			return "", "", nil, fmt.Errorf("workload %s/%s is not in namespace %s", w.Namespace, w.Name, namespace)
		}
		p := PodNamePattern(w.Kind, w.Name)
		patterns = append(patterns, p)
		matchers = append(matchers, podMatcher{workload: w, re: regexp.MustCompile("^(?:" + p + ")$")})
		byWorkload[w] = p
	}
	sort.SliceStable(matchers, func(i, j int) bool { return len(matchers[i].workload.Name) > len(matchers[j].workload.Name) })
	podSelector := podRegexp(patterns)
	pods = fmt.Sprintf(`namespace=%s,%s`, strconv.Quote(namespace), podSelector)
	if r.filter != "" {
		pods += "," + r.filter
	}
	selector = `container!="",container!="POD",` + pods
	return pods, selector, &attributor{matchers: matchers, workloads: workloads, patterns: byWorkload, podSelector: podSelector}, nil
}

// oomQuery counts a container as OOM-killed at a time when its last
// termination was an OOM kill and it restarted within the hour before:
// the reason alone stays set long after the kill. Each hour looks back a
// rate window more, which holds two scrapes, so that a restart between
// the last scrape of one hour and the first of the next is seen.
func (r *Reader) oomQuery(pods string) string {
	overlap := r.rateWindow
	if overlap <= 0 {
		// Not measured here (a watch): the default holds two scrapes of
		// most Prometheus setups.
		overlap = DefaultRateWindow
	}
	rng := model.Duration(oomResolution + overlap)
	return fmt.Sprintf(`max by (pod, container) (max_over_time(kube_pod_container_status_last_terminated_reason{reason="OOMKilled",%s}[%s]) > 0)`+
		` and on (pod, container) max by (pod, container) (changes(kube_pod_container_status_restarts_total{%s}[%s]) > 0)`, pods, rng, pods, rng)
}

// oomResolution is the resolution of the times of OOM kills.
const oomResolution = time.Hour

// startupResolution is the resolution of the times of startup peaks: each
// is the highest of the hour before it.
const startupResolution = time.Hour

// startupQuery is the highest working set of each pod's container in the
// hour before each step, of the samples taken within the startup window
// after the container started (container_start_time_seconds; the latest
// start when it restarted). The subquery looks at the working set once a
// startupStep, at which time() is that step's time, and each look takes
// the highest sample since the previous one: none is missed whatever the
// scrape interval, and the looks from the container's start to a step
// past the window hold the whole window, and at most a step more on
// either side (before the start, only a restarted container's previous
// run has samples). A step past the window adds steady samples, which lie
// below the hourly peaks a floor has to beat. Nothing is aggregated inside
// the subquery, whose every step costs: "and on" keeps a series of a
// container with any start in the window, and the outer max merges them.
// That is a third of the time of aggregating both sides first, about a
// memory query's, on the same answer.
func (r *Reader) startupQuery(selector string) string {
	step := startupStep(r.startup)
	return fmt.Sprintf(`max by (%s) (max_over_time((max_over_time(container_memory_working_set_bytes{%s}[%s])`+
		` and on (pod, container) (container_start_time_seconds{%s} > time() - %s))[%s:%s]))`,
		bySource, selector, model.Duration(step), selector, strconv.FormatFloat((r.startup+step).Seconds(), 'f', -1, 64),
		model.Duration(startupResolution), model.Duration(step))
}

// startupStep is the step at which the working set is looked at for
// startup peaks: the startup window itself, but at least a minute, so
// that the query evaluates no more steps than the CPU query at its 5m
// default (2,016 a week), and at most the hour of a startup peak.
func startupStep(window time.Duration) time.Duration {
	return min(max(window, time.Minute), startupResolution)
}

// addStartupPeak adds v as the startup peak of the hour ending at t, or
// raises that hour's to v.
func (h *History) addStartupPeak(t time.Time, v float64) {
	for i, p := range h.StartupPeaks {
		if p.Time.Equal(t) {
			h.StartupPeaks[i].Value = max(p.Value, v)
			return
		}
	}
	h.StartupPeaks = append(h.StartupPeaks, Point{Time: t, Value: v})
}

// Settings override a Reader's window and memory peak interval for some
// workloads, those of ResourceRecommends whose extensions set their own; a
// zero field keeps the Reader's.
type Settings struct {
	Window, PeakInterval time.Duration
}

// resolve fills the zero fields of s with r's own settings.
func (r *Reader) resolve(s Settings) Settings {
	if s.Window <= 0 {
		s.Window = r.window
	}
	if s.PeakInterval <= 0 {
		s.PeakInterval = r.peakInterval
	}
	return s
}

// ReadEach is Read for groups of workloads of namespace with settings of
// their own, in the queries of a single Read, however many groups there
// are: it reads over the longest window of all and at the greatest common
// divisor of all peak intervals (memory far enough back to fill the
// oldest peak of each group), then cuts each group's history from it as
// if it had been read alone. A workload may be in several groups. With a
// fold, each group's CPU samples go to the folds it returns as they are
// decoded, those outside the group's window left out, instead of being
// kept and cut.
func (r *Reader) ReadEach(ctx context.Context, namespace string, groups map[Settings][]WorkloadRef, fold FoldFunc) (map[Settings]map[WorkloadRef]Usage, error) {
	return r.ReadSpans(ctx, namespace, groups, fold, nil)
}

// Span is a part of a window, From and To included.
type Span struct{ From, To time.Time }

// Window is what a read of a namespace covers, as a SpansFunc sees it.
type Window struct {
	// Resolution is the CPU's.
	Resolution Resolution
	// Earliest and Latest are the earliest and latest start of the
	// read's queries, each on its own grid: CPU at its step, memory at
	// its peak interval, OOM kills and startup peaks at the hour. End is
	// the CPU's end, the latest of all, and Window how far back CPU is
	// read from there.
	Earliest, Latest, End time.Time
	Window                time.Duration
	// Memory identifies how memory was read (peak interval, startup
	// window): another reading gives other peaks.
	Memory string
	// Filter is the label filter every query carries: another selects
	// other series.
	Filter string
}

// SpansFunc says which spans of the window w a read of namespace reads, in
// each query; nil reads it whole.
type SpansFunc func(namespace string, w Window) []Span

// SpanReader is a SettingsReader that can read only some spans of the CPU
// history, for folds that hold the rest; Reader is one.
type SpanReader interface {
	ReadSpans(ctx context.Context, namespace string, groups map[Settings][]WorkloadRef, fold FoldFunc, spans SpansFunc) (map[Settings]map[WorkloadRef]Usage, error)
}

// ReadSpans is ReadEach with the history read only in the spans that
// spans returns (nil: all), once the namespace's resolution is known:
// CPU, memory peaks, OOM kills and startup peaks alike. With spans, each
// query's points lie a whole number of its steps from the epoch.
func (r *Reader) ReadSpans(ctx context.Context, namespace string, groups map[Settings][]WorkloadRef, fold FoldFunc, spans SpansFunc) (map[Settings]map[WorkloadRef]Usage, error) {
	var all []WorkloadRef
	var window, interval time.Duration
	for s, ws := range groups {
		s = r.resolve(s)
		window = max(window, s.Window)
		interval = gcd(interval, s.PeakInterval)
		for _, w := range ws {
			if !slices.Contains(all, w) {
				all = append(all, w)
			}
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	// Sorted, so that the queries do not depend on the order of groups.
	slices.SortFunc(all, func(a, b WorkloadRef) int {
		return strings.Compare(a.Namespace+"/"+a.Kind+"/"+a.Name, b.Namespace+"/"+b.Kind+"/"+b.Name)
	})
	var memoryWindow time.Duration
	for s := range groups {
		s = r.resolve(s)
		memoryWindow = max(memoryWindow, span(s.Window, s.PeakInterval)+s.PeakInterval-interval)
	}

	// All queries of one read end at the same time.
	c := *r
	c.window, c.peakInterval, c.memoryWindow = window, interval, memoryWindow
	c.end = r.now()
	c.now = func() time.Time { return c.end }
	if fold != nil {
		c.folding = newFolding(&c, groups, r.resolve, fold)
	}
	c.spans = spans
	c.sources = sources{}
	got, err := c.read(ctx, namespace, all)
	if err != nil {
		return nil, err
	}
	mixed := make(map[WorkloadRef]map[string][]string)
	for _, w := range all {
		if m := c.sources.mixed(w); m != nil {
			mixed[w] = m
			for container, names := range m {
				r.log.WarnContext(ctx, "a container's usage series come from more than one source: it is not recommended",
					"namespace", namespace, "workload", w.Kind+"/"+w.Name, "container", container, "sources", strings.Join(names, ", "))
			}
		}
	}
	if c.folding != nil {
		c.folding.sortKept()
	}
	out := make(map[Settings]map[WorkloadRef]Usage, len(groups))
	for s, ws := range groups {
		own := r.resolve(s)
		// The group the read was made for takes it as it is.
		whole := own.Window == window && own.PeakInterval == interval && memoryWindow == span(window, interval)
		m := make(map[WorkloadRef]Usage, len(ws))
		for _, w := range ws {
			u := got[w]
			if u != nil && !whole {
				if u, err = u.Cut(own.Window, own.PeakInterval); err != nil {
					return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
				}
			}
			if c.folding != nil {
				u = u.with(c.folding.got[s][w])
			}
			markMixed(u, mixed[w])
			if len(u) > 0 {
				m[w] = u
			}
		}
		out[s] = m
	}
	return out, nil
}

// query runs one range query, within the query timeout, and hands each
// series of the matrix it answered to each: as it is decoded when the API
// is a SeriesQuerier, and then only valid during the call. An error says
// whether the query timed out or the caller's context ended (with its
// cause, e.g. the run's deadline).
func (r *Reader) query(ctx context.Context, namespace string, what corev1.ResourceName, q string, rng promv1.Range, each func(*model.SampleStream)) error {
	return r.call(ctx, namespace, what, func(ctx context.Context) (promv1.Warnings, error) {
		return r.send(ctx, q, rng, each)
	})
}

// call sends one request to the API with send, within the query timeout,
// and reports its error as that of the query of what; an answer with
// warnings is a *PartialError.
func (r *Reader) call(ctx context.Context, namespace string, what corev1.ResourceName, send func(context.Context) (promv1.Warnings, error)) error {
	qctx, cancel := ctx, context.CancelFunc(func() {})
	if r.timeout > 0 {
		qctx, cancel = context.WithTimeout(ctx, r.timeout)
	}
	defer cancel()
	warnings, err := send(qctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("querying %s in namespace %s: %w", what, namespace, context.Cause(ctx))
	case qctx.Err() != nil:
		if !errors.Is(err, context.DeadlineExceeded) {
			err = context.DeadlineExceeded
		}
		return fmt.Errorf("querying %s in namespace %s: no answer within %s: %w", what, namespace, r.timeout, err)
	default:
		return fmt.Errorf("querying %s in namespace %s: %w", what, namespace, err)
	}
	// A warning says the answer may lack pods or part of the window: no
	// value is computed from it. Prometheus before 2.51 sent its infos
	// among the warnings, marked as such: they are only logged.
	warnings = slices.DeleteFunc(slices.Clone(warnings), func(w string) bool {
		if strings.HasPrefix(w, "PromQL info: ") {
			r.log.InfoContext(ctx, "prometheus answered with an info", "namespace", namespace, "query", what, "info", cleanWarning(w))
			return true
		}
		return false
	})
	if len(warnings) > 0 {
		r.log.WarnContext(ctx, "prometheus answered with warnings: the namespace's history is unavailable for this run",
			"namespace", namespace, "query", what, "warnings", len(warnings), "first", cleanWarning(warnings[0]))
		return &PartialError{Query: string(what), Namespace: namespace, Warning: cleanWarning(warnings[0]), Warnings: len(warnings)}
	}
	return nil
}

// send runs a range query through the API, streaming when it can.
func (r *Reader) send(ctx context.Context, q string, rng promv1.Range, each func(*model.SampleStream)) (promv1.Warnings, error) {
	if s, ok := r.api.(SeriesQuerier); ok {
		return s.QueryRangeSeries(ctx, q, rng, func(series *model.SampleStream) error {
			each(series)
			return nil
		})
	}
	v, warnings, _, err := r.api.QueryRange(ctx, q, rng)
	if err != nil {
		return warnings, err
	}
	matrix, ok := v.(model.Matrix)
	if !ok {
		if v == nil {
			return warnings, errors.New("got no result, want a matrix")
		}
		return warnings, fmt.Errorf("got %s, want a matrix", v.Type())
	}
	for _, series := range matrix {
		each(series)
	}
	return warnings, nil
}

// eachSeries runs query (named what in errors) over window in ranges of
// step and hands every series of a pod of the batch to add, with its
// workload and container; a range the backend refuses for its size is
// read in pieces (see piece).
func (r *Reader) eachSeries(ctx context.Context, namespace string, what corev1.ResourceName, query string, window, step time.Duration,
	a *attributor, add func(WorkloadRef, string, *model.SampleStream)) error {
	return r.eachSeriesIn(ctx, namespace, what, query, r.now(), window, step, nil, a, nil, add)
}

// eachSeriesIn is eachSeries over the window ending at end, at the points
// within parts only; all of them when parts is nil. With counted, the
// query is not aggregated, and the series of a container that has several
// are merged here (see cpuSeries).
func (r *Reader) eachSeriesIn(ctx context.Context, namespace string, what corev1.ResourceName, query string, end time.Time, window, step time.Duration,
	parts []Span, a *attributor, counted cpuSeries, add func(WorkloadRef, string, *model.SampleStream)) error {
	rngs := r.rangesTo(end, window, step)
	if parts != nil {
		rngs = clip(rngs, parts)
	}
	for _, rng := range rngs {
		if err := r.piece(ctx, namespace, what, query, rng, a, nil, counted, add); err != nil {
			return err
		}
	}
	return nil
}

type podMatcher struct {
	workload WorkloadRef
	re       *regexp.Regexp
}

// attributor finds the workload a pod belongs to: by ownership when known,
// else by the first matching pattern; matchers are sorted longest name
// first.
type attributor struct {
	// owned maps pods of known ownership to their workload, or to nil
	// when it is none of the batch's.
	owned    map[string]*WorkloadRef
	matchers []podMatcher
	// workloads are those of the read, patterns their pods' naming
	// patterns, and podSelector the matcher of all their pods in the
	// queries (pod=~"..."), which a piece of a split query narrows.
	workloads   []WorkloadRef
	patterns    map[WorkloadRef]string
	podSelector string
}

func (a *attributor) owner(pod string) (WorkloadRef, bool) {
	if w, ok := a.owned[pod]; ok {
		if w == nil {
			return WorkloadRef{}, false
		}
		return *w, true
	}
	for _, m := range a.matchers {
		if m.re.MatchString(pod) {
			return m.workload, true
		}
	}
	return WorkloadRef{}, false
}

// ranges splits window into consecutive ranges of at most
// maxPointsPerSeries steps. Each range starts one step after the previous
// one ends, so no sample is read twice. The points are counted back from
// the end, so that those of a shorter window are among those of a longer
// one, which is what lets ReadEach cut one from the other.
func (r *Reader) ranges(window, step time.Duration) []promv1.Range {
	return r.rangesTo(r.now(), window, step)
}

// rangesTo is ranges of the window ending at end.
func (r *Reader) rangesTo(end time.Time, window, step time.Duration) []promv1.Range {
	start := end.Add(-span(window, step))
	chunk := time.Duration(maxPointsPerSeries-1) * step
	var out []promv1.Range
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		out = append(out, promv1.Range{Start: from, End: to, Step: step})
	}
	return out
}

// history returns the history of one container resource of w, creating it.
func (r *Reader) history(u map[WorkloadRef]Usage, w WorkloadRef, container string, res corev1.ResourceName) *History {
	usage := u[w]
	if usage == nil {
		usage = Usage{}
		u[w] = usage
	}
	if usage[container] == nil {
		usage[container] = map[corev1.ResourceName]*History{}
	}
	h := usage[container][res]
	if h == nil {
		h = &History{Window: r.window, End: r.end, Step: r.step, Resolution: r.res}
		if res == corev1.ResourceMemory {
			h.Window, h.Step, h.Resolution = max(r.window, r.memoryWindow), r.peakInterval, Resolution{}
		}
		usage[container][res] = h
	}
	return h
}

// PodNamePattern is a regular expression matching exactly the names of the
// pods a workload of kind creates; see kinds.PodNamePattern, which holds
// every kind's naming.
func PodNamePattern(kind, name string) string {
	return kinds.PodNamePattern(kind, name)
}

// folding hands the CPU samples of a read to the folds of the groups of
// ReadEach, each group the samples within its window.
type folding struct {
	r      *Reader
	fn     FoldFunc
	groups map[WorkloadRef][]Settings // of each workload, as ReadEach was given them
	own    map[Settings]Settings      // each group's settings, resolved
	// got holds each group's CPU histories, which hold the folds.
	got map[Settings]map[WorkloadRef]Usage
}

func newFolding(r *Reader, groups map[Settings][]WorkloadRef, resolve func(Settings) Settings, fn FoldFunc) *folding {
	f := &folding{r: r, fn: fn, groups: map[WorkloadRef][]Settings{}, own: map[Settings]Settings{}, got: map[Settings]map[WorkloadRef]Usage{}}
	for s, ws := range groups {
		f.own[s] = resolve(s)
		f.got[s] = map[WorkloadRef]Usage{}
		for _, w := range ws {
			if !slices.Contains(f.groups[w], s) {
				f.groups[w] = append(f.groups[w], s)
			}
		}
	}
	return f
}

// add hands one CPU series of container of w to each group of w.
func (f *folding) add(w WorkloadRef, container string, series *model.SampleStream) {
	for _, s := range f.groups[w] {
		own := f.own[s]
		u := f.got[s][w]
		if u == nil {
			u = Usage{}
			f.got[s][w] = u
		}
		h := u[container][corev1.ResourceCPU]
		if h == nil {
			h = &History{Window: own.Window, End: f.r.end, Step: f.r.step, Resolution: f.r.res}
			h.Fold = f.fn(Want{Ref: w, Settings: s}, container, h)
			u[container] = map[corev1.ResourceName]*History{corev1.ResourceCPU: h}
		}
		oldest := f.r.end.Add(-span(own.Window, f.r.step))
		for _, sample := range series.Values {
			t := sample.Timestamp.Time()
			if t.Before(oldest) {
				continue
			}
			if h.Fold == nil {
				h.add(t, float64(sample.Value))
				continue
			}
			h.Fold.Add(t, float64(sample.Value))
			h.cover(t, h.First.IsZero()) // no sample is taken at the zero time
		}
	}
}

// sortKept puts the samples kept for a nil fold in time order, as read
// does with all others.
func (f *folding) sortKept() {
	for _, byRef := range f.got {
		for _, u := range byRef {
			for _, resources := range u {
				if h := resources[corev1.ResourceCPU]; h.Fold == nil {
					h.sortByTime()
				}
			}
		}
	}
}

// with is u with the container resources of more added, in new maps, so
// that neither changes.
func (u Usage) with(more Usage) Usage {
	if len(more) == 0 {
		return u
	}
	out := make(Usage, len(u)+len(more))
	for _, from := range []Usage{u, more} {
		for container, resources := range from {
			if out[container] == nil {
				out[container] = make(map[corev1.ResourceName]*History, 2)
			}
			for res, h := range resources {
				out[container][res] = h
			}
		}
	}
	return out
}
