package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// keyStrings writes keys as field → path, for comparing.
func keyStrings(k Keys) map[Field]string {
	if k == nil {
		return nil
	}
	out := map[Field]string{}
	for f, p := range k {
		out[f] = p.String()
	}
	return out
}

// rangedChart renders one Deployment per entry of the mapping components,
// in key order, as some charts do: probes written into that mapping add
// Deployments before the release's own, which moves them in the output.
func rangedChart() map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: ranged\nversion: 0.1.0\n",
		"values.yaml": `components:
  api:
    resources: {}
  worker:
    resources: {}
`,
		"templates/deployments.yaml": `{{- range $name, $c := .Values.components }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  template:
    spec:
      containers:
        - name: main
          image: registry.example.com/{{ $name }}:1
          resources:
            {{- toYaml $c.resources | nindent 12 }}
{{- end }}
`,
	}
}

// overridesChart is an umbrella chart as large charts are written: it
// and its subcharts name their objects from nameOverride,
// fullnameOverride and namespaceOverride, which their values do not set,
// through default and trunc, which fail on a mapping; its Deployment and
// its subchart db's StatefulSet are sized by resources mappings, {} in
// the values, and its subchart cache renders a ConfigMap only.
func overridesChart() map[string]string {
	helpers := func(name string) string {
		return strings.ReplaceAll(`{{- define "CHART.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "CHART.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "CHART.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- define "CHART.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
`, "CHART", name)
	}
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: stack\nversion: 1.0.0\n",
		"values.yaml": `image:
  repository: registry.example.com/stack/app
  tag: "1.0"
resources: {}
db:
  image: registry.example.com/stack/db:16
  resources: {}
`,
		"templates/_helpers.tpl": helpers("stack"),
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "stack.fullname" . }}
  namespace: {{ include "stack.namespace" . }}
  labels:
    app.kubernetes.io/name: {{ include "stack.name" . }}
    app.kubernetes.io/part-of: {{ default "stack" .Values.partOfOverride | trunc 63 }}
spec:
  template:
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`,
		"charts/db/Chart.yaml":             "apiVersion: v2\nname: db\nversion: 16.0.0\n",
		"charts/db/values.yaml":            "image: registry.example.com/db:15\nresources: {}\n",
		"charts/db/templates/_helpers.tpl": helpers("db"),
		"charts/db/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "db.fullname" . }}
  namespace: {{ include "db.namespace" . }}
spec:
  serviceName: {{ include "db.fullname" . }}
  template:
    spec:
      containers:
        - name: db
          image: {{ .Values.image }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`,
		"charts/cache/Chart.yaml":             "apiVersion: v2\nname: cache\nversion: 7.0.0\n",
		"charts/cache/templates/_helpers.tpl": helpers("cache"),
		"charts/cache/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "cache.fullname" . }}
  namespace: {{ include "cache.namespace" . }}
data:
  maxmemory: {{ default "64mb" .Values.maxMemory | trunc 16 | quote }}
`,
	}
}

// withTemplates is the resources chart with more templates, and its
// Deployment annotated with annotation, a template line, when it is not
// empty.
func withTemplates(annotation string, templates map[string]string) map[string]string {
	files := helmtest.Resources()
	if annotation != "" {
		files["templates/deployment.yaml"] = strings.Replace(files["templates/deployment.yaml"],
			"  labels:\n", "  annotations:\n    "+annotation+"\n  labels:\n", 1)
	}
	maps.Copy(files, templates)
	return files
}

// extraSecret is a Secret written from the values' extraSecret.data, as
// kube-prometheus-stack writes its own: a probe mapping given to b64enc
// fails the render, and the error quotes no probe.
const extraSecret = `{{- if .Values.extraSecret.data }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-extra
data:
  {{- range $key, $value := .Values.extraSecret.data }}
  {{ $key }}: {{ $value | b64enc | quote }}
  {{- end }}
{{- end }}
`

func TestKeys(t *testing.T) {
	full := func(prefix string) map[Field]string {
		return map[Field]string{
			RequestsCPU: prefix + "requests.cpu", RequestsMemory: prefix + "requests.memory",
			LimitsCPU: prefix + "limits.cpu", LimitsMemory: prefix + "limits.memory",
		}
	}
	type wantFound struct {
		keys map[Field]string
		err  error
		// says are what the error must say.
		says []string
	}
	tests := []struct {
		name   string
		files  map[string]string
		values map[string]any
		want   []Container
		found  []wantFound
		// renders is the exact number of renders, or, with atMost, a bound.
		renders int
		atMost  bool
	}{
		{
			name:    "resources written whole",
			files:   helmtest.Resources(),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			name:  "components, and a sidecar from a list",
			files: helmtest.Components(),
			want: []Container{
				{Kind: "Deployment", Name: "rel-components-web", Container: "web"},
				{Kind: "Deployment", Namespace: "ns", Name: "rel-components-worker", Container: "worker"},
				{Kind: "Deployment", Name: "rel-components-web", Container: "log-shipper"},
			},
			found: []wantFound{
				{keys: full("web.resources.")},
				{keys: full("worker.resources.")},
				{keys: full("sidecars[0].resources.")},
			},
			renders: 2,
		},
		{
			// The template reads .resources of each sidecar it ranges over;
			// the second sidecar has none in the values.
			name:  "a sidecar without resources in the values",
			files: helmtest.Components(),
			values: map[string]any{"sidecars": []any{
				map[string]any{"name": "log-shipper", "image": "registry.example.com/tools/log-shipper:1.4.2", "resources": map[string]any{}},
				map[string]any{"name": "metrics", "image": "registry.example.com/tools/metrics:0.9"},
			}},
			want:    []Container{{Kind: "Deployment", Name: "rel-components-web", Container: "metrics"}},
			found:   []wantFound{{keys: full("sidecars[1].resources.")}},
			renders: 2,
		},
		{
			// The scalar probes also rename the objects (fullnameOverride):
			// the containers are still told apart, with no extra render.
			name:  "scalar keys, one read with default and unset",
			files: helmtest.Scalar(),
			want:  []Container{{Kind: "Deployment", Name: "rel-scalar", Container: "server"}},
			found: []wantFound{{keys: map[Field]string{
				RequestsCPU: "cpuRequest", RequestsMemory: "memoryRequest", LimitsCPU: "cpuLimit", LimitsMemory: "memoryLimit",
			}}},
			renders: 3,
		},
		{
			name:    "hard-coded resources",
			files:   helmtest.Hardcoded(),
			want:    []Container{{Kind: "Deployment", Name: "rel-hardcoded", Container: "app"}},
			found:   []wantFound{{keys: map[Field]string{}, err: ErrNoKey, says: []string{"requests.cpu, requests.memory", "hard-codes"}}},
			renders: 3,
		},
		{
			name:  "one key for two containers",
			files: helmtest.Shared(),
			want:  []Container{{Kind: "Deployment", Name: "rel-shared", Container: "app"}},
			found: []wantFound{{keys: map[Field]string{}, err: ErrSharedKey, says: []string{
				"requests.cpu: shared values key: resources.requests.cpu also sets Deployment ns/rel-shared:proxy",
				"limits.memory: shared values key: resources.limits.memory also sets Deployment ns/rel-shared:proxy",
			}}},
			renders: 3,
		},
		{
			// The probes under settings make the ConfigMap's YAML invalid,
			// which hides no container: no render is split for it.
			name: "a probe that breaks a document without a pod template",
			files: func() map[string]string {
				files := helmtest.Resources()
				files["templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  settings.yaml: {{ toYaml .Values.settings }}\n"
				return files
			}(),
			values:  map[string]any{"settings": map[string]any{}},
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			// Probe renders skip the schema: its additionalProperties:
			// false on the top, image and resources costs no render.
			name:    "a schema that forbids unknown keys",
			files:   helmtest.Strict(),
			want:    []Container{{Kind: "Deployment", Name: "rel-strict", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			// The mapping probes trip the persistence check, the scalar
			// probes required on profile and fail on updateStrategy.
			name:  "templates that fail on probes",
			files: helmtest.Profiles(),
			want:  []Container{{Kind: "Deployment", Name: "rel-profiles", Container: "api"}},
			found: []wantFound{{keys: map[Field]string{RequestsCPU: "profiles.small.cpu", RequestsMemory: "profiles.small.memory"}}},
			// 1 own render, 5 for the mappings, 4 for the scalars.
			renders: 10,
			atMost:  true,
		},
		{
			name:    "another profile",
			files:   helmtest.Profiles(),
			values:  map[string]any{"profile": "large"},
			want:    []Container{{Kind: "Deployment", Name: "rel-profiles", Container: "api"}},
			found:   []wantFound{{keys: map[Field]string{RequestsCPU: "profiles.large.cpu", RequestsMemory: "profiles.large.memory"}}},
			renders: 10,
			atMost:  true,
		},
		{
			name:  "a subchart under an alias",
			files: helmtest.Umbrella(),
			want:  []Container{{Kind: "Deployment", Name: "rel-batch", Container: "server"}},
			found: []wantFound{{keys: map[Field]string{
				RequestsCPU: "batch.cpuRequest", RequestsMemory: "batch.memoryRequest", LimitsCPU: "batch.cpuLimit", LimitsMemory: "batch.memoryLimit",
			}}},
			renders: 3,
		},
		{
			// The test hook's container is sized by resources too, but
			// helm test alone creates it: the key is the app's alone.
			name: "a test hook sized by the same key",
			files: func() map[string]string {
				files := helmtest.Resources()
				files["templates/tests/smoke-job.yaml"] = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "resources.fullname" . }}-smoke-{{ randAlphaNum 5 | lower }}
  annotations:
    "helm.sh/hook": test
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: smoke
          image: registry.example.com/tools/smoke:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`
				return files
			}(),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			// The unset paths the templates read break the render as
			// mappings; the keys are found without them.
			name:  "unset paths read as nameOverride is, in subcharts too",
			files: overridesChart(),
			want: []Container{
				{Kind: "Deployment", Name: "rel-stack", Container: "app"},
				{Kind: "StatefulSet", Name: "rel-db", Container: "db"},
			},
			found:   []wantFound{{keys: full("resources.")}, {keys: full("db.resources.")}},
			renders: 2,
		},
		{
			// The Secret holds no container: probes render without it.
			name: "a template without containers that probes break",
			files: func() map[string]string {
				files := withTemplates("", map[string]string{"templates/extrasecret.yaml": extraSecret})
				files["values.yaml"] += "extraSecret:\n  data: {}\n"
				return files
			}(),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			// The ConfigMap holds no container, but the Deployment includes
			// it by the name it quotes: probes render it.
			name: "a template included whole for a checksum",
			files: withTemplates(`checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}`, map[string]string{
				"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n",
			}),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			// The name is put together at render time: the first probe
			// render fails without the ConfigMap, and the probes render the
			// whole chart from then on.
			name: "a template included by a name built at render time",
			files: withTemplates(`checksum/config: {{ include (print $.Template.BasePath "/config" "map" ".yaml") . | sha256sum }}`, map[string]string{
				"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n",
			}),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 3,
		},
		{
			name: "a named template defined outside a partial",
			files: withTemplates(`team: {{ include "resources.team" . }}`, map[string]string{
				"templates/team.yaml": "{{- define \"resources.team\" }}checkout{{ end }}\n",
			}),
			want:    []Container{{Kind: "Deployment", Name: "rel-resources", Container: "app"}},
			found:   []wantFound{{keys: full("resources.")}},
			renders: 2,
		},
		{
			name:  "objects ranged over a mapping the probes add to",
			files: rangedChart(),
			want: []Container{
				{Kind: "Deployment", Name: "rel-worker", Container: "main"},
				{Kind: "Deployment", Name: "rel-api", Container: "main"},
			},
			found: []wantFound{
				{keys: full("components.worker.resources.")},
				{keys: full("components.api.resources.")},
			},
			renders: 2,
		},
		{
			name:  "a container the release does not render",
			files: helmtest.Components(),
			want: []Container{
				{Kind: "Deployment", Name: "rel-components-web", Container: "nginx"},
				{Kind: "StatefulSet", Name: "rel-components-web", Container: "web"},
				{Kind: "Deployment", Namespace: "other", Name: "rel-components-web", Container: "web"},
			},
			found: []wantFound{
				{err: ErrNotRendered, says: []string{
					"Deployment ns/rel-components-web:nginx: not rendered by release ns/rel (chart components 2.3.1)",
					"which renders Deployment ns/rel-components-web (web, log-shipper), Deployment ns/rel-components-worker (worker)",
				}},
				{err: ErrNotRendered, says: []string{"StatefulSet ns/rel-components-web:web"}},
				{err: ErrNotRendered, says: []string{"Deployment other/rel-components-web:web"}},
			},
			// Nothing wanted is rendered: no probe.
			renders: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFinder(testEngine())
			r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, tt.files), Values: tt.values}
			found, err := f.Keys(context.Background(), r, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != len(tt.want) {
				t.Fatalf("Keys returned %d results for %d containers", len(found), len(tt.want))
			}
			for i, fd := range found {
				w := tt.found[i]
				if fd.Container != tt.want[i] {
					t.Errorf("result %d is for %v, want %v", i, fd.Container, tt.want[i])
				}
				if diff := cmp.Diff(w.keys, keyStrings(fd.Keys)); diff != "" {
					t.Errorf("%v: keys (-want +got):\n%s", fd.Container, diff)
				}
				switch {
				case w.err == nil && fd.Err != nil:
					t.Errorf("%v: unexpected error %v", fd.Container, fd.Err)
				case w.err != nil && !errors.Is(fd.Err, w.err):
					t.Errorf("%v: error %v, want %v", fd.Container, fd.Err, w.err)
				}
				for _, s := range w.says {
					if fd.Err == nil || !strings.Contains(fd.Err.Error(), s) {
						t.Errorf("%v: error %v does not say %q", fd.Container, fd.Err, s)
					}
				}
			}
			if got := f.Renders(); (tt.atMost && got > tt.renders) || (!tt.atMost && got != tt.renders) {
				bound := "exactly"
				if tt.atMost {
					bound = "at most"
				}
				t.Errorf("Keys rendered %d times, want %s %d", got, bound, tt.renders)
			}
		})
	}
}

func TestKeysCache(t *testing.T) {
	f := NewFinder(testEngine())
	c := testChart(t, helmtest.Components())
	values := func() map[string]any {
		return map[string]any{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "300m"}}}}
	}
	r := Release{Name: "shop", Namespace: "prod", Chart: c, Values: values()}
	web := Container{Kind: "Deployment", Name: "shop-components-web", Container: "web"}
	worker := Container{Kind: "Deployment", Name: "shop-components-worker", Container: "worker"}
	first, err := f.Keys(context.Background(), r, []Container{web})
	if err != nil {
		t.Fatal(err)
	}
	renders := f.Renders()
	if renders == 0 {
		t.Fatal("Keys rendered nothing")
	}
	// Equal values in another map, and another container of the release,
	// are the same release: nothing more is rendered.
	again, err := f.Keys(context.Background(), Release{Name: "shop", Namespace: "prod", Chart: c, Values: values()}, []Container{worker, web})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Renders(); got != renders {
		t.Errorf("asking again rendered %d more times", got-renders)
	}
	if diff := cmp.Diff(keyStrings(first[0].Keys), keyStrings(again[1].Keys)); diff != "" {
		t.Errorf("the cached keys differ (-first +again):\n%s", diff)
	}
	if got := keyStrings(again[0].Keys)[RequestsCPU]; got != "worker.resources.requests.cpu" {
		t.Errorf("worker's requests.cpu from the cache = %q, want worker.resources.requests.cpu", got)
	}
	// Another name, namespace or values is another release.
	for _, other := range []Release{
		{Name: "shop2", Namespace: "prod", Chart: c, Values: values()},
		{Name: "shop", Namespace: "test", Chart: c, Values: values()},
		{Name: "shop", Namespace: "prod", Chart: c, Values: map[string]any{"web": map[string]any{"replicaCount": 3}}},
	} {
		before := f.Renders()
		w := web
		w.Name = other.Name + "-components-web"
		if _, err := f.Keys(context.Background(), other, []Container{w}); err != nil {
			t.Fatal(err)
		}
		if f.Renders() == before {
			t.Errorf("release %s/%s with values %v was served from another's cache", other.Namespace, other.Name, other.Values)
		}
	}
}

// TestKeysAnotherContainerLater asks for one container of a release,
// then for another whose fields need the scalar probes the first call
// did not do for it: its probing is readied again, with one more render
// of the release, and a third call renders nothing.
func TestKeysAnotherContainerLater(t *testing.T) {
	f := NewFinder(testEngine())
	r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, helmtest.Shared())}
	app := Container{Kind: "Deployment", Name: "rel-shared", Container: "app"}
	proxy := Container{Kind: "Deployment", Name: "rel-shared", Container: "proxy"}
	steps := []struct {
		want    []Container
		renders int
	}{
		{[]Container{app}, 3},        // own, mappings, scalars for app
		{[]Container{proxy}, 5},      // own again, scalars for proxy
		{[]Container{proxy, app}, 5}, // nothing new
	}
	for i, s := range steps {
		found, err := f.Keys(context.Background(), r, s.want)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range found {
			if !errors.Is(fd.Err, ErrSharedKey) {
				t.Errorf("call %d, %v: error %v, want ErrSharedKey", i+1, fd.Container, fd.Err)
			}
		}
		if got := f.Renders(); got != s.renders {
			t.Errorf("after call %d: %d renders, want %d", i+1, got, s.renders)
		}
	}
}

// TestKeysWholeChartKept asks for the two containers of a release one
// after the other, the chart including a template by a name it builds at
// render time: the first call learns that probes need the whole chart,
// and the second, which readies the probing again, renders it whole at
// once.
func TestKeysWholeChartKept(t *testing.T) {
	files := helmtest.Shared()
	files["templates/deployment.yaml"] = strings.Replace(files["templates/deployment.yaml"], "  labels:\n",
		"  annotations:\n    checksum/config: {{ include (print $.Template.BasePath \"/config\" \"map\" \".yaml\") . | sha256sum }}\n  labels:\n", 1)
	files["templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n"
	f := NewFinder(testEngine())
	r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, files)}
	steps := []struct {
		want    Container
		renders int
	}{
		// own, mappings twice (without the ConfigMap, then whole), scalars
		{Container{Kind: "Deployment", Name: "rel-shared", Container: "app"}, 4},
		// own again, scalars for proxy
		{Container{Kind: "Deployment", Name: "rel-shared", Container: "proxy"}, 6},
	}
	for i, s := range steps {
		found, err := f.Keys(context.Background(), r, []Container{s.want})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(found[0].Err, ErrSharedKey) {
			t.Errorf("call %d, %v: error %v, want ErrSharedKey", i+1, s.want, found[0].Err)
		}
		if got := f.Renders(); got != s.renders {
			t.Errorf("after call %d: %d renders, want %d", i+1, got, s.renders)
		}
	}
}

func TestKeysReleaseErrors(t *testing.T) {
	f := NewFinder(testEngine())
	r := Release{Name: "api", Namespace: "shop", Chart: testChart(t, helmtest.Profiles()), Values: map[string]any{"profile": "huge"}}
	want := []Container{{Kind: "Deployment", Name: "api-profiles", Container: "api"}}
	for range 2 {
		found, err := f.Keys(context.Background(), r, want)
		if !errors.Is(err, ErrRender) || found != nil {
			t.Fatalf("Keys of a release that does not render = %v, %v, want ErrRender", found, err)
		}
	}
	if got := f.Renders(); got != 1 {
		t.Errorf("a release that does not render was rendered %d times, want once", got)
	}

	// An ended context is the caller's, not the release's: it is not kept.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok := Release{Name: "api", Namespace: "shop", Chart: testChart(t, helmtest.Profiles())}
	if _, err := f.Keys(ctx, ok, want); !errors.Is(err, context.Canceled) {
		t.Fatalf("Keys with an ended context = %v, want context.Canceled", err)
	}
	found, err := f.Keys(context.Background(), ok, want)
	if err != nil || found[0].Err != nil {
		t.Fatalf("Keys after an ended context = %v, %v, want keys", found, err)
	}
}

// TestKeysRenderBudget probes a chart that fails for every probe in a
// long list of settings, without saying which: probing stops at its
// budget, and the error says that candidates went untried.
func TestKeysRenderBudget(t *testing.T) {
	var values strings.Builder
	values.WriteString("settings:\n")
	for i := range 300 {
		fmt.Fprintf(&values, "  s%03d: a\n", i)
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: picky\nversion: 0.1.0\n",
		"values.yaml": values.String(),
		"templates/deployment.yaml": `{{- range $k, $v := .Values.settings }}
{{- if not (has $v (list "a" "b")) }}{{ fail "every setting is a or b" }}{{ end }}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      containers:
        - name: app
          image: registry.example.com/app:1
          resources:
            requests:
              cpu: 100m
              memory: 64Mi
`,
	}
	f := NewFinder(testEngine())
	r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, files)}
	found, err := f.Keys(context.Background(), r, []Container{{Kind: "Deployment", Name: "rel", Container: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(found[0].Err, ErrNoKey) || !strings.Contains(found[0].Err.Error(), "candidate keys left untried") {
		t.Errorf("error = %v, want ErrNoKey saying candidates went untried", found[0].Err)
	}
	if got, most := f.Renders(), 1+2*maxProbeRenders; got > most {
		t.Errorf("Keys rendered %d times, want at most %d", got, most)
	}
}

// TestKeysConcurrent asks for the same release from several goroutines:
// it is analysed once.
func TestKeysConcurrent(t *testing.T) {
	f := NewFinder(testEngine())
	r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, helmtest.Components())}
	want := []Container{{Kind: "Deployment", Name: "rel-components-web", Container: "web"}}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			found, err := f.Keys(context.Background(), r, want)
			if err == nil && keyStrings(found[0].Keys)[RequestsCPU] != "web.resources.requests.cpu" {
				err = errors.New("wrong key")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := f.Renders(); got != 2 {
		t.Errorf("four concurrent Keys rendered %d times, want 2", got)
	}
}

// TestProbeChart checks which templates probe renders keep: those that
// render the release's containers, partials, those that define named
// templates, and those a template of their own chart quotes.
func TestProbeChart(t *testing.T) {
	deployment := func(name, quoted string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-` + name + `
  annotations:
    checksum: {{ include (print $.Template.BasePath "` + quoted + `") . | sha256sum }}
spec:
  template:
    spec:
      containers:
        - name: ` + name + `
          image: registry.example.com/` + name + `:1
`
	}
	object := func(kind string) string {
		return "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: {{ .Release.Name }}-" + strings.ToLower(kind) + "\n"
	}
	files := map[string]string{
		"Chart.yaml":                          "apiVersion: v2\nname: stack\nversion: 1.0.0\n",
		"templates/_helpers.tpl":              `{{- define "stack.name" }}stack{{ end }}`,
		"templates/defs.yaml":                 `{{- define "stack.team" }}checkout{{ end }}`,
		"templates/deployment.yaml":           deployment("api", "/configmap.yaml"),
		"templates/configmap.yaml":            object("ConfigMap"),
		"templates/alertmanager/secret.yaml":  object("Secret"),
		"templates/NOTES.txt":                 "Installed {{ .Release.Name }}.\n",
		"charts/ui/Chart.yaml":                "apiVersion: v2\nname: ui\nversion: 2.0.0\n",
		"charts/ui/templates/deployment.yaml": deployment("ui", "/secret.yaml"),
		"charts/ui/templates/secret.yaml":     object("Secret"),
		"charts/ui/templates/service.yaml":    object("Service"),
	}
	r := Release{Name: "rel", Namespace: "ns", Chart: testChart(t, files)}
	objects, err := testEngine().Render(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ch *chartv2.Chart) []string {
		var out []string
		var walk func(c *chartv2.Chart, prefix string)
		walk = func(c *chartv2.Chart, prefix string) {
			for _, tpl := range c.Templates {
				out = append(out, prefix+tpl.Name)
			}
			for _, d := range c.Dependencies() {
				walk(d, prefix+"charts/"+d.Name()+"/")
			}
		}
		walk(ch, "")
		slices.Sort(out)
		return out
	}
	loaded := names(r.Chart.chart)
	got := probeChart(r.Chart.chart, podContainers(objects))
	want := []string{
		"charts/ui/templates/deployment.yaml", "charts/ui/templates/secret.yaml",
		"templates/_helpers.tpl", "templates/configmap.yaml", "templates/defs.yaml", "templates/deployment.yaml",
	}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Errorf("templates kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(loaded, names(r.Chart.chart)); diff != "" {
		t.Errorf("the loaded chart changed (-before +after):\n%s", diff)
	}
	if ch := testChart(t, helmtest.Resources()).chart; probeChart(ch, nil) == ch {
		t.Error("a chart whose templates render no container of the release was kept whole")
	}
	whole := testChart(t, map[string]string{"Chart.yaml": files["Chart.yaml"], "templates/deployment.yaml": deployment("api", "/none.yaml")})
	if got := probeChart(whole.chart, []podContainer{{id: containerID{template: "templates/deployment.yaml"}}}); got != whole.chart {
		t.Error("a chart that leaves out no template was copied")
	}
}
