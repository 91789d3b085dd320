package doctor

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/recommend-job/recommend-job/internal/usage"
)

// namespaceKey holds, in a read's context, the namespace being read.
type namespaceKey struct{}

// namespaceTagger is the run's reader, with the namespace of each read in
// its context, so that the recorder below files each query under it. It
// is a usage.SettingsReader, as the reader is, so that usage.ReadAll
// reads each ResourceRecommend's own window as in a run.
type namespaceTagger struct{ reader *usage.Reader }

var _ usage.SettingsReader = namespaceTagger{}

// Read reads one namespace with the reader's own settings.
func (t namespaceTagger) Read(ctx context.Context, namespace string, workloads []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	return t.reader.Read(context.WithValue(ctx, namespaceKey{}, namespace), namespace, workloads)
}

// ReadEach reads one namespace's groups of workloads in one read.
func (t namespaceTagger) ReadEach(ctx context.Context, namespace string, groups map[usage.Settings][]usage.WorkloadRef, fold usage.FoldFunc) (map[usage.Settings]map[usage.WorkloadRef]usage.Usage, error) {
	return t.reader.ReadEach(context.WithValue(ctx, namespaceKey{}, namespace), namespace, groups, fold)
}

// recorder passes range queries on and remembers each, with its range and
// the series that answered, under the namespace being read.
type recorder struct {
	next usage.RangeQuerier
	mu   sync.Mutex
	got  []call
}

var _ usage.RangeQuerier = (*recorder)(nil)

// listingRecorder is a recorder that passes series listings on too and
// remembers them as it does queries. The reader lists ownership when its
// API lists series: doctor's reader gets one exactly when the run's does.
type listingRecorder struct {
	*recorder
	lister usage.SeriesLister
}

var _ usage.SeriesLister = listingRecorder{}

// newRecorder returns a recorder of next's requests, and the API to read
// through it: the recorder, or a listingRecorder of it when next lists
// series.
func newRecorder(next usage.RangeQuerier) (*recorder, usage.RangeQuerier) {
	r := &recorder{next: next}
	if lister, ok := next.(usage.SeriesLister); ok {
		return r, listingRecorder{recorder: r, lister: lister}
	}
	return r, r
}

// call is one range query or series listing sent.
type call struct {
	namespace, query string
	// rng is the query's range; a listing's start and end, without a
	// step.
	rng     promv1.Range
	series  []model.Fingerprint
	listing bool
}

// QueryRange sends the query and records it.
func (r *recorder) QueryRange(ctx context.Context, query string, rng promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	v, warnings, infos, err := r.next.QueryRange(ctx, query, rng, opts...)
	c := call{query: query, rng: rng}
	if m, ok := v.(model.Matrix); ok {
		for _, s := range m {
			c.series = append(c.series, s.Metric.Fingerprint())
		}
	}
	r.add(ctx, c)
	return v, warnings, infos, err
}

// Series sends the listing and records it as "series" and its selectors.
func (l listingRecorder) Series(ctx context.Context, matches []string, start, end time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	sets, warnings, infos, err := l.lister.Series(ctx, matches, start, end, opts...)
	c := call{query: "series " + strings.Join(matches, " "), rng: promv1.Range{Start: start, End: end}, listing: true}
	for _, s := range sets {
		c.series = append(c.series, s.Fingerprint())
	}
	l.add(ctx, c)
	return sets, warnings, infos, err
}

// add records c under the namespace being read.
func (r *recorder) add(ctx context.Context, c call) {
	c.namespace, _ = ctx.Value(namespaceKey{}).(string)
	r.mu.Lock()
	r.got = append(r.got, c)
	r.mu.Unlock()
}

// sentQueries are the queries of one namespace: each distinct query or
// listing once, sorted, and how many range queries and series listings
// were sent in all.
type sentQueries struct {
	queries         []sentQuery
	calls, listings int
}

// sentQuery is one query, sent over one range or, for a window longer
// than Prometheus returns at once, over several that follow each other.
type sentQuery struct {
	query string
	// series is how many distinct series answered over all its ranges.
	series int
	// span is the time its ranges cover, step their resolution (none
	// for a listing).
	span, step model.Duration
}

// sent are the queries recorded for namespace.
func (r *recorder) sent(namespace string) sentQueries {
	r.mu.Lock()
	defer r.mu.Unlock()
	type acc struct {
		start, end time.Time
		step       time.Duration
		series     map[model.Fingerprint]bool
	}
	byQuery := map[string]*acc{}
	out := sentQueries{}
	for _, c := range r.got {
		if c.namespace != namespace {
			continue
		}
		out.calls++
		if c.listing {
			out.listings++
		}
		a := byQuery[c.query]
		if a == nil {
			a = &acc{start: c.rng.Start, end: c.rng.End, step: c.rng.Step, series: map[model.Fingerprint]bool{}}
			byQuery[c.query] = a
		}
		if c.rng.Start.Before(a.start) {
			a.start = c.rng.Start
		}
		if c.rng.End.After(a.end) {
			a.end = c.rng.End
		}
		for _, f := range c.series {
			a.series[f] = true
		}
	}
	for q, a := range byQuery {
		out.queries = append(out.queries, sentQuery{query: q, series: len(a.series),
			span: model.Duration(a.end.Sub(a.start)), step: model.Duration(a.step)})
	}
	slices.SortFunc(out.queries, func(a, b sentQuery) int { return cmp.Compare(a.query, b.query) })
	return out
}
