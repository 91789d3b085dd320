package testbed

import (
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// readBlocks returns every series in the TSDB at dir, keyed by its label
// set, as Prometheus would read it.
func readBlocks(t *testing.T, dir string) map[string][]Sample {
	t.Helper()
	// A read-only TSDB wants the WAL a running Prometheus would have.
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	out := map[string][]Sample{}
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	for set.Next() {
		s := set.At()
		it := s.Iterator(nil)
		var samples []Sample
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			samples = append(samples, Sample{Time: time.UnixMilli(ts).UTC(), Value: v})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[s.Labels().String()] = samples
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteBlockRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	series := []Series{
		{Name: "container_cpu_usage_seconds_total", Labels: map[string]string{"pod": "web-0", "container": "app"},
			// Out of order on purpose: WriteBlock sorts a series' samples.
			Samples: []Sample{{at.Add(2 * time.Minute), 7.5}, {at, 1}, {at.Add(time.Minute), 3.25}}},
		{Name: "kube_pod_owner", Labels: map[string]string{"pod": "web-0", "owner_name": `we"b`}, Samples: []Sample{{at, 1}}},
		// A week earlier: one block holds both ends.
		{Name: "old", Samples: []Sample{{at.Add(-7 * 24 * time.Hour), 42}}},
		{Name: "empty"},
	}
	dir := t.TempDir()
	if err := WriteBlock(t.Context(), dir, slices.Values(series)); err != nil {
		t.Fatalf("WriteBlock() error = %v", err)
	}
	want := map[string][]Sample{
		`{__name__="container_cpu_usage_seconds_total", container="app", pod="web-0"}`: {{at, 1}, {at.Add(time.Minute), 3.25}, {at.Add(2 * time.Minute), 7.5}},
		`{__name__="kube_pod_owner", owner_name="we\"b", pod="web-0"}`:                 {{at, 1}},
		`{__name__="old"}`: {{at.Add(-7 * 24 * time.Hour), 42}},
	}
	if d := cmp.Diff(want, readBlocks(t, dir)); d != "" {
		t.Errorf("series read back (-want +got):\n%s", d)
	}
}

func TestWriteBlockWithoutSamplesWritesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBlock(t.Context(), dir, slices.Values([]Series{{Name: "empty"}})); err != nil {
		t.Fatalf("WriteBlock() error = %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "wal" && e.Name() != "chunks_head" {
			t.Errorf("WriteBlock() of no samples wrote %s", e.Name())
		}
	}
}

func TestWriteBlockRejects(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	one := []Sample{{at, 1}}
	tests := []struct {
		name   string
		series []Series
		want   string
	}{
		{name: "invalid metric name", series: []Series{{Name: "cpu-usage", Samples: one}}, want: `invalid metric name "cpu-usage"`},
		{name: "reserved label", series: []Series{{Name: "x", Labels: map[string]string{"__name__": "y"}, Samples: one}}, want: `invalid label name "__name__"`},
		{name: "invalid label", series: []Series{{Name: "x", Labels: map[string]string{"pod name": "y"}, Samples: one}}, want: `invalid label name "pod name"`},
		{name: "sample without time", series: []Series{{Name: "x", Samples: []Sample{{Value: 1}}}}, want: "sample without time"},
		{name: "same series twice, overlapping", series: []Series{
			{Name: "x", Samples: []Sample{{at, 1}, {at.Add(2 * time.Minute), 2}}},
			{Name: "x", Samples: []Sample{{at.Add(time.Minute), 3}}},
		}, want: `series {__name__="x"}`},
		{name: "more than the span", series: []Series{
			{Name: "x", Samples: one},
			{Name: "y", Samples: []Sample{{at.Add(historySpan + time.Minute), 1}}},
		}, want: "samples span more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteBlock(t.Context(), t.TempDir(), slices.Values(tt.series))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteBlock() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestReadOpenMetrics(t *testing.T) {
	in := `# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{namespace="shop",pod="web-0"} 1 1793534400
container_cpu_usage_seconds_total{namespace="shop",pod="web-0"} 2.5 1793534460.5
container_cpu_usage_seconds_total{namespace="shop",pod="web-1"} 0 1793534400
# TYPE kube_pod_owner gauge
kube_pod_owner{owner_name="we\"b\\x"} 1 1793534400
# EOF
`
	got, err := ReadOpenMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadOpenMetrics() error = %v", err)
	}
	at := time.Unix(1793534400, 0)
	want := []Series{
		{Name: "container_cpu_usage_seconds_total", Labels: map[string]string{"namespace": "shop", "pod": "web-0"},
			Samples: []Sample{{at, 1}, {at.Add(60500 * time.Millisecond), 2.5}}},
		{Name: "container_cpu_usage_seconds_total", Labels: map[string]string{"namespace": "shop", "pod": "web-1"},
			Samples: []Sample{{at, 0}}},
		{Name: "kube_pod_owner", Labels: map[string]string{"owner_name": `we"b\x`}, Samples: []Sample{{at, 1}}},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("ReadOpenMetrics() (-want +got):\n%s", d)
	}

	for name, bad := range map[string]string{
		"a sample without timestamp": "# TYPE x gauge\nx 1\n# EOF\n",
		"no # EOF":                   "# TYPE x gauge\nx 1 1793534400\n",
		"not OpenMetrics":            "x{ 1\n# EOF\n",
	} {
		if _, err := ReadOpenMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadOpenMetrics() of %s: no error", name)
		}
	}
}
