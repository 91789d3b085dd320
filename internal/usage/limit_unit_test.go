package usage

import (
	"errors"
	"fmt"
	"testing"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// TestSizeLimit checks that each backend's refusal for size is told from
// other errors, as the backends word them.
func TestSizeLimit(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "Prometheus", err: &promv1.Error{Type: promv1.ErrExec, Msg: "query processing would load too many samples into memory in query execution"},
			want: "Prometheus --query.max-samples"},
		{name: "Prometheus points", err: &promv1.Error{Type: promv1.ErrBadData, Msg: "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"},
			want: "11,000 points per series"},
		{name: "VictoriaMetrics samples", err: &promv1.Error{Type: "422", Msg: "cannot select more than -search.maxSamplesPerQuery=20000 samples"},
			want: "VictoriaMetrics -search.maxSamplesPerQuery"},
		{name: "VictoriaMetrics series", err: &promv1.Error{Type: "422", Msg: "the number of matching unique timeseries exceeds 300000; either narrow down the search or increase -search.maxUniqueTimeseries"},
			want: "VictoriaMetrics -search.maxUniqueTimeseries"},
		{name: "VictoriaMetrics points", err: &promv1.Error{Type: "422", Msg: "too many points for the given step=60000, start=0 and end=1: 40000; cannot exceed -search.maxPointsPerTimeseries=30000"},
			want: "VictoriaMetrics -search.maxPointsPerTimeseries"},
		{name: "Mimir chunks, in the detail of a 422", err: &promv1.Error{Type: promv1.ErrClient, Msg: "client error: 422",
			Detail: "the query exceeded the maximum number of chunks fetched from ingesters when querying 'container_cpu_usage_seconds_total' (limit: 2000000) (err-mimir-max-chunks-per-query)"},
			want: "Mimir max_fetched_chunks_per_query"},
		{name: "Mimir series", err: fmt.Errorf("querying cpu: %w", &promv1.Error{Type: promv1.ErrExec, Msg: "the query exceeded the maximum number of series (limit: 100000) (err-mimir-max-series-per-query)"}),
			want: "Mimir max_fetched_series_per_query"},
		{name: "Thanos store", err: &promv1.Error{Type: promv1.ErrServer, Msg: "rpc error: code = Aborted desc = exceeded series limit: limit 1000 violated (got 1001)"},
			want: "Thanos store series limit"},
		{name: "a timeout", err: &promv1.Error{Type: promv1.ErrTimeout, Msg: "query timed out in expression evaluation"}},
		{name: "a refused connection", err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sizeLimit(tt.err); got != tt.want {
				t.Errorf("sizeLimit(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
