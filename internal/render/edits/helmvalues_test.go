package edits

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
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
			fe := newFile(&repoindex.IndexedFile{Name: "values.yaml", Data: []byte(tt.in)})
			docs, err := fe.CurrentDocs()
			if err != nil {
				t.Fatal(err)
			}
			_, err = fe.Edit(docs, 0, ValuesPlacer(prefix, as))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				if string(fe.Data) != tt.in {
					t.Errorf("the file changed although the edit failed:\n%s", fe.Data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fe.Data); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
