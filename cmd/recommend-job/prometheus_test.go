package main

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/recommend-job/recommend-job/internal/config"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestPrometheusClientSendsCredentials runs queries against a stand-in
// server that records what arrives.
func TestPrometheusClientSendsCredentials(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/api/v1/series") {
			w.Write([]byte(`{"status":"success","data":[]}`))
			return
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	tokenFile, passwordFile := filepath.Join(dir, "token"), filepath.Join(dir, "password")
	writeFile(t, tokenFile, "first\n")
	writeFile(t, passwordFile, "secret\n")
	client := func(t *testing.T, c *config.Config) *usage.Client {
		t.Helper()
		c.PrometheusURL = srv.URL
		api, err := newPrometheusAPI(c)
		if err != nil {
			t.Fatalf("newPrometheusAPI() error = %v", err)
		}
		return api
	}
	query := func(t *testing.T, api *usage.Client) (http.Header, error) {
		t.Helper()
		now := time.Now()
		got = nil
		_, _, _, err := api.QueryRange(context.Background(), "up", promv1.Range{Start: now, End: now, Step: time.Minute})
		return got, err
	}

	api := client(t, &config.Config{PrometheusBearerTokenFile: tokenFile, PrometheusHeaders: []string{"X-Scope-OrgID=tenant-a", "x-extra=1", "X-Extra=2"}})
	h, err := query(t, api)
	if err != nil || h.Get("Authorization") != "Bearer first" || h.Get("X-Scope-Orgid") != "tenant-a" || !slices.Equal(h.Values("X-Extra"), []string{"1", "2"}) {
		t.Errorf("headers = %v, error %v; want the file's bearer token and the extra headers", h, err)
	}
	// The file is read again on every request of the same client: a
	// rotated token is used.
	writeFile(t, tokenFile, "second")
	if h, _ := query(t, api); h.Get("Authorization") != "Bearer second" {
		t.Errorf("Authorization = %q, want the rotated token", h.Get("Authorization"))
	}
	// A file that went away fails the query, naming the file only.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	if _, err := query(t, api); err == nil || !strings.Contains(err.Error(), tokenFile) || strings.Contains(err.Error(), "second") {
		t.Errorf("query without the token file: error = %v, want one naming the file", err)
	}
	if h, _ := query(t, client(t, &config.Config{PrometheusBearerToken: "inline"})); h.Get("Authorization") != "Bearer inline" {
		t.Errorf("Authorization = %q, want the bearer token", h.Get("Authorization"))
	}
	// The run's reader lists kube-state-metrics' ownership through the
	// same client, with the same credentials.
	var run usage.RangeQuerier = client(t, &config.Config{PrometheusBearerToken: "inline", PrometheusHeaders: []string{"X-Scope-OrgID=tenant-a"}})
	lister, ok := run.(usage.SeriesLister)
	if !ok {
		t.Fatal("the run's Prometheus API lists no series: ownership would be queried over every sample")
	}
	got = nil
	if _, _, _, err := lister.Series(context.Background(), []string{"up"}, time.Now().Add(-time.Hour), time.Now()); err != nil ||
		got.Get("Authorization") != "Bearer inline" || got.Get("X-Scope-Orgid") != "tenant-a" {
		t.Errorf("series listing headers = %v, error %v; want the bearer token and the extra headers", got, err)
	}
	// admin:secret in base64 is YWRtaW46c2VjcmV0.
	if h, _ := query(t, client(t, &config.Config{PrometheusUsername: "admin", PrometheusPassword: "secret"})); h.Get("Authorization") != "Basic YWRtaW46c2VjcmV0" {
		t.Errorf("Authorization = %q, want basic admin:secret", h.Get("Authorization"))
	}
	api = client(t, &config.Config{PrometheusUsername: "admin", PrometheusPasswordFile: passwordFile})
	if h, _ := query(t, api); h.Get("Authorization") != "Basic YWRtaW46c2VjcmV0" {
		t.Errorf("Authorization = %q, want basic admin and the file's password", h.Get("Authorization"))
	}
	writeFile(t, passwordFile, "rotated")
	if h, _ := query(t, api); h.Get("Authorization") != "Basic YWRtaW46cm90YXRlZA==" {
		t.Errorf("Authorization = %q, want basic admin and the rotated password", h.Get("Authorization"))
	}
}

// TestPrometheusClientTLS queries an HTTPS server whose certificate only
// the configured CA vouches for.
func TestPrometheusClientTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile, notPEM := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "not.pem")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	writeFile(t, notPEM, "s3cr3t")
	tests := []struct {
		name       string
		cfg        config.Config
		wantNewErr string // from newPrometheusAPI
		wantErr    string // from the query
	}{
		{name: "the configured CA", cfg: config.Config{PrometheusCAFile: caFile}},
		{name: "verification skipped", cfg: config.Config{PrometheusInsecureSkipVerify: true}},
		{name: "the system's CAs", wantErr: "certificate"},
		{name: "no such CA file", cfg: config.Config{PrometheusCAFile: filepath.Join(dir, "missing.pem")}, wantNewErr: "prometheus-ca-file: "},
		{name: "no certificate in the file", cfg: config.Config{PrometheusCAFile: notPEM}, wantNewErr: "prometheus-ca-file: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.PrometheusURL = srv.URL
			api, err := newPrometheusAPI(&tt.cfg)
			if tt.wantNewErr != "" || err != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantNewErr) || strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("newPrometheusAPI() error = %v, want one containing %q and no file content", err, tt.wantNewErr)
				}
				return
			}
			now := time.Now()
			_, _, _, err = api.QueryRange(context.Background(), "up", promv1.Range{Start: now, End: now, Step: time.Minute})
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("QueryRange() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestPrometheusClientCompression checks that answers travel compressed
// and arrive decompressed.
func TestPrometheusClientCompression(t *testing.T) {
	var acceptEncoding string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acceptEncoding = r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"web-1"},"values":[[1,"0.5"]]}]}}`))
		zw.Close()
	}))
	defer srv.Close()
	api, err := newPrometheusAPI(&config.Config{PrometheusURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _, err := api.QueryRange(context.Background(), "up", promv1.Range{Start: time.Unix(0, 0), End: time.Unix(60, 0), Step: time.Minute})
	if err != nil {
		t.Fatalf("QueryRange() error = %v", err)
	}
	if m, ok := v.(model.Matrix); !ok || len(m) != 1 || m[0].Metric["pod"] != "web-1" {
		t.Errorf("QueryRange() = %v, want the one series", v)
	}
	if acceptEncoding != "gzip" {
		t.Errorf("Accept-Encoding = %q, want gzip", acceptEncoding)
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
			cfg := &config.Config{PrometheusURL: srv.URL, PrometheusTimeout: 500 * time.Millisecond, PrometheusOwnership: false,
				Window: 24 * time.Hour, MemoryPeakInterval: time.Hour,
				Parsed: config.Parsed{PrometheusStep: time.Minute, PrometheusRateWindow: 5 * time.Minute}}
			api, err := newPrometheusAPI(cfg)
			if err != nil {
				t.Fatal(err)
			}
			reader := usage.NewReader(api, cfg.UsageOptions(slog.New(slog.DiscardHandler))...)
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
