package collect

import (
	"context"
	"fmt"
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
type Usage map[string]map[corev1.ResourceName][]float64

// UsageReader reads usage history from a Prometheus-compatible API.
type UsageReader struct {
	api        RangeQuerier
	window     time.Duration
	step       time.Duration
	rateWindow time.Duration
	now        func() time.Time
}

// UsageOption configures a UsageReader.
type UsageOption func(*UsageReader)

// WithWindow sets how far back history is read.
func WithWindow(d time.Duration) UsageOption { return func(r *UsageReader) { r.window = d } }

// WithStep sets the resolution of the history.
func WithStep(d time.Duration) UsageOption { return func(r *UsageReader) { r.step = d } }

// WithClock sets the clock, for tests.
func WithClock(now func() time.Time) UsageOption { return func(r *UsageReader) { r.now = now } }

// NewUsageReader returns a UsageReader querying api.
func NewUsageReader(api RangeQuerier, opts ...UsageOption) *UsageReader {
	r := &UsageReader{api: api, window: DefaultWindow, step: DefaultStep, rateWindow: DefaultRateWindow, now: time.Now}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Read fetches the history of workloads, which must all be in namespace,
// with one query per resource for the whole namespace, never one per
// workload or container. Series are attributed to workloads by the pod
// naming pattern of each workload's kind.
func (r *UsageReader) Read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error) {
	if len(workloads) == 0 {
		return nil, nil
	}
	patterns := make([]string, 0, len(workloads))
	matchers := make(map[WorkloadRef]*regexp.Regexp, len(workloads))
	for _, w := range workloads {
		if w.Namespace != namespace {
			return nil, fmt.Errorf("workload %s/%s is not in namespace %s", w.Namespace, w.Name, namespace)
		}
		p := PodNamePattern(w.Kind, w.Name)
		patterns = append(patterns, p)
		matchers[w] = regexp.MustCompile("^(?:" + p + ")$")
	}
	sort.Strings(patterns)
	selector := fmt.Sprintf(`namespace=%s,container!="",container!="POD",pod=~%s`,
		strconv.Quote(namespace), strconv.Quote(strings.Join(patterns, "|")))

	queries := map[corev1.ResourceName]string{
		corev1.ResourceCPU: fmt.Sprintf(`max by (pod, container) (rate(container_cpu_usage_seconds_total{%s}[%s]))`,
			selector, model.Duration(r.rateWindow)),
		corev1.ResourceMemory: fmt.Sprintf(`max by (pod, container) (container_memory_working_set_bytes{%s})`, selector),
	}
	end := r.now()
	rng := promv1.Range{Start: end.Add(-r.window), End: end, Step: r.step}

	out := make(map[WorkloadRef]Usage, len(workloads))
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		v, _, _, err := r.api.QueryRange(ctx, queries[res], rng)
		if err != nil {
			return nil, fmt.Errorf("querying %s usage in namespace %s: %w", res, namespace, err)
		}
		matrix, ok := v.(model.Matrix)
		if !ok {
			return nil, fmt.Errorf("querying %s usage in namespace %s: got %s, want a matrix", res, namespace, v.Type())
		}
		for _, series := range matrix {
			pod := string(series.Metric["pod"])
			container := string(series.Metric["container"])
			for w, re := range matchers {
				if !re.MatchString(pod) {
					continue
				}
				u := out[w]
				if u == nil {
					u = Usage{}
					out[w] = u
				}
				if u[container] == nil {
					u[container] = map[corev1.ResourceName][]float64{}
				}
				for _, s := range series.Values {
					u[container][res] = append(u[container][res], float64(s.Value))
				}
			}
		}
	}
	return out, nil
}

// PodNamePattern is a regular expression matching exactly the names of the
// pods a workload of kind creates, so that web never matches web-api's pods.
// name is quoted, as object names may contain dots.
func PodNamePattern(kind, name string) string {
	n := regexp.QuoteMeta(name)
	switch kind {
	case "Deployment":
		// <name>-<pod-template-hash>-<5 random>
		return n + `-[a-z0-9]+-[a-z0-9]{5}`
	case "StatefulSet":
		return n + `-[0-9]+`
	case "CronJob":
		// <name>-<scheduled time>-<5 random>
		return n + `-[0-9]+-[a-z0-9]{5}`
	default:
		// DaemonSet, ReplicaSet, Job: <name>-<5 random>
		return n + `-[a-z0-9]{5}`
	}
}
