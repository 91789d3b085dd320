package usage

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestBackend checks that each backend is told by what it serves, as each
// answers: Prometheus' build information and flags, Mimir's application
// name, Thanos' stores, VictoriaMetrics' /flags.
func TestBackend(t *testing.T) {
	tests := []struct {
		name   string
		serves map[string]string // path below the prefix -> answer
		want   Backend
	}{
		{name: "Prometheus", serves: map[string]string{
			"/api/v1/status/buildinfo": `{"status":"success","data":{"version":"2.53.0","revision":"x"}}`,
			"/api/v1/status/flags":     `{"status":"success","data":{"query.max-samples":"50000000","query.timeout":"2m","web.listen-address":":9090"}}`,
		}, want: Backend{Name: "Prometheus", Version: "2.53.0", Limits: []string{"query.max-samples=50000000", "query.timeout=2m"}}},
		{name: "Mimir", serves: map[string]string{
			"/api/v1/status/buildinfo": `{"status":"success","data":{"application":"Grafana Mimir","version":"2.14.0","features":{}}}`,
		}, want: Backend{Name: "Grafana Mimir", Version: "2.14.0"}},
		{name: "Thanos", serves: map[string]string{
			"/api/v1/status/buildinfo": `{"status":"success","data":{"version":"0.37.2"}}`,
			"/api/v1/stores":           `{"status":"success","data":{"sidecar":[]}}`,
			"/api/v1/status/flags":     `{"status":"success","data":{"query.max-concurrent":"20","query.timeout":"2m"}}`,
		}, want: Backend{Name: "Thanos", Version: "0.37.2", Limits: []string{"query.timeout=2m", "query.max-concurrent=20"}}},
		{name: "VictoriaMetrics", serves: map[string]string{
			"/api/v1/status/buildinfo": `{"status":"success","data":{}}`,
			"/flags":                   "-retentionPeriod=\"100y\"\n-search.maxSamplesPerQuery=\"30000\"\n",
		}, want: Backend{Name: "VictoriaMetrics", Limits: []string{"search.maxSamplesPerQuery=30000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				answer, ok := tt.serves[r.URL.Path[len("/prefix"):]]
				if !ok {
					http.NotFound(w, r)
					return
				}
				io.WriteString(w, answer)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL+"/prefix", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Backend(context.Background())
			if err != nil || got.Name != tt.want.Name || got.Version != tt.want.Version || !slices.Equal(got.Limits, tt.want.Limits) {
				t.Errorf("Backend() = %+v, %v, want %+v", got, err, tt.want)
			}
		})
	}
}
