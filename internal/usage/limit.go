package usage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// sizeLimits are the words with which backends refuse a query for its
// size, lower-cased, and the limit each names. A query refused so is read
// again in smaller pieces.
var sizeLimits = []struct{ text, limit string }{
	{"would load too many samples into memory", "Prometheus --query.max-samples"},
	{"maximum resolution of 11,000 points", "11,000 points per series"},
	{"maxsamplesperquery", "VictoriaMetrics -search.maxSamplesPerQuery"},
	{"maxsamplesperseries", "VictoriaMetrics -search.maxSamplesPerSeries"},
	{"maxuniquetimeseries", "VictoriaMetrics -search.maxUniqueTimeseries"},
	{"maxpointspertimeseries", "VictoriaMetrics -search.maxPointsPerTimeseries"},
	{"max-chunks-per-query", "Mimir max_fetched_chunks_per_query"},
	{"max-estimated-chunks-per-query", "Mimir max_estimated_fetched_chunks_per_query_multiplier"},
	{"max-chunks-bytes-per-query", "Mimir max_fetched_chunk_bytes_per_query"},
	{"max-series-per-query", "Mimir max_fetched_series_per_query"},
	{"exceeded series limit", "Thanos store series limit"},
	{"exceeded chunks limit", "Thanos store chunks limit"},
	{"exceeded samples limit", "Thanos store samples limit"},
}

// sizeLimit names the limit for whose size a backend refused a query with
// err, or is empty when err is no such refusal.
func sizeLimit(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var apiErr *promv1.Error
	if errors.As(err, &apiErr) {
		text += " " + apiErr.Detail
	}
	text = strings.ToLower(text)
	for _, l := range sizeLimits {
		if strings.Contains(text, l.text) {
			return l.limit
		}
	}
	return ""
}

// Split is how a read went around a backend's limit: the query of what in
// namespace, refused for its size, was read again in two pieces, by
// workloads (half of the pods each) or by time (half of the range each).
type Split struct {
	Namespace string
	Query     string
	Limit     string
	By        string // "workloads" or "time"
	// Pieces are the sizes of the two pieces: workloads, or steps.
	Pieces [2]int
}

// WithSplits hands each split of a query (see Split) to fn, as it is made,
// from the goroutine reading the namespace; doctor shows them.
func WithSplits(fn func(Split)) Option { return func(r *Reader) { r.splits = fn } }

// piece runs query over rng for the pods of workloads (all of the
// attributor's when nil), and hands each series of them to add. When the
// backend refuses it for its size before any series arrived, it is read
// again in two pieces, each once: first half of the workloads each, down
// to one workload, then half of the range each, down to one step. A
// series is only taken in the piece its workload is in, so that a pod
// two pieces' patterns match is counted once.
func (r *Reader) piece(ctx context.Context, namespace string, what corev1.ResourceName, query string, rng promv1.Range,
	a *attributor, workloads []WorkloadRef, counted cpuSeries, add func(WorkloadRef, string, *model.SampleStream)) error {
	var in map[WorkloadRef]bool
	if workloads != nil {
		in = make(map[WorkloadRef]bool, len(workloads))
		for _, w := range workloads {
			in[w] = true
		}
	} else {
		workloads = a.workloads
	}
	q := a.narrow(query, workloads)
	handed := false
	take := func(series *model.SampleStream) {
		w, ok := a.owner(string(series.Metric["pod"]))
		if ok && (in == nil || in[w]) {
			add(w, string(series.Metric["container"]), series)
		}
	}
	m := counted.merger()
	noted := r.sources != nil && sourced(what)
	err := r.query(ctx, namespace, what, q, rng, func(series *model.SampleStream) {
		handed = true
		// Before the merger, which keeps only the pod and container.
		if noted {
			if w, ok := a.owner(string(series.Metric["pod"])); ok && (in == nil || in[w]) {
				r.sources.note(w, string(series.Metric["container"]), series.Metric)
			}
		}
		m.take(series, take)
	})
	if err == nil {
		if err = m.flush(take); err != nil {
			return fmt.Errorf("querying %s in namespace %s: %w", what, namespace, err)
		}
	}
	limit := sizeLimit(err)
	if limit == "" || handed {
		return err
	}
	split := Split{Namespace: namespace, Query: string(what), Limit: limit}
	steps := int(rng.End.Sub(rng.Start)/rng.Step) + 1
	switch {
	case len(workloads) > 1 && a.narrow(query, workloads[:1]) != q:
		half := len(workloads) / 2
		split.By, split.Pieces = "workloads", [2]int{half, len(workloads) - half}
		r.noteSplit(ctx, split)
		if err := r.piece(ctx, namespace, what, query, rng, a, workloads[:half], counted, add); err != nil {
			return err
		}
		return r.piece(ctx, namespace, what, query, rng, a, workloads[half:], counted, add)
	case steps > 1:
		half := steps / 2
		split.By, split.Pieces = "time", [2]int{half, steps - half}
		r.noteSplit(ctx, split)
		first := promv1.Range{Start: rng.Start, End: rng.Start.Add(time.Duration(half-1) * rng.Step), Step: rng.Step}
		second := promv1.Range{Start: first.End.Add(rng.Step), End: rng.End, Step: rng.Step}
		if err := r.piece(ctx, namespace, what, query, first, a, workloads, counted, add); err != nil {
			return err
		}
		return r.piece(ctx, namespace, what, query, second, a, workloads, counted, add)
	}
	return fmt.Errorf("%w (refused by %s for one workload and one step)", err, limit)
}

// noteSplit logs a split and hands it to the splits option.
func (r *Reader) noteSplit(ctx context.Context, s Split) {
	r.log.InfoContext(ctx, "the backend refused a query for its size: reading it in two pieces",
		"namespace", s.Namespace, "query", s.Query, "limit", s.Limit, "by", s.By, "pieces", fmt.Sprintf("%d+%d", s.Pieces[0], s.Pieces[1]))
	if r.splits != nil {
		r.splits(s)
	}
}

// podRegexp is the quoted regular expression that selects the pods of
// patterns in a query.
func podRegexp(patterns []string) string {
	sorted := append([]string(nil), patterns...)
	sort.Strings(sorted)
	return "pod=~" + strconv.Quote(strings.Join(sorted, "|"))
}

// narrow is query selecting only the pods of workloads: the attributor's
// pod selector replaced with theirs. A query without that selector (the
// ownership query selects by namespace) is returned as it is.
func (a *attributor) narrow(query string, workloads []WorkloadRef) string {
	if len(workloads) == len(a.workloads) || a.podSelector == "" {
		return query
	}
	patterns := make([]string, 0, len(workloads))
	for _, w := range workloads {
		patterns = append(patterns, a.patterns[w])
	}
	return strings.ReplaceAll(query, a.podSelector, podRegexp(patterns))
}
