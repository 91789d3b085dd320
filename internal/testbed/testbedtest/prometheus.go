package testbedtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// CountingAPI is Prometheus's client library, counting the range queries
// and series listings that reach Prometheus.
type CountingAPI struct {
	promv1.API
	mu sync.Mutex
	// Queries is how many range queries were sent, Listings how many
	// series listings; a test may reset them between reads.
	Queries, Listings int
}

// NewCountingAPI returns a CountingAPI of the Prometheus at address, or
// fails the test.
func NewCountingAPI(tb testing.TB, address string) *CountingAPI {
	tb.Helper()
	client, err := api.NewClient(api.Config{Address: address})
	if err != nil {
		tb.Fatal(err)
	}
	return &CountingAPI{API: promv1.NewAPI(client)}
}

// QueryRange counts the query and sends it.
func (c *CountingAPI) QueryRange(ctx context.Context, q string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	c.mu.Lock()
	c.Queries++
	c.mu.Unlock()
	return c.API.QueryRange(ctx, q, r, opts...)
}

// Series counts the listing and sends it.
func (c *CountingAPI) Series(ctx context.Context, matches []string, start, end time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	c.mu.Lock()
	c.Listings++
	c.mu.Unlock()
	return c.API.Series(ctx, matches, start, end, opts...)
}

// Prometheus starts a Prometheus of its own holding series, stopped when
// the test ends, and returns a CountingAPI of it; it fails the test when
// the tools or the server cannot be had.
func Prometheus(tb testing.TB, series []testbed.Series) *CountingAPI {
	tb.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := testbed.EnsureTools(tb.Context(), root)
	if err != nil {
		tb.Fatal(err)
	}
	prom, err := testbed.StartPrometheusWithHistory(tb.Context(), tools, tb.TempDir(), series)
	if err != nil {
		tb.Fatalf("start prometheus: %v", err)
	}
	tb.Cleanup(func() { _ = prom.Stop() })
	return NewCountingAPI(tb, prom.URL)
}

// VictoriaMetrics starts a single-node VictoriaMetrics of its own, with
// the flags of args added, holding series, stopped when the test ends, and
// returns its base URL; it fails the test when the server cannot be had.
func VictoriaMetrics(tb testing.TB, series []testbed.Series, args ...string) string {
	tb.Helper()
	binary, err := testbed.EnsureVictoriaMetrics(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	vm, err := testbed.StartVictoriaMetrics(tb.Context(), binary, tb.TempDir(), args)
	if err != nil {
		tb.Fatalf("start victoria-metrics: %v", err)
	}
	tb.Cleanup(func() { _ = vm.Stop() })
	if err := vm.Import(tb.Context(), series); err != nil {
		tb.Fatal(err)
	}
	return vm.URL
}

// Thanos starts a Thanos query in front of a sidecar in front of a
// Prometheus holding series, stopped when the test ends, and returns it;
// it fails the test when the tools or the servers cannot be had.
func Thanos(tb testing.TB, series []testbed.Series) *testbed.Thanos {
	tb.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := testbed.EnsureTools(tb.Context(), root)
	if err != nil {
		tb.Fatal(err)
	}
	binary, err := testbed.EnsureThanos(tb.Context(), root)
	if err != nil {
		tb.Fatal(err)
	}
	th, err := testbed.StartThanosWithHistory(tb.Context(), tools, binary, tb.TempDir(), series)
	if err != nil {
		tb.Fatalf("start thanos: %v", err)
	}
	tb.Cleanup(func() { _ = th.Stop() })
	return th
}
