package job

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// enginePrometheus answers range queries from a fixed set of samples with
// Prometheus' own query engine, in the test's process: the reader's
// PromQL evaluated as a server would, without one.
type enginePrometheus struct {
	engine *promql.Engine
	db     *tsdb.DBReadOnly
	// points counts the points of every answer, per query kind (the
	// metric its query reads first).
	points map[string]*atomic.Int64
}

// newEnginePrometheus loads series into a TSDB block of its own.
func newEnginePrometheus(t *testing.T, series []testbed.Series) *enginePrometheus {
	t.Helper()
	dir := t.TempDir()
	if err := testbed.WriteBlock(t.Context(), dir, slices.Values(series)); err != nil {
		t.Fatal(err)
	}
	// A read-only TSDB reads its head from a WAL, which a block alone
	// lacks: an empty one.
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	p := &enginePrometheus{engine: engine, db: db, points: map[string]*atomic.Int64{}}
	for _, kind := range queryKinds {
		p.points[kind] = &atomic.Int64{}
	}
	return p
}

// queryKinds tell the reader's queries apart by what they read.
var queryKinds = []string{"container_cpu_usage_seconds_total", "kube_pod_container_status_last_terminated_reason", "container_start_time_seconds", "container_memory_working_set_bytes"}

// kindOf is the kind of q: the first of queryKinds it reads; the startup
// query reads the working set too, so start times are looked for first.
func kindOf(q string) string {
	for _, kind := range []string{"kube_pod_container_status_last_terminated_reason", "container_start_time_seconds", "container_memory_working_set_bytes", "container_cpu_usage_seconds_total"} {
		if strings.Contains(q, kind) {
			return kind
		}
	}
	return ""
}

func (p *enginePrometheus) QueryRange(ctx context.Context, query string, r promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	q, err := p.engine.NewRangeQuery(ctx, p.db, nil, query, r.Start, r.End, r.Step)
	if err != nil {
		return nil, nil, nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, nil, nil, res.Err
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("query %s: %w", query, err)
	}
	out := make(model.Matrix, 0, len(m))
	points := 0
	for _, s := range m {
		ss := &model.SampleStream{Metric: model.Metric{}}
		s.Metric.Range(func(l labels.Label) { ss.Metric[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		for _, f := range s.Floats {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(f.T), Value: model.SampleValue(f.F)})
		}
		points += len(ss.Values)
		out = append(out, ss)
	}
	if c := p.points[kindOf(query)]; c != nil {
		c.Add(int64(points))
	}
	return out, nil, nil, nil
}

// read returns the points answered of each kind since the last call.
func (p *enginePrometheus) read() map[string]int64 {
	out := map[string]int64{}
	for kind, c := range p.points {
		out[kind] = c.Swap(0)
	}
	return out
}
