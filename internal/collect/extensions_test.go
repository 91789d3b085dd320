package collect

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestParseExtensions(t *testing.T) {
	tests := []struct {
		name    string
		raw     string // "" means no extensions at all
		want    Extensions
		wantMsg string
	}{
		{name: "none"},
		{name: "empty object", raw: `{}`},
		{name: "all known keys", raw: `{"percentile": 0.95, "halfLife": "12h", "window": "336h"}`,
			want: Extensions{Percentile: 0.95, HalfLife: 12 * time.Hour, Window: 336 * time.Hour}},
		{name: "per-resource percentiles and peak interval", raw: `{"cpuPercentile": 0.95, "memoryPercentile": 0.99, "memoryPeakInterval": "30m"}`,
			want: Extensions{CPUPercentile: 0.95, MemoryPercentile: 0.99, PeakInterval: 30 * time.Minute}},
		{name: "cpuPercentile above 1", raw: `{"cpuPercentile": 95}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.cpuPercentile must be a number in [0.5, 1], got 95"},
		{name: "memoryPercentile below the median", raw: `{"memoryPercentile": 0.3}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.memoryPercentile must be a number in [0.5, 1], got 0.3"},
		{name: "peak interval too short", raw: `{"memoryPeakInterval": "10s"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.memoryPeakInterval must be a whole number of minutes between 1m and 24h, got 10s"},
		{name: "peak interval not whole minutes", raw: `{"memoryPeakInterval": "90s"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.memoryPeakInterval must be a whole number of minutes between 1m and 24h, got 1m30s"},
		{name: "peak interval longer than a day", raw: `{"memoryPeakInterval": "25h"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.memoryPeakInterval must be a whole number of minutes between 1m and 24h, got 25h"},
		{name: "peak interval bounds", raw: `{"memoryPeakInterval": "24h", "window": "24h", "halfLife": "1h"}`,
			want: Extensions{PeakInterval: 24 * time.Hour, Window: 24 * time.Hour, HalfLife: time.Hour}},
		{name: "upper bounds", raw: `{"memoryPeakInterval": "1m", "window": "720h", "halfLife": "720h", "percentile": 0.5}`,
			want: Extensions{PeakInterval: time.Minute, Window: 720 * time.Hour, HalfLife: 720 * time.Hour, Percentile: 0.5}},
		{name: "window shorter than a day", raw: `{"window": "12h"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.window must be between 24h and 720h (30 days), got 12h"},
		// 2562047h is the longest time.Duration: it once made 14,214 queries.
		{name: "window of the longest duration", raw: `{"window": "2562047h"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.window must be between 24h and 720h (30 days), got 2562047h"},
		{name: "window a minute over 30 days", raw: `{"window": "720h1m"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.window must be between 24h and 720h (30 days), got 720h1m"},
		{name: "halfLife shorter than an hour", raw: `{"halfLife": "30m"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.halfLife must be between 1h and 720h, got 30m"},
		{name: "halfLife longer than 30 days", raw: `{"halfLife": "8760h"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.halfLife must be between 1h and 720h, got 8760h"},
		{name: "percentile 1 is the maximum", raw: `{"percentile": 1}`, want: Extensions{Percentile: 1}},
		{name: "percentile as a string", raw: `{"percentile": "0.5"}`, want: Extensions{Percentile: 0.5}},
		{name: "katalyst's decayHalfLife in hours", raw: `{"decayHalfLife": 48}`, want: Extensions{HalfLife: 48 * time.Hour}},
		{name: "unknown keys are kept aside, sorted", raw: `{"zeta": 1, "alpha": {"x": 1}}`, want: Extensions{Unknown: []string{"alpha", "zeta"}}},
		{name: "percentile 0", raw: `{"percentile": 0}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.percentile must be a number in [0.5, 1], got 0"},
		{name: "percentile above 1", raw: `{"percentile": 90}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.percentile must be a number in [0.5, 1], got 90"},
		{name: "percentile NaN", raw: `{"percentile": "NaN"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.percentile must be a number in [0.5, 1], got NaN"},
		{name: "percentile not a number", raw: `{"percentile": "p90"}`,
			wantMsg: `spec.resourcePolicy.algorithmPolicy.extensions.percentile must be a number in [0.5, 1], got "p90"`},
		{name: "halfLife without unit", raw: `{"halfLife": "24"}`,
			wantMsg: `spec.resourcePolicy.algorithmPolicy.extensions.halfLife must be a positive duration such as "24h", got "24"`},
		{name: "window negative", raw: `{"window": "-1h"}`,
			wantMsg: `spec.resourcePolicy.algorithmPolicy.extensions.window must be a positive duration such as "24h", got "-1h"`},
		{name: "window a number", raw: `{"window": 7}`,
			wantMsg: `spec.resourcePolicy.algorithmPolicy.extensions.window must be a duration such as "24h", got 7`},
		{name: "decayHalfLife fractional", raw: `{"decayHalfLife": 1.5}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.decayHalfLife must be a whole number of hours from 1 to 720, got 1.5"},
		{name: "decayHalfLife over 30 days", raw: `{"decayHalfLife": 721}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.decayHalfLife must be a whole number of hours from 1 to 720, got 721"},
		{name: "decayHalfLife of 30 days", raw: `{"decayHalfLife": 720}`, want: Extensions{HalfLife: 720 * time.Hour}},
		{name: "both half-lives", raw: `{"decayHalfLife": 24, "halfLife": "24h"}`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions.decayHalfLife must not be set together with halfLife"},
		{name: "not an object", raw: `[1]`,
			wantMsg: "spec.resourcePolicy.algorithmPolicy.extensions must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw *runtime.RawExtension
			if tt.raw != "" {
				raw = &runtime.RawExtension{Raw: []byte(tt.raw)}
			}
			got, err := ParseExtensions(raw)
			if tt.wantMsg != "" {
				if err == nil || err.Code != CodeExtensionsInvalid || err.Message != tt.wantMsg {
					t.Fatalf("ParseExtensions(%s) error = %+v, want %s %q", tt.raw, err, CodeExtensionsInvalid, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseExtensions(%s) error = %v", tt.raw, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseExtensions(%s) (-want +got):\n%s", tt.raw, d)
			}
		})
	}
}
