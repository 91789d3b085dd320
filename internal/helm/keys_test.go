package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/helm/helmtest"
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
			f := NewFinder()
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
	f := NewFinder()
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
	f := NewFinder()
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

func TestKeysReleaseErrors(t *testing.T) {
	f := NewFinder()
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
	f := NewFinder()
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
	f := NewFinder()
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
