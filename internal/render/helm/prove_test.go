package helm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// testHook is a test hook as podinfo's chart writes them: a Pod with a
// random name, run by helm test only, sized by the chart's resources key
// like the app.
const testHook = `apiVersion: v1
kind: Pod
metadata:
  name: {{ include "random.fullname" . }}-test-{{ randAlphaNum 5 | lower }}
  labels:
    {{- include "random.labels" . | nindent 4 }}
  annotations:
    "helm.sh/hook": test
    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded
spec:
  containers:
    - name: wget
      image: {{ .Values.tests.image }}
      command: ["wget"]
      args: ["{{ include "random.fullname" . }}:{{ .Values.service.port }}"]
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
  restartPolicy: Never
`

// hookedChart is the random chart, whose Secret holds a password
// generated at each render, with a test hook of a random name, another
// of a fixed name, as Helm 2 named test hooks, and a pre-install Job,
// all reading their image from the values.
func hookedChart() map[string]string {
	files := helmtest.Random()
	files["values.yaml"] += "tests:\n  image: busybox:1.36\nmigrate:\n  image: registry.example.com/shop/migrate:1\n"
	files["templates/tests/test-connection.yaml"] = testHook
	files["templates/tests/test-version.yaml"] = `apiVersion: v1
kind: Pod
metadata:
  name: {{ include "random.fullname" . }}-test-version
  annotations:
    "helm.sh/hook": test-success
spec:
  restartPolicy: Never
  containers:
    - name: version
      image: {{ .Values.tests.image }}
`
	files["templates/migrate-job.yaml"] = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "random.fullname" . }}-migrate
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: {{ .Values.migrate.image }}
`
	return files
}

// rolledChart is the random chart whose Deployment is itself rendered
// differently each time, as charts do to roll their pods on every
// upgrade: the pod template gets annotation, and each pair of replace
// (old, new) is made in the template.
func rolledChart(annotation string, replace ...string) map[string]string {
	files := helmtest.Random()
	d := strings.Replace(files["templates/deployment.yaml"], "    metadata:\n", "    metadata:\n      annotations:\n        "+annotation+"\n", 1)
	for i := 0; i+1 < len(replace); i += 2 {
		d = strings.Replace(d, replace[i], replace[i+1], 1)
	}
	files["templates/deployment.yaml"] = d
	return files
}

func TestProve(t *testing.T) {
	q := resource.MustParse
	web := Container{Kind: "Deployment", Name: "shop-components-web", Container: "web"}
	sidecar := Container{Kind: "Deployment", Namespace: "ns", Name: "shop-components-web", Container: "log-shipper"}
	set := func(path string, v any) map[string]any {
		keys := strings.Split(path, ".")
		m := map[string]any{keys[len(keys)-1]: v}
		for i := len(keys) - 2; i >= 0; i-- {
			m = map[string]any{keys[i]: m}
		}
		return m
	}
	tests := []struct {
		name   string
		chart  map[string]string
		values map[string]any
		after  map[string]any
		want   []Expect
		// fails are what the error must say; none for a proof that holds.
		fails []string
		// not are what the error must not say.
		not []string
	}{
		{
			name:  "the requests and a new limit of one container",
			chart: helmtest.Components(),
			after: Merge(set("web.resources.requests.cpu", "300m"), set("web.resources.limits.cpu", "1")),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}, Limits: corev1.ResourceList{"cpu": q("1")}}},
		},
		{
			name:  "a quantity written another way is the same quantity",
			chart: helmtest.Components(),
			after: set("web.resources.requests.memory", "0.25Gi"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"memory": q("256Mi")}}},
		},
		{
			name:   "two containers of one object, on values that already set them",
			chart:  helmtest.Components(),
			values: set("web.resources.requests.cpu", "400m"),
			after: Merge(set("web.resources.requests.cpu", "350m"), map[string]any{"sidecars": []any{map[string]any{
				"name": "log-shipper", "image": "registry.example.com/tools/log-shipper:1.4.2",
				"resources": map[string]any{"requests": map[string]any{"cpu": "20m", "memory": "64Mi"}},
			}}}),
			want: []Expect{
				{Container: web, Requests: corev1.ResourceList{"cpu": q("350m")}},
				// An expected value may be the one it had.
				{Container: sidecar, Requests: corev1.ResourceList{"cpu": q("20m"), "memory": q("64Mi")}},
			},
		},
		{
			name:  "a list replaced without a value it held",
			chart: helmtest.Components(),
			after: map[string]any{"sidecars": []any{map[string]any{
				"name": "log-shipper", "image": "registry.example.com/tools/log-shipper:1.4.2",
				"resources": map[string]any{"requests": map[string]any{"cpu": "20m"}},
			}}},
			want:  []Expect{{Container: sidecar, Requests: corev1.ResourceList{"cpu": q("20m")}}},
			fails: []string{`Deployment ns/shop-components-web: spec.template.spec.containers[1].resources.requests.memory: "64Mi" → absent`},
		},
		{
			name:  "a value the change leaves out",
			chart: helmtest.Resources(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m"), "memory": q("128Mi")}}},
			fails: []string{"Deployment ns/shop-resources:app requests.memory is not set after the change, want 128Mi"},
		},
		{
			name:  "a change that also moves another container",
			chart: helmtest.Components(),
			after: Merge(set("web.resources.requests.cpu", "300m"), set("worker.resources.requests.cpu", "600m")),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Deployment ns/shop-components-worker: spec.template.spec.containers[0].resources.requests.cpu: "500m" → "600m"`},
			not:   []string{"shop-components-web:"},
		},
		{
			name:  "a change that also moves a label",
			chart: helmtest.Resources(),
			after: Merge(set("resources.requests.cpu", "300m"), set("podLabels.team", "checkout")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Deployment ns/shop-resources: spec.template.metadata.labels.team: absent → "checkout"`},
		},
		{
			name:  "a change that does not reach the target",
			chart: helmtest.Components(),
			after: set("web.resource.requests.cpu", "300m"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"Deployment ns/shop-components-web:web requests.cpu is 250m after the change, want 300m"},
		},
		{
			name:  "a change that sets another field than asked",
			chart: helmtest.Components(),
			after: set("web.resources.limits.cpu", "300m"),
			want:  []Expect{{Container: web, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{
				"requests.cpu is 250m after the change, want 300m",
				`spec.template.spec.containers[0].resources.limits.cpu: absent → "300m"`,
			},
		},
		{
			name:  "a change that renames the objects",
			chart: helmtest.Resources(),
			after: map[string]any{"fullnameOverride": "renamed"},
			want:  nil,
			fails: []string{"Deployment ns/shop-resources is no longer rendered", "Deployment ns/renamed is rendered only after the change"},
		},
		{
			name:  "an expected container the release does not render",
			chart: helmtest.Resources(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-resources", Container: "nginx"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"Deployment ns/shop-resources:nginx is not rendered after the change"},
		},
		{
			name:  "values the schema refuses",
			chart: helmtest.Strict(),
			after: set("resources.requests.gpu", "1"),
			fails: []string{"rendering after the change", "schema"},
		},
		{
			// The Secret's password differs from render to render; nothing
			// else does: it is left out.
			name:  "a chart that generates a password",
			chart: helmtest.Random(),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
		},
		{
			// The test hooks and the random Secret are left out, and with
			// them the hooks' image, which the change also moves.
			name:  "a test hook of a random name and a generated password",
			chart: hookedChart(),
			after: Merge(set("resources.requests.cpu", "300m"), set("tests.image", "busybox:1.37")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
		},
		{
			name:  "a test hook and a generated password, and a change that also moves a label",
			chart: hookedChart(),
			after: Merge(set("resources.requests.cpu", "300m"), set("podLabels.team", "checkout")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{
				`Deployment ns/shop-random: spec.template.metadata.labels.team: absent → "checkout"`,
				"(left out as the chart renders them differently each time: fields of Secret ns/shop-random)",
			},
			not: []string{"data.password", "test", "is among what it renders"},
		},
		{
			// Hooks other than tests are installed with the release: they
			// are compared.
			name:  "a test hook and a generated password, and a change that also moves a pre-install hook",
			chart: hookedChart(),
			after: Merge(set("resources.requests.cpu", "300m"), set("migrate.image", "registry.example.com/shop/migrate:2")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Job ns/shop-random-migrate: spec.template.spec.containers[0].image: "registry.example.com/shop/migrate:1" → "registry.example.com/shop/migrate:2"`},
		},
		{
			name:  "a test hook and a generated password, and a change that misses the target",
			chart: hookedChart(),
			after: set("resource.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"Deployment ns/shop-random:app requests.cpu is not set after the change, want 300m"},
		},
		{
			// A pod annotation random at each render, as charts roll
			// their pods, or a checksum of a generated Secret: it is not
			// compared, and the rest of the Deployment is.
			name:  "a target with an annotation the chart renders differently each time",
			chart: rolledChart(`rollme: {{ randAlphaNum 8 | quote }}`),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
		},
		{
			name:  "a target with an annotation the chart renders differently each time, and a change that also moves a label",
			chart: rolledChart(`rollme: {{ randAlphaNum 8 | quote }}`),
			after: Merge(set("resources.requests.cpu", "300m"), set("podLabels.team", "checkout")),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{`Deployment ns/shop-random: spec.template.metadata.labels.team: absent → "checkout"`, "fields of Deployment ns/shop-random"},
			not:   []string{"rollme"},
		},
		{
			// Two renders draw the same limit one time in nearly a million.
			name: "a target whose resources the chart renders differently each time",
			chart: rolledChart(`sized: "yes"`, "{{- toYaml .Values.resources | nindent 12 }}",
				`{{- toYaml (merge (deepCopy .Values.resources) (dict "limits" (dict "memory" (printf "%dMi" (randInt 100 1000000))))) | nindent 12 }}`),
			after: set("resources.requests.cpu", "300m"),
			want:  []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": q("300m")}}},
			fails: []string{"renders spec.template.spec.containers[0].resources.limits.memory of Deployment ns/shop-random differently each time with the same values, so no change of it can be told apart"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Release{Name: "shop", Namespace: "ns", Chart: testChart(t, tt.chart), Values: tt.values}
			err := testEngine().Prove(context.Background(), r, Merge(tt.values, tt.after), tt.want)
			if len(tt.fails) == 0 {
				if err != nil {
					t.Fatalf("Prove: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrProofFailed) {
				t.Fatalf("Prove = %v, want ErrProofFailed", err)
			}
			for _, s := range tt.fails {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q says %q", err, s)
				}
			}
		})
	}
}

func TestProveBoundsItsReport(t *testing.T) {
	r := Release{Name: "shop", Namespace: "ns", Chart: testChart(t, helmtest.Resources())}
	labels := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		labels[k] = "x"
	}
	err := testEngine().Prove(context.Background(), r, map[string]any{"podLabels": labels}, nil)
	if !errors.Is(err, ErrProofFailed) {
		t.Fatalf("Prove = %v, want ErrProofFailed", err)
	}
	if !strings.Contains(err.Error(), "and 3 more") || strings.Contains(err.Error(), "labels.f") {
		t.Errorf("error %q does not stop after %d differences", err, proofLines)
	}
}

func TestProveReleaseThatDoesNotRender(t *testing.T) {
	r := Release{Name: "api", Namespace: "ns", Chart: testChart(t, helmtest.Profiles()), Values: map[string]any{"profile": "huge"}}
	err := testEngine().Prove(context.Background(), r, map[string]any{"profile": "small"}, nil)
	if !errors.Is(err, ErrRender) || errors.Is(err, ErrProofFailed) {
		t.Fatalf("Prove of a release that does not render = %v, want ErrRender alone", err)
	}
}

// TestCompare compares outputs its caller made, as a post-renderer does:
// again is asked for another output of the release's own values only
// when the two differ, and what it shows the chart renders differently
// each time is left out.
func TestCompare(t *testing.T) {
	r := Release{Name: "shop", Namespace: "ns", Chart: testChart(t, hookedChart())}
	output := func(values map[string]any) []Object {
		t.Helper()
		changed := r
		changed.Values = values
		objects, err := testEngine().Render(context.Background(), changed)
		if err != nil {
			t.Fatal(err)
		}
		return objects
	}
	// untemplated drops the templates of objects, as a post-renderer that
	// makes objects of its own would have them.
	untemplated := func(objects []Object) []Object {
		out := slices.Clone(objects)
		for i := range out {
			out[i].Template = ""
		}
		return out
	}
	before := output(nil)
	after := output(map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "300m"}}})
	want := []Expect{{Container: Container{Kind: "Deployment", Name: "shop-random", Container: "app"}, Requests: corev1.ResourceList{"cpu": resource.MustParse("300m")}}}
	errPostRender := errors.New("post-renderer failed")
	tests := []struct {
		name          string
		before, after []Object
		want          []Expect
		again         func() ([]Object, error)
		// calls is how often again must be called.
		calls int
		// fails are what the error must say; none for a proof that holds.
		fails []string
		is    error
	}{
		{
			name: "the same outputs", before: before, after: before,
			again: func() ([]Object, error) { return output(nil), nil },
		},
		{
			name: "the generated password left out", before: before, after: after, want: want,
			again: func() ([]Object, error) { return output(nil), nil }, calls: 1,
		},
		{
			name: "objects a post-renderer made", before: untemplated(before), after: untemplated(after), want: want,
			again: func() ([]Object, error) { return untemplated(output(nil)), nil }, calls: 1,
		},
		{
			name: "without again, every difference counts", before: before, after: after, want: want,
			fails: []string{"Secret ns/shop-random: data.password: "}, is: ErrProofFailed,
		},
		{
			name: "again fails", before: before, after: after, want: want,
			again: func() ([]Object, error) { return nil, errPostRender }, calls: 1,
			fails: []string{"rendering the release again with the same values: post-renderer failed"}, is: errPostRender,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var again func() ([]Object, error)
			if tt.again != nil {
				again = func() ([]Object, error) { calls++; return tt.again() }
			}
			err := Compare(r, tt.before, tt.after, tt.want, again)
			if calls != tt.calls {
				t.Errorf("again was called %d times, want %d", calls, tt.calls)
			}
			if tt.is == nil {
				if err != nil {
					t.Fatalf("Compare: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("Compare = %v, want %v", err, tt.is)
			}
			for _, s := range tt.fails {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
