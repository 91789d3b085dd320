package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestPrometheusClientSendsCredentials runs a query against a stand-in
// server that records what arrives.
func TestPrometheusClientSendsCredentials(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	query := func(t *testing.T, c *Config) http.Header {
		t.Helper()
		c.PrometheusURL = srv.URL
		api, err := newPrometheusAPI(c)
		if err != nil {
			t.Fatalf("newPrometheusAPI() error = %v", err)
		}
		now := time.Now()
		if _, _, _, err := api.QueryRange(context.Background(), "up", promv1.Range{Start: now, End: now, Step: time.Minute}); err != nil {
			t.Fatalf("QueryRange() error = %v", err)
		}
		return got
	}

	h := query(t, &Config{PrometheusBearerTokenFile: tokenFile, PrometheusHeaders: []string{"X-Scope-OrgID=tenant-a", "x-extra=1"}})
	if h.Get("Authorization") != "Bearer first" || h.Get("X-Scope-Orgid") != "tenant-a" || h.Get("X-Extra") != "1" {
		t.Errorf("headers = %v, want the file's bearer token and both extra headers", h)
	}
	// The file is read again on every request: a rotated token is used.
	if err := os.WriteFile(tokenFile, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if h := query(t, &Config{PrometheusBearerTokenFile: tokenFile}); h.Get("Authorization") != "Bearer second" {
		t.Errorf("Authorization = %q, want the rotated token", h.Get("Authorization"))
	}
	// admin:secret in base64 is YWRtaW46c2VjcmV0.
	if h := query(t, &Config{PrometheusUsername: "admin", PrometheusPassword: "secret"}); h.Get("Authorization") != "Basic YWRtaW46c2VjcmV0" {
		t.Errorf("Authorization = %q, want basic admin:secret", h.Get("Authorization"))
	}
}

func TestCompletePrometheus(t *testing.T) {
	valid := func() Config {
		return Config{PrometheusStep: time.Minute, PrometheusRateWindow: 5 * time.Minute, PrometheusTimeout: 2 * time.Minute, HalfLife: 24 * time.Hour,
			MemoryPeakInterval: time.Hour, Percentile: 0.9, MinSamples: 12, ChangeThreshold: 0.1}
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"valid", func(*Config) {}, ""},
		{"token and basic", func(c *Config) { c.PrometheusBearerToken, c.PrometheusUsername = "s3cr3t", "u" },
			"prometheus-username: basic authentication and a bearer token exclude each other"},
		{"bad header", func(c *Config) { c.PrometheusHeaders = []string{"no value"} },
			`prometheus-headers: want Name=value, got an entry named "no value"`},
		{"authorization header", func(c *Config) { c.PrometheusHeaders = []string{"Authorization=Bearer s3cr3t"} },
			"prometheus-headers: set Authorization through prometheus-bearer-token or prometheus-username"},
		{"braces in the filter", func(c *Config) { c.PrometheusLabelFilter = `{cluster="a"}` },
			`prometheus-label-filter: must be label matchers without braces, e.g. cluster="prod"`},
		{"percentile", func(c *Config) { c.Percentile = 90 }, "percentile: must be a number in [0.5, 1], got 90"},
		{"percentile below the median", func(c *Config) { c.Percentile = 0.3 }, "percentile: must be a number in [0.5, 1], got 0.3"},
		{"half-life too long", func(c *Config) { c.HalfLife = 8760 * time.Hour }, "half-life: must be between 1h and 720h, got 8760h"},
		{"threshold", func(c *Config) { c.ChangeThreshold = 1 }, "change-threshold: must be in [0, 1), got 1"},
		{"query timeout", func(c *Config) { c.PrometheusTimeout = 0 }, "prometheus-timeout: must be positive, got 0s"},
		{"peak interval", func(c *Config) { c.MemoryPeakInterval = 0 }, "memory-peak-interval: must be a whole number of minutes between 1m and 24h, got 0s"},
		{"peak interval not whole minutes", func(c *Config) { c.MemoryPeakInterval = 90 * time.Second },
			"memory-peak-interval: must be a whole number of minutes between 1m and 24h, got 1m30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			var msgs []string
			for _, err := range c.completePrometheus() {
				msgs = append(msgs, err.Error())
			}
			if got := strings.Join(msgs, "; "); got != tt.want {
				t.Errorf("completePrometheus() = %q, want %q", got, tt.want)
			}
			if strings.Contains(strings.Join(msgs, ""), "s3cr3t") {
				t.Errorf("an error quotes the credential: %v", msgs)
			}
		})
	}
}

// TestPrometheusQueryTimeout queries a Prometheus that stalls, before its
// headers or in the middle of its body: the query timeout ends each.
func TestPrometheusQueryTimeout(t *testing.T) {
	tests := []struct {
		name string
		// headers sends the status and the start of the body first.
		headers bool
	}{
		{name: "no answer at all", headers: false},
		{name: "headers and half a body", headers: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm() // the query; then the server notices a client that leaves
				if tt.headers {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
					w.(http.Flusher).Flush()
				}
				select { // until the client gives up, or the test ends
				case <-r.Context().Done():
				case <-done:
				}
			}))
			defer srv.Close()
			defer close(done)
			cfg := &Config{PrometheusURL: srv.URL, PrometheusTimeout: 500 * time.Millisecond, PrometheusOwnership: false,
				Window: 24 * time.Hour, PrometheusStep: time.Minute, PrometheusRateWindow: 5 * time.Minute, MemoryPeakInterval: time.Hour}
			api, err := newPrometheusAPI(cfg)
			if err != nil {
				t.Fatal(err)
			}
			reader := usage.NewReader(api, usageOptions(cfg, slog.New(slog.DiscardHandler))...)
			start := time.Now()
			_, err = reader.Read(context.Background(), "shop", []usage.WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("Read() took %s with a 500ms query timeout", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 500ms") {
				t.Errorf("Read() error = %v, want no answer within the query timeout", err)
			}
			if code := exitCodeFor(err); code != exitUnreachable {
				t.Errorf("exitCodeFor(%v) = %d, want %d", err, code, exitUnreachable)
			}
		})
	}
}
