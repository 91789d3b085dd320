package helm

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/helm/helmtest"
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

func TestRenderSchemaRefs(t *testing.T) {
	unreachable := refusedURL(t)
	tests := []struct {
		name          string
		schema        string
		values        map[string]any
		wantErr       string
		wantUnchecked string
	}{{
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
			files := helmtest.Resources()
			files["values.schema.json"] = tt.schema
			ch := testChart(t, files)
			_, err := Render(context.Background(), Release{Name: "shop", Namespace: "prod", Chart: ch, Values: tt.values})
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
		})
	}
}
