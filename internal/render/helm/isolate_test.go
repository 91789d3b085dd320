package helm

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// renderCommand makes the test binary a render process, as the hidden
// command makes the job's binary one.
const renderCommand = "render-chart"

// isolateEnv, set to 1, runs every test's renders in render processes.
const isolateEnv = "RECOMMEND_JOB_TEST_ISOLATE"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == renderCommand {
		os.Exit(ServeRender(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testEngine is the Engine of the package's tests: Helm's defaults in
// this process, or, when isolateEnv is 1, every render in a render
// process of the test binary.
func testEngine() Engine {
	if os.Getenv(isolateEnv) == "1" {
		return isolatedEngine(DefaultLimits())
	}
	return Engine{}
}

// isolatedEngine renders in render processes of the test binary with
// limits.
func isolatedEngine(limits Limits) Engine {
	return Engine{Isolation: Isolation{Command: os.Args[0], Args: []string{renderCommand}, Limits: limits}}
}

// TestIsolatedRender renders in a render process what renders in this
// one: the same objects, and the same error of a chart.
func TestIsolatedRender(t *testing.T) {
	files := helmtest.Resources()
	files["templates/fail.yaml"] = `{{ if .Values.fail }}{{ fail "refused: fail is set" }}{{ end }}`
	r := Release{Name: "shop", Namespace: "prod", Chart: testChart(t, files),
		Values: map[string]any{"podLabels": map[string]any{"team": "checkout"}, "gone": nil, "replicas": int64(7000000001)}}
	want, err := Engine{}.Render(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	isolated := isolatedEngine(DefaultLimits())
	got, err := isolated.Render(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); len(got) == 0 || diff != "" {
		t.Errorf("isolated render differs from the render in this process (-want +got):\n%s", diff)
	}
	r.Values = map[string]any{"fail": true}
	if _, err := isolated.Render(context.Background(), r); !errors.Is(err, ErrRender) || !strings.Contains(err.Error(), "refused: fail is set") {
		t.Errorf("isolated render of a failing chart = %v, want ErrRender with the chart's message", err)
	}
}

// TestIsolatedLimits renders charts that reach each limit of their
// render process: the release's error names the limit, the chart is not
// rendered again, and another chart renders as before.
func TestIsolatedLimits(t *testing.T) {
	limits := Limits{Memory: 192 << 20, CPU: 2 * time.Second, Output: 1 << 20}
	tests := []struct {
		name     string
		template string
		time     time.Duration
		want     string
	}{
		// Forty strings of 20 MB, all kept: no collection makes room.
		{name: "memory", template: `{{ $s := repeat 20000000 "x" }}{{ $l := list }}{{ range until 40 }}{{ $l = append $l (printf "%s%d" $s .) }}{{ end }}x: {{ len $l }}`,
			want: "render limit reached: its memory, 192Mi"},
		{name: "output", template: `x: {{ repeat 2000000 "x" }}`, want: "render limit reached: its output, above 1Mi"},
		{name: "processor time", template: `{{- define "spin" -}}{{- if lt (len .) 40 -}}{{ include "spin" (append . 1) }}{{ include "spin" (append . 2) }}{{- end -}}{{- end -}}x: {{ include "spin" (list) | len }}`,
			want: "render limit reached: its processor time, 2s"},
		{name: "time", template: `{{- define "spin" -}}{{- if lt (len .) 40 -}}{{ include "spin" (append . 1) }}{{ include "spin" (append . 2) }}{{- end -}}{{- end -}}x: {{ include "spin" (list) | len }}`,
			time: time.Second, want: "render limit reached: a render took longer than the limit (1s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := isolatedEngine(limits)
			e.MaxTime = tt.time
			files := helmtest.Resources()
			files["templates/bomb.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  " + tt.template + "\n"
			bomb := Release{Name: "web", Namespace: "shop", Chart: testChart(t, files)}
			start := time.Now()
			_, err := e.Render(context.Background(), bomb)
			if !errors.Is(err, ErrRender) || !errors.Is(err, errLimit) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "release shop/web, chart") {
				t.Fatalf("Render = %v, want ErrRender naming the release and %q", err, tt.want)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("Render took %s", took)
			}
			start = time.Now()
			if _, again := e.Render(context.Background(), bomb); !errors.Is(again, errLimit) || time.Since(start) > time.Second {
				t.Errorf("Render of the same chart again = %v after %s, want the limit at once", again, time.Since(start))
			}
			if _, err := e.Render(context.Background(), Release{Name: "web", Namespace: "shop", Chart: testChart(t, helmtest.Resources())}); err != nil {
				t.Errorf("Render of another chart: %v", err)
			}
		})
	}
}
