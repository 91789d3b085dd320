//go:build integration

package usage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestStrictBackendsAreReadInPieces reads namespace shop from servers
// that refuse queries of the week for their size: Prometheus with a small
// --query.max-samples, VictoriaMetrics with a small
// -search.maxSamplesPerQuery. Every workload's history must be what the
// unlimited Prometheus answers, each sample once, and the splits said.
func TestStrictBackendsAreReadInPieces(t *testing.T) {
	ctx := context.Background()
	workloads := []usage.WorkloadRef{
		{Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Kind: "Deployment", Namespace: "shop", Name: "web-api"},
		{Kind: "DaemonSet", Namespace: "shop", Name: "web-db"},
		{Kind: "Deployment", Namespace: "shop", Name: "step"},
		{Kind: "Deployment", Namespace: "shop", Name: "oom"},
	}
	read := func(t *testing.T, url string, opts ...usage.Option) map[usage.WorkloadRef]usage.Usage {
		t.Helper()
		client, err := usage.NewClient(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts = append([]usage.Option{usage.WithClock(func() time.Time { return now })}, opts...)
		got, err := usage.NewReader(client, opts...).Read(ctx, "shop", workloads)
		if err != nil {
			t.Fatalf("Read() error = %v", err)
		}
		return got
	}
	want := read(t, weekPrometheus(t).URL)

	// VictoriaMetrics' rate does not extrapolate: its values differ
	// slightly, their number and times do not.
	strict := []struct {
		name      string
		url       func(t *testing.T) string
		sameRates bool
	}{
		{name: "prometheus --query.max-samples", url: func(t *testing.T) string {
			root, err := testbed.RepoRoot()
			if err != nil {
				t.Fatal(err)
			}
			tools, err := testbed.EnsureTools(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			p, err := testbed.StartPrometheusWithHistory(ctx, tools, t.TempDir(), weekOfHistory(), testbed.PrometheusFlags("--query.max-samples=5000"))
			if err != nil {
				t.Fatalf("start prometheus: %v", err)
			}
			t.Cleanup(func() { _ = p.Stop() })
			return p.URL
		}, sameRates: true},
		{name: "victoriametrics -search.maxSamplesPerQuery", url: func(t *testing.T) string {
			return testbedtest.VictoriaMetrics(t, weekOfHistory(), "-search.maxSamplesPerQuery=50000")
		}},
	}
	for _, s := range strict {
		t.Run(s.name, func(t *testing.T) {
			var mu sync.Mutex
			var splits []usage.Split
			got := read(t, s.url(t), usage.WithSplits(func(sp usage.Split) {
				mu.Lock()
				splits = append(splits, sp)
				mu.Unlock()
			}))
			if len(splits) == 0 {
				t.Fatal("no query was split: the limit was not hit")
			}
			byTime := 0
			for _, sp := range splits {
				if sp.By == "time" {
					byTime++
				}
			}
			t.Logf("%d splits, %d of them by time, the first %+v", len(splits), byTime, splits[0])
			for _, w := range workloads {
				for container, resources := range want[w] {
					for res, h := range resources {
						g := got[w][container][res]
						if g == nil || len(g.Values) != len(h.Values) {
							t.Errorf("%s %s %s: %d samples, want %d", w.Name, container, res, samples(g), len(h.Values))
						} else if s.sameRates && !g.Equal(h) {
							t.Errorf("%s %s %s: the history read in pieces differs from the one read whole", w.Name, container, res)
						}
					}
				}
			}
		})
	}
}

func samples(h *usage.History) int {
	if h == nil {
		return 0
	}
	return len(h.Values)
}
