package helm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// refusedURL is a loopback address where nothing listens: fetching it
// fails at once, as in a cluster without egress.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/common.json"
}

// TestRenderSchemaRefs checks how a chart's values schema is checked:
// its $refs resolve only inside the chart, so a $ref to a server or to a
// file of the job's machine is neither fetched nor read, and the schema
// is reported unchecked without a word of that file.
func TestRenderSchemaRefs(t *testing.T) {
	unreachable := refusedURL(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type": "object"}`))
	}))
	t.Cleanup(srv.Close)
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("ghp_secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	resources := map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "4m"}}}
	tests := []struct {
		name          string
		schema        string
		files         map[string]string
		values        map[string]any
		wantErr       string
		wantUnchecked string
	}{{
		name:          "a ref to a server is not fetched",
		schema:        `{"type": "object", "properties": {"resources": {"$ref": "` + srv.URL + `/common.json"}}}`,
		values:        resources,
		wantUnchecked: srv.URL + "/common.json leads out of the chart: not fetched",
	}, {
		name:          "a ref to a file of the machine is not read",
		schema:        `{"type": "object", "properties": {"resources": {"$ref": "file://` + secret + `"}}}`,
		values:        resources,
		wantUnchecked: "file://" + secret + " is not a file of the chart: not read",
	}, {
		name:    "a ref to a file of the chart is checked",
		schema:  `{"type": "object", "properties": {"podLabels": {"$ref": "schemas/labels.json"}}}`,
		files:   map[string]string{"schemas/labels.json": `{"type": "string"}`},
		values:  map[string]any{"podLabels": map[string]any{"team": "checkout"}},
		wantErr: "values don't meet the specifications of the schema",
	}, {
		name:   "a schema of a draft's meta-schema is checked without fetching it",
		schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"podLabels": {"type": "object"}}}`,
		values: map[string]any{"podLabels": map[string]any{"team": "checkout"}},
	}, {
		name:          "unfetchable ref is not checked",
		schema:        `{"type": "object", "properties": {"resources": {"$ref": "` + unreachable + `"}}}`,
		values:        map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "4m"}}},
		wantUnchecked: unreachable,
	}, {
		name:    "values that break the schema still fail",
		schema:  `{"type": "object", "properties": {"podLabels": {"type": "string"}}}`,
		values:  map[string]any{"podLabels": map[string]any{"team": "checkout"}},
		wantErr: "values don't meet the specifications of the schema",
	}, {
		name:   "a schema without refs is checked",
		schema: `{"type": "object", "properties": {"podLabels": {"type": "object"}}}`,
		values: map[string]any{"podLabels": map[string]any{"team": "checkout"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			files := helmtest.Resources()
			files["values.schema.json"] = tt.schema
			for name, data := range tt.files {
				files[name] = data
			}
			ch := testChart(t, files)
			_, err := testEngine().Render(context.Background(), Release{Name: "shop", Namespace: "prod", Chart: ch, Values: tt.values})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Render: %v", err)
			case tt.wantErr != "" && (!errors.Is(err, ErrRender) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Render = %v, want %q", err, tt.wantErr)
			}
			got := strings.Join(ch.SchemaUnchecked(), "\n")
			if tt.wantUnchecked == "" && got != "" || !strings.Contains(got, tt.wantUnchecked) {
				t.Errorf("SchemaUnchecked = %q, want it to name %q", got, tt.wantUnchecked)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the server was asked %d times", n)
			}
			if strings.Contains(got, "invalid character") || strings.Contains(got, "ghp_") {
				t.Errorf("SchemaUnchecked = %q tells of the machine's file", got)
			}
		})
	}
}
