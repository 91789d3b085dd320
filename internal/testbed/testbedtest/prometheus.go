package testbedtest

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// CountingAPI is Prometheus's client library, counting the range queries
// that reach Prometheus.
type CountingAPI struct {
	promv1.API
	mu sync.Mutex
	// Queries is how many range queries were sent; a test may reset it
	// between reads.
	Queries int
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
