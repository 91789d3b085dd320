package usage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReaderRefusesPartialAnswers checks that an answer with warnings makes
// the namespace's history unavailable, whatever data it holds, and that
// infos are only logged.
func TestReaderRefusesPartialAnswers(t *testing.T) {
	const series = `{"metric":{"pod":"web-5d9c7b6f4-xkqzt","container":"app"},"values":[[1700000000,"0.5"]]}`
	tests := []struct {
		name        string
		extra       string // members added to the answer
		wantErr     string // empty: no error
		wantPartial bool
		wantLog     string
	}{
		{name: "a Thanos warning", extra: `,"warnings":["partial response: store 10.0.0.1:10901 unavailable, results may be incomplete"]`,
			wantErr: "partial response: store 10.0.0.1:10901 unavailable, results may be incomplete; querying cpu in namespace shop", wantPartial: true},
		{name: "several warnings, one with a newline", extra: `,"warnings":["ingester\ndown","another"]`,
			wantErr: "partial response: ingester down (and 1 more warnings); querying cpu in namespace shop", wantPartial: true},
		{name: "an info among the warnings, as Prometheus 2.50 sent it", extra: `,"warnings":["PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: \"x\""]`,
			wantLog: "metric might not be a counter"},
		{name: "infos only", extra: `,"infos":["PromQL info: metric might not be a counter"]`,
			wantLog: "metric might not be a counter"},
		{name: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := r.ParseForm(); err != nil || r.Form.Get("partial_response") != "false" {
					t.Errorf("request without partial_response=false: %v", r.Form)
				}
				io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[`+series+`]}`+tt.extra+`}`)
			}))
			defer srv.Close()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			c, err := NewClient(srv.URL, nil, WithInfoLog(log))
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(c, WithOwnership(false), WithStartupWindow(0), WithLogger(log))
			got, err := r.Read(context.Background(), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Read() error = %v, want none", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Read() error = %v, want %q", err, tt.wantErr)
			case errors.Is(err, ErrPartial) != tt.wantPartial:
				t.Errorf("Read() error %v is ErrPartial: %v, want %v", err, errors.Is(err, ErrPartial), tt.wantPartial)
			}
			if tt.wantErr != "" && got != nil {
				t.Errorf("Read() = %v with a partial answer, want no history", got)
			}
			if tt.wantErr == "" && len(got) != 1 {
				t.Errorf("Read() = %v, want web's history", got)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs.String())
			}
		})
	}
}
