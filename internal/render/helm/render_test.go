package helm

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// testChart loads chart files, failing the test if they do not load.
func testChart(t testing.TB, files map[string]string) *Chart {
	t.Helper()
	c, err := NewChart("test", helmtest.Bytes(files))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// objectNames lists objects as kind namespace/name from template.
func objectNames(objects []Object) []string {
	var out []string
	for _, o := range objects {
		out = append(out, o.Kind+" "+o.Namespace+"/"+o.Name+" from "+o.Template)
	}
	return out
}

func TestRender(t *testing.T) {
	files := helmtest.Resources()
	// A document with its own namespace, an empty document, a comment-only
	// one, and a second document in the same file.
	files["templates/extra.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  namespace: shared
data:
  install: {{ .Release.IsInstall | quote }}
---
---
# nothing here
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
`
	r := Release{Name: "shop", Namespace: "prod", Chart: testChart(t, files), Values: map[string]any{"podLabels": map[string]any{"team": "checkout"}}}
	objects, err := testEngine().Render(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Deployment prod/shop-resources from templates/deployment.yaml",
		"ConfigMap shared/shop-settings from templates/extra.yaml",
		"ServiceAccount prod/shop from templates/extra.yaml",
		"Service prod/shop-resources from templates/service.yaml",
	}
	if diff := cmp.Diff(want, objectNames(objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if got := objects[1].Body["data"].(map[string]any)["install"]; got != "true" {
		t.Errorf("Release.IsInstall rendered %v, want true", got)
	}
	labels := objects[0].Body["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team"] != "checkout" || labels["app.kubernetes.io/instance"] != "shop" {
		t.Errorf("pod labels = %v, want the release's values and name in them", labels)
	}
	if objects[0].APIVersion != "apps/v1" {
		t.Errorf("APIVersion = %q, want apps/v1", objects[0].APIVersion)
	}
}

func TestRenderSubchartAlias(t *testing.T) {
	c := testChart(t, helmtest.Umbrella())
	r := Release{Name: "jobs", Namespace: "batch", Chart: c}
	objects, err := testEngine().Render(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Deployment batch/jobs-batch from charts/batch/templates/deployment.yaml",
		"Service batch/jobs-batch from charts/batch/templates/service.yaml",
	}
	if diff := cmp.Diff(want, objectNames(objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	cpu, _ := resourceValue(podContainers(objects)[0].body, RequestsCPU)
	if cpu != "300m" {
		t.Errorf("requests.cpu = %v, want the umbrella's batch.cpuRequest 300m", cpu)
	}
	// Processing the alias must not rename the loaded chart's dependency:
	// the next release of the chart needs it as it was loaded.
	if got := c.chart.Metadata.Dependencies[0].Name; got != "scalar" {
		t.Errorf("after Render the chart's dependency is named %q, want scalar", got)
	}
	if got := c.chart.Dependencies()[0].Name(); got != "scalar" {
		t.Errorf("after Render the chart's subchart is named %q, want scalar", got)
	}
}

func TestRenderErrors(t *testing.T) {
	withTemplate := func(base map[string]string, name, text string) map[string]string {
		files := maps.Clone(base)
		files[name] = text
		return files
	}
	tests := []struct {
		name   string
		files  map[string]string
		values map[string]any
		// says are what the error must say, besides the release and chart.
		says []string
	}{
		{
			name:   "fail in a template",
			files:  helmtest.Profiles(),
			values: map[string]any{"updateStrategy": "Sometimes"},
			says:   []string{"chart profiles 3.0.0", "templates/deployment.yaml", `updateStrategy "Sometimes" must be RollingUpdate or Recreate`},
		},
		{
			name:   "required in a template",
			files:  helmtest.Profiles(),
			values: map[string]any{"profile": "huge"},
			says:   []string{"templates/deployment.yaml", `profile "huge" is not one of profiles`},
		},
		{
			name:  "output that is not YAML",
			files: withTemplate(helmtest.Resources(), "templates/broken.yaml", "kind: ConfigMap\nmetadata:\n  name: x\n   bad: indentation\n"),
			says:  []string{"chart resources 1.0.0", "templates/broken.yaml", "document 1"},
		},
		{
			name:  "a template that does not parse",
			files: withTemplate(helmtest.Resources(), "templates/broken.yaml", "{{ if .Values.x }}\n"),
			says:  []string{"templates/broken.yaml"},
		},
		{
			name:   "values the schema forbids",
			files:  helmtest.Strict(),
			values: map[string]any{"resources": map[string]any{"request": map[string]any{"cpu": "1"}}},
			says:   []string{"chart strict 1.0.0", "schema", "request"},
		},
		{
			name: "a declared dependency that is not in charts/",
			files: withTemplate(helmtest.Resources(), "Chart.yaml",
				"apiVersion: v2\nname: resources\nversion: 1.0.0\ndependencies:\n  - name: redis\n    version: 1.x\n    repository: https://charts.example.com\n"),
			says: []string{"redis", "charts/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Release{Name: "web", Namespace: "shop", Chart: testChart(t, tt.files), Values: tt.values}
			_, err := testEngine().Render(context.Background(), r)
			if !errors.Is(err, ErrRender) {
				t.Fatalf("Render error = %v, want ErrRender", err)
			}
			for _, s := range append([]string{"release shop/web"}, tt.says...) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestRenderSchemaAcceptsValidValues(t *testing.T) {
	r := Release{Name: "web", Namespace: "shop", Chart: testChart(t, helmtest.Strict()),
		Values: map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}}}
	if _, err := testEngine().Render(context.Background(), r); err != nil {
		t.Fatalf("Render with values the schema allows: %v", err)
	}
}

func TestRenderContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Release{Name: "web", Namespace: "shop", Chart: testChart(t, helmtest.Resources())}
	_, err := testEngine().Render(ctx, r)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrRender) {
		t.Fatalf("Render with an ended context = %v, want context.Canceled and not ErrRender", err)
	}
}

// TestRenderStalls renders a chart whose template includes itself twice
// per level, seconds of work, with the Engine's MaxTime far below that: the
// render is given up on with an error of the chart, the chart is not
// rendered again, and another chart renders as before.
func TestRenderStalls(t *testing.T) {
	e := testEngine()
	e.MaxTime = 200 * time.Millisecond
	files := helmtest.Resources()
	files["templates/_bomb.tpl"] = `{{- define "bomb" -}}{{- if lt (len .) 19 -}}{{ include "bomb" (append . 1) }}{{ include "bomb" (append . 2) }}{{- else -}}x{{- end -}}{{- end -}}`
	files["templates/bomb.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  x: {{ include \"bomb\" (list) | len | quote }}\n"
	stalling := Release{Name: "web", Namespace: "shop", Chart: testChart(t, files)}
	start := time.Now()
	_, err := e.Render(context.Background(), stalling)
	if !errors.Is(err, ErrRender) || !errors.Is(err, errStalled) || !strings.Contains(err.Error(), "release shop/web, chart") {
		t.Fatalf("Render of the stalling chart = %v, want ErrRender naming the release and the limit", err)
	}
	if took := time.Since(start); took > 5*e.MaxTime {
		t.Errorf("Render took %s, far past the limit of %s", took, e.MaxTime)
	}
	start = time.Now()
	if _, err := e.Render(context.Background(), Release{Name: "api", Namespace: "shop", Chart: stalling.Chart}); !errors.Is(err, errStalled) || time.Since(start) > e.MaxTime/2 {
		t.Errorf("Render of the same chart again = %v after %s, want the stall at once", err, time.Since(start))
	}
	if _, err := e.Render(context.Background(), Release{Name: "web", Namespace: "shop", Chart: testChart(t, helmtest.Resources())}); err != nil {
		t.Errorf("Render of another chart: %v", err)
	}
}
