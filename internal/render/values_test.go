package render

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/helmsource"
	"github.com/recommend-job/recommend-job/internal/repoindex"
)

// at parses a path written as dot-separated keys, with [n] for list items.
func at(t *testing.T, s string) helm.Path {
	t.Helper()
	var p helm.Path
	for _, part := range strings.Split(s, ".") {
		key, idx, ok := strings.Cut(part, "[")
		if key != "" {
			p = append(p, helm.Key(key))
		}
		if ok {
			n := 0
			for _, r := range strings.TrimSuffix(idx, "]") {
				n = n*10 + int(r-'0')
			}
			p = append(p, helm.Index(n))
		}
	}
	return p
}

// TestValuesPlacer covers setting Helm values keys in a values document:
// nested keys created in one block, scalars replaced with their comments
// and quotes, list items reached but never created.
func TestValuesPlacer(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		prefix string
		sets   map[string]string
		want   string
		err    error
	}{
		{
			name: "creates nested keys under an existing mapping",
			in:   "# Values.\nweb:\n  replicas: 2 # two\nother: x\n",
			sets: map[string]string{"web.resources.requests.cpu": "100m", "web.resources.requests.memory": "128Mi"},
			want: "# Values.\nweb:\n  replicas: 2 # two\n  resources:\n    requests:\n      cpu: 100m\n      memory: 128Mi\nother: x\n",
		},
		{
			name: "replaces a scalar key and keeps its quotes and comment",
			in:   "cpuRequest: \"100m\" # the default\nmemoryRequest: 64Mi\n",
			sets: map[string]string{"cpuRequest": "250m"},
			want: "cpuRequest: \"250m\" # the default\nmemoryRequest: 64Mi\n",
		},
		{
			name: "an equal quantity however spelled changes nothing",
			in:   "web:\n  resources:\n    requests:\n      cpu: 0.25\n",
			sets: map[string]string{"web.resources.requests.cpu": "250m"},
			want: "web:\n  resources:\n    requests:\n      cpu: 0.25\n",
		},
		{
			name: "fills an empty mapping",
			in:   "web:\n  resources: {}\n",
			sets: map[string]string{"web.resources.limits.memory": "1Gi"},
			want: "web:\n  resources:\n    limits:\n      memory: 1Gi\n",
		},
		{
			name: "reaches into a list item that exists",
			in:   "sidecars:\n  - name: proxy\n    resources:\n      requests:\n        cpu: 10m\n",
			sets: map[string]string{"sidecars[0].resources.requests.cpu": "20m"},
			want: "sidecars:\n  - name: proxy\n    resources:\n      requests:\n        cpu: 20m\n",
		},
		{
			name:   "below a prefix in an object",
			in:     "spec:\n  values:\n    web:\n      replicas: 1\n",
			prefix: "spec.values",
			sets:   map[string]string{"worker.resources.requests.cpu": "30m"},
			want:   "spec:\n  values:\n    web:\n      replicas: 1\n    worker:\n      resources:\n        requests:\n          cpu: 30m\n",
		},
		{
			name:   "creates the prefix",
			in:     "spec:\n  chart: x\n",
			prefix: "spec.values",
			sets:   map[string]string{"cpu": "1"},
			want:   "spec:\n  chart: x\n  values:\n    cpu: 1\n",
		},
		{
			name: "a list item that is not there is refused",
			in:   "sidecars: []\n",
			sets: map[string]string{"sidecars[0].resources.requests.cpu": "20m"},
			err:  repoindex.ErrUnsafeFile,
		},
		{
			name: "a list that is not set here is refused",
			in:   "web: {}\n",
			sets: map[string]string{"sidecars[0].resources.requests.cpu": "20m"},
			err:  repoindex.ErrUnsafeFile,
		},
		{
			name: "a scalar on the way is refused",
			in:   "web: enabled\n",
			sets: map[string]string{"web.resources.requests.cpu": "20m"},
			err:  repoindex.ErrUnsafeFile,
		},
		{
			name: "a mapping where a quantity goes is refused",
			in:   "cpu:\n  request: 1\n",
			sets: map[string]string{"cpu": "20m"},
			err:  repoindex.ErrUnsafeFile,
		},
		{
			name: "an alias on the way is refused",
			in:   "base: &b\n  cpu: 1\nweb: *b\n",
			sets: map[string]string{"web.cpu": "2"},
			err:  repoindex.ErrUnsafeFile,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var as []helmsource.Assignment
			for k, v := range tt.sets {
				as = append(as, helmsource.Assignment{Path: at(t, k), Quantity: resource.MustParse(v)})
			}
			// A stable order: the map's is random.
			for i := range as {
				for j := i + 1; j < len(as); j++ {
					if as[j].Path.String() < as[i].Path.String() {
						as[i], as[j] = as[j], as[i]
					}
				}
			}
			var prefix helm.Path
			if tt.prefix != "" {
				prefix = at(t, tt.prefix)
			}
			fe := newFileEdit(&repoindex.IndexedFile{Name: "values.yaml", Data: []byte(tt.in)})
			docs, err := fe.currentDocs()
			if err != nil {
				t.Fatal(err)
			}
			_, err = fe.edit(docs, 0, Change{}, valuesPlacer(prefix, as))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				if string(fe.data) != tt.in {
					t.Errorf("the file changed although the edit failed:\n%s", fe.data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fe.data); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestChooseLayer covers where a release's values go: the environment's
// own layers, never one a later layer overrides.
func TestChooseLayer(t *testing.T) {
	cpu := []helmsource.Assignment{{Path: helmsource.KeysPath("web", "resources", "requests", "cpu"), Quantity: resource.MustParse("1")}}
	file := func(what string, writable bool, values map[string]any) helmsource.Layer {
		return helmsource.Layer{What: what, File: what, Writable: writable, Values: values}
	}
	object := func(values map[string]any) helmsource.Layer {
		return helmsource.Layer{What: "object", Prefix: helmsource.KeysPath("spec", "values"), Writable: true, Values: values}
	}
	sets := map[string]any{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}
	other := map[string]any{"web": map[string]any{"replicas": 2}}
	tests := []struct {
		name   string
		layers []helmsource.Layer
		want   string
		err    string
	}{
		{"the environment's values file before empty object values", []helmsource.Layer{file("shared", false, nil), file("own", true, other), object(nil)}, "own", ""},
		{"the layer that already sets the key", []helmsource.Layer{file("own", true, other), object(sets)}, "object", ""},
		{"the object when the environment has no file", []helmsource.Layer{file("shared", false, sets), object(other)}, "object", ""},
		{"not a file a later layer overrides", []helmsource.Layer{file("own", true, nil), {What: "helm.values", Values: sets}, object(nil)}, "object", ""},
		{"refused when a layer above every own one sets it", []helmsource.Layer{object(nil), {What: "parameters", Values: sets}}, "", "parameters sets web.resources.requests.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := helmsource.ChooseLayer(tt.layers, cpu)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.What != tt.want {
				t.Errorf("chose %s, want %s", got.What, tt.want)
			}
		})
	}
}
