package helmsource

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// builds are Edits whose kustomizations build to the objects given, by
// directory: what kustomize would output.
type builds struct {
	repoFiles
	out map[string]map[string]map[string]any
}

func (b builds) BuildEnv(dir string, _ bool) (map[string]map[string]any, error) {
	out, ok := b.out[dir]
	if !ok {
		return nil, errors.New("no build of " + dir)
	}
	return out, nil
}

// TestValuesFromGenerator checks that a HelmRelease's values from a
// ConfigMap that a configMapGenerator of its environment makes are the
// generator's values file, writable when only that environment reads it
// and it holds exactly what the ConfigMap does.
func TestValuesFromGenerator(t *testing.T) {
	hr := helmRelease(fromHelmRepo + "  valuesFrom:\n  - {kind: ConfigMap, name: web-values}\n  values: {b: 1}\n")
	var hrObj map[string]any
	if err := sigsyaml.Unmarshal([]byte(hr), &hrObj); err != nil {
		t.Fatal(err)
	}
	repo := fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n")
	var repoObj map[string]any
	if err := sigsyaml.Unmarshal([]byte(repo), &repoObj); err != nil {
		t.Fatal(err)
	}
	build := func(values string) map[string]map[string]any {
		return map[string]map[string]any{
			"helm.toolkit.fluxcd.io/HelmRelease/shop/web":         hrObj,
			"source.toolkit.fluxcd.io/HelmRepository/shop/charts": repoObj,
			"/ConfigMap/shop/web-values-5f8d9g7h2k": {"metadata": map[string]any{"name": "web-values-5f8d9g7h2k"},
				"data": map[string]any{"values.yaml": values}},
		}
	}
	env := "resources: [hr.yaml, repo.yaml]\nconfigMapGenerator:\n- name: web-values\n  files: [values.yaml]\n"
	tests := []struct {
		name     string
		files    map[string]string
		built    string // the ConfigMap's values.yaml
		what     string
		writable bool
	}{
		{"the environment's own file",
			map[string]string{"env/kustomization.yaml": env, "env/values.yaml": "a: 1\n"}, "a: 1\n",
			"the values file env/values.yaml (ConfigMap web-values, key values.yaml)", true},
		{"a file another environment reads too",
			map[string]string{"env/kustomization.yaml": env, "env/values.yaml": "a: 1\n",
				"other/kustomization.yaml": "configMapGenerator:\n- name: other\n  files: [values.yaml=../env/values.yaml]\n"}, "a: 1\n",
			"the values file env/values.yaml (ConfigMap web-values, key values.yaml)", false},
		{"a ConfigMap that does not hold the file's values",
			map[string]string{"env/kustomization.yaml": env, "env/values.yaml": "a: 1\n"}, "a: 2\n",
			"valuesFrom ConfigMap shop/web-values key values.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"env/hr.yaml": {Data: []byte(hr)}, "env/repo.yaml": {Data: []byte(repo)}}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{repoindex.KeyOf(hrTarget): true}, Dir: ".", Helm: true}
			idx, err := repoindex.BuildIndex(context.Background(), fsys, ".", w, 0)
			if err != nil {
				t.Fatal(err)
			}
			a := &Sources{Index: idx, FS: fsys, Charts: &charts{}, LocalCharts: map[string]*helm.Chart{}, Fetched: map[chartfetch.ChartRef]FetchedChart{},
				Edits: builds{repoFiles{fsys}, map[string]map[string]map[string]any{"env": build(tt.built)}}}
			r, err := a.FindRelease(repoindex.Sought{Target: hrTarget, Container: "app"}, ".")
			if err != nil {
				t.Fatal(err)
			}
			l, err := a.Load(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Layers) != 2 {
				t.Fatalf("%d layers, want the ConfigMap's and spec.values", len(l.Layers))
			}
			if got := l.Layers[0]; got.What != tt.what || got.Writable != tt.writable {
				t.Errorf("layer %q writable %v, want %q writable %v", got.What, got.Writable, tt.what, tt.writable)
			}
			if got := l.Layers[1]; got.What != "spec.values of HelmRelease shop/web (env/hr.yaml, rendered by env)" || !got.Writable {
				t.Errorf("last layer %q writable %v, want the HelmRelease's spec.values", got.What, got.Writable)
			}
		})
	}
}
