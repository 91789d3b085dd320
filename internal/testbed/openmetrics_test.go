package testbed

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteOpenMetrics(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name   string
		series []Series
		want   string
	}{
		{
			name: "no series",
			want: "# EOF\n",
		},
		{
			name: "gauge with samples sorted by time",
			series: []Series{{
				Name:    "mem_bytes",
				Labels:  map[string]string{"pod": "a", "container": "c"},
				Samples: []Sample{{t0.Add(time.Minute), 2}, {t0, 1}},
			}},
			want: `# TYPE mem_bytes gauge
mem_bytes{container="c",pod="a"} 1 1700000000
mem_bytes{container="c",pod="a"} 2 1700000060
# EOF
`,
		},
		{
			name: "counter family is the name without _total",
			series: []Series{{
				Name:    "cpu_seconds_total",
				Samples: []Sample{{t0, 1.5}},
			}},
			want: `# TYPE cpu_seconds counter
cpu_seconds_total 1.5 1700000000
# EOF
`,
		},
		{
			name: "families grouped and same series merged",
			series: []Series{
				{Name: "a", Labels: map[string]string{"x": "1"}, Samples: []Sample{{t0, 1}}},
				{Name: "b", Samples: []Sample{{t0, 3}}},
				{Name: "a", Labels: map[string]string{"x": "2"}, Samples: []Sample{{t0, 2}}},
				{Name: "a", Labels: map[string]string{"x": "1"}, Samples: []Sample{{t0.Add(-time.Second), 0}}},
			},
			want: `# TYPE a gauge
a{x="1"} 0 1699999999
a{x="1"} 1 1700000000
a{x="2"} 2 1700000000
# TYPE b gauge
b 3 1700000000
# EOF
`,
		},
		{
			name: "escaping, special values and milliseconds",
			series: []Series{{
				Name:   "m",
				Labels: map[string]string{"l": "a\"b\\c\nd"},
				Samples: []Sample{
					{t0.Add(5 * time.Millisecond), math.NaN()},
					{t0.Add(1500 * time.Millisecond), math.Inf(1)},
					{t0.Add(2*time.Second + 999*time.Millisecond + 999*time.Microsecond), math.Inf(-1)},
					{t0.Add(3 * time.Second), 1e6},
				},
			}},
			want: `# TYPE m gauge
m{l="a\"b\\c\nd"} NaN 1700000000.005
m{l="a\"b\\c\nd"} +Inf 1700000001.500
m{l="a\"b\\c\nd"} -Inf 1700000002.999
m{l="a\"b\\c\nd"} 1e+06 1700000003
# EOF
`,
		},
		{
			name:   "series without samples left out",
			series: []Series{{Name: "empty"}},
			want:   "# EOF\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteOpenMetrics(&buf, tt.series); err != nil {
				t.Fatalf("WriteOpenMetrics: %v", err)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("WriteOpenMetrics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteOpenMetricsErrors(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	one := []Sample{{t0, 1}}
	tests := []struct {
		name    string
		series  []Series
		wantErr string
	}{
		{"invalid metric name", []Series{{Name: "a-b", Samples: one}}, `invalid metric name "a-b"`},
		{"empty metric name", []Series{{Name: "", Samples: one}}, `invalid metric name ""`},
		{"invalid label name", []Series{{Name: "a", Labels: map[string]string{"1x": "v"}, Samples: one}}, `invalid label name "1x"`},
		{"reserved label name", []Series{{Name: "a", Labels: map[string]string{"__name__": "v"}, Samples: one}}, `invalid label name "__name__"`},
		{"invalid UTF-8", []Series{{Name: "a", Labels: map[string]string{"l": "\xff"}, Samples: one}}, "not valid UTF-8"},
		{"zero time", []Series{{Name: "a", Samples: []Sample{{Value: 1}}}}, "sample without time"},
		{"duplicate time", []Series{{Name: "a", Samples: []Sample{{t0, 1}, {t0.Add(time.Microsecond), 2}}}}, "two samples at"},
		{"family with two types", []Series{{Name: "x", Samples: one}, {Name: "x_total", Samples: one}}, "both a gauge and a counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteOpenMetrics(&buf, tt.series)
			if err == nil {
				t.Fatalf("WriteOpenMetrics succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("WriteOpenMetrics error = %q, want it to contain %q", err, tt.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteOpenMetrics wrote %q despite the error", buf.String())
			}
		})
	}
}

func TestFormatTimestamp(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0"},
		{1_700_000_000_000, "1700000000"},
		{1_700_000_000_007, "1700000000.007"},
		{-1500, "-1.500"},
		{-2000, "-2"},
	}
	for _, tt := range tests {
		if got := formatTimestamp(time.UnixMilli(tt.ms)); got != tt.want {
			t.Errorf("formatTimestamp(%d ms) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}
