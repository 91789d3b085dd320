package usage

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// Defaults for reading usage history.
const (
	DefaultWindow     = 7 * 24 * time.Hour
	DefaultStep       = time.Minute
	DefaultRateWindow = 5 * time.Minute
)

// RangeQuerier is the part of the Prometheus HTTP API a run uses.
type RangeQuerier interface {
	QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
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

// History is the samples of one container's resource, from all its pods.
type History struct {
	Values []float64
	// First and Last are the times of the earliest and latest sample.
	First, Last time.Time
}

// Span is the time the samples cover.
func (h *History) Span() time.Duration {
	if h == nil {
		return 0
	}
	return h.Last.Sub(h.First)
}

func (h *History) add(t time.Time, v float64) {
	if len(h.Values) == 0 || t.Before(h.First) {
		h.First = t
	}
	if len(h.Values) == 0 || t.After(h.Last) {
		h.Last = t
	}
	h.Values = append(h.Values, v)
}

// maxPointsPerSeries is kept below Prometheus's limit of 11,000 points per
// series in one range query; longer ranges are split.
const maxPointsPerSeries = 10000

// Reader reads usage history from a Prometheus-compatible API.
type Reader struct {
	api        RangeQuerier
	window     time.Duration
	step       time.Duration
	rateWindow time.Duration
	now        func() time.Time
	log        *slog.Logger
}

// Option configures a Reader.
type Option func(*Reader)

// WithWindow sets how far back history is read.
func WithWindow(d time.Duration) Option { return func(r *Reader) { r.window = d } }

// WithStep sets the resolution of the history.
func WithStep(d time.Duration) Option { return func(r *Reader) { r.step = d } }

// WithLogger sets the logger, which receives Prometheus's warnings.
func WithLogger(l *slog.Logger) Option { return func(r *Reader) { r.log = l } }

// WithClock sets the clock, for tests.
func WithClock(now func() time.Time) Option { return func(r *Reader) { r.now = now } }

// NewReader returns a Reader querying api.
func NewReader(api RangeQuerier, opts ...Option) *Reader {
	r := &Reader{api: api, window: DefaultWindow, step: DefaultStep, rateWindow: DefaultRateWindow, now: time.Now,
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Read fetches the history of workloads, which must all be in namespace,
// with one query per resource for the whole namespace (split in time when
// the window holds more points than Prometheus returns per series), never
// one per workload or container. Series are attributed to workloads by the
// pod naming pattern of each workload's kind; a pod that fits several
// patterns goes to the workload with the longest name, the most specific.
func (r *Reader) Read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error) {
	if len(workloads) == 0 {
		return nil, nil
	}
	patterns := make([]string, 0, len(workloads))
	matchers := make([]podMatcher, 0, len(workloads))
	for _, w := range workloads {
		if w.Namespace != namespace {
			return nil, fmt.Errorf("workload %s/%s is not in namespace %s", w.Namespace, w.Name, namespace)
		}
		p := PodNamePattern(w.Kind, w.Name)
		patterns = append(patterns, p)
		matchers = append(matchers, podMatcher{workload: w, re: regexp.MustCompile("^(?:" + p + ")$")})
	}
	sort.Strings(patterns)
	sort.SliceStable(matchers, func(i, j int) bool { return len(matchers[i].workload.Name) > len(matchers[j].workload.Name) })
	selector := fmt.Sprintf(`namespace=%s,container!="",container!="POD",pod=~%s`,
		strconv.Quote(namespace), strconv.Quote(strings.Join(patterns, "|")))

	queries := map[corev1.ResourceName]string{
		corev1.ResourceCPU: fmt.Sprintf(`max by (pod, container) (rate(container_cpu_usage_seconds_total{%s}[%s]))`,
			selector, model.Duration(r.rateWindow)),
		corev1.ResourceMemory: fmt.Sprintf(`max by (pod, container) (container_memory_working_set_bytes{%s})`, selector),
	}

	out := make(map[WorkloadRef]Usage, len(workloads))
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		for _, rng := range r.ranges() {
			v, warnings, _, err := r.api.QueryRange(ctx, queries[res], rng)
			if err != nil {
				return nil, fmt.Errorf("querying %s usage in namespace %s: %w", res, namespace, err)
			}
			if len(warnings) > 0 {
				r.log.WarnContext(ctx, "prometheus answered with warnings", "namespace", namespace, "resource", res, "warnings", warnings)
			}
			matrix, ok := v.(model.Matrix)
			if !ok {
				return nil, fmt.Errorf("querying %s usage in namespace %s: got %s, want a matrix", res, namespace, v.Type())
			}
			for _, series := range matrix {
				w, ok := owner(matchers, string(series.Metric["pod"]))
				if !ok {
					continue
				}
				h := history(out, w, string(series.Metric["container"]), res)
				for _, s := range series.Values {
					h.add(s.Timestamp.Time(), float64(s.Value))
				}
			}
		}
	}
	return out, nil
}

type podMatcher struct {
	workload WorkloadRef
	re       *regexp.Regexp
}

// owner finds the workload a pod belongs to; matchers are sorted longest
// name first.
func owner(matchers []podMatcher, pod string) (WorkloadRef, bool) {
	for _, m := range matchers {
		if m.re.MatchString(pod) {
			return m.workload, true
		}
	}
	return WorkloadRef{}, false
}

// ranges splits the window into consecutive ranges of at most
// maxPointsPerSeries steps. Each range starts one step after the previous
// one ends, so no sample is read twice.
func (r *Reader) ranges() []promv1.Range {
	end := r.now()
	start := end.Add(-r.window)
	chunk := time.Duration(maxPointsPerSeries-1) * r.step
	var out []promv1.Range
	for from := start; !from.After(end); from = from.Add(chunk + r.step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		out = append(out, promv1.Range{Start: from, End: to, Step: r.step})
	}
	return out
}

// history returns the history of one container resource of w, creating it.
func history(u map[WorkloadRef]Usage, w WorkloadRef, container string, res corev1.ResourceName) *History {
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
		h = &History{}
		usage[container][res] = h
	}
	return h
}

// PodNamePattern is a regular expression matching exactly the names of the
// pods a workload of kind creates, so that web never matches web-api's
// pods. Generated parts use the alphabet Kubernetes draws them from, which
// has no vowels, so that words rarely pass for them. name is quoted, as
// object names may contain dots.
func PodNamePattern(kind, name string) string {
	const generated = `[bcdfghjklmnpqrstvwxz2456789]`
	n := regexp.QuoteMeta(name)
	switch kind {
	case "Deployment":
		// <name>-<pod-template-hash>-<5 random>
		return n + `-` + generated + `{1,10}-` + generated + `{5}`
	case "StatefulSet":
		return n + `-[0-9]+`
	case "CronJob":
		// <name>-<scheduled time in minutes>-<5 random>
		return n + `-[0-9]+-` + generated + `{5}`
	default:
		// DaemonSet, ReplicaSet, Job: <name>-<5 random>
		return n + `-` + generated + `{5}`
	}
}
