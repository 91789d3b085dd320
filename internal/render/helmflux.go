package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// fluxHelmRelease is what a HelmRelease says about its chart and values.
type fluxHelmRelease struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ReleaseName     string `json:"releaseName"`
		TargetNamespace string `json:"targetNamespace"`
		Chart           *struct {
			Spec struct {
				Chart                    string   `json:"chart"`
				Version                  string   `json:"version"`
				ValuesFiles              []string `json:"valuesFiles"`
				ValuesFile               string   `json:"valuesFile"`
				IgnoreMissingValuesFiles bool     `json:"ignoreMissingValuesFiles"`
				SourceRef                struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
		ChartRef *struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"chartRef"`
		Values        map[string]any     `json:"values"`
		PostRenderers []fluxPostRenderer `json:"postRenderers"`
		ValuesFrom    []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			ValuesKey  string `json:"valuesKey"`
			TargetPath string `json:"targetPath"`
			Optional   bool   `json:"optional"`
		} `json:"valuesFrom"`
	} `json:"spec"`
}

// releaseName is helm-controller's name for the release: spec.releaseName,
// else the target namespace and the HelmRelease's name, shortened as
// helm-controller does above 53 characters.
func (hr *fluxHelmRelease) releaseName() string {
	name := hr.Spec.ReleaseName
	if name == "" {
		name = hr.Metadata.Name
		if hr.Spec.TargetNamespace != "" {
			name = hr.Spec.TargetNamespace + "-" + name
		}
	}
	if len(name) > 53 {
		sum := sha256.Sum256([]byte(name))
		name = name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	return name
}

// loadFlux reads a HelmRelease: its chart, then its values from valuesFrom
// in order and spec.values last, as helm-controller merges them.
func (a *applier) loadFlux(ctx context.Context, r *release, obj map[string]any, out map[string]map[string]any) (loaded, error) {
	var hr fluxHelmRelease
	if err := convert(obj, &hr); err != nil {
		return loaded{}, fmt.Errorf("%s: %w", r, err)
	}
	if r.name == "" {
		r.name = hr.releaseName()
	}
	if r.namespace == "" {
		r.namespace = hr.Spec.TargetNamespace
		if r.namespace == "" {
			r.namespace = hr.Metadata.Namespace
		}
	}
	if r.chart == nil {
		ch, err := a.fluxChart(ctx, r, &hr, out)
		if err != nil {
			return loaded{}, err
		}
		r.chart = ch
	}
	// valuesFrom in order, a targetPath entry setting its one value where
	// it comes; spec.values over them all.
	var layers []layer
	for _, vf := range hr.Spec.ValuesFrom {
		l, err := valuesFrom(vf.Kind, vf.Name, vf.ValuesKey, vf.TargetPath, hr.Metadata.Namespace, out)
		switch {
		case err != nil && vf.Optional:
			continue
		case err != nil:
			return loaded{}, fmt.Errorf("%s: %w", r, err)
		case vf.TargetPath == "":
			a.generatedFrom(r, &l, vf.Name, or(vf.ValuesKey, "values.yaml"))
		}
		layers = append(layers, l)
	}
	layers = append(layers, layer{
		what:     "spec.values of " + r.String(),
		values:   hr.Spec.Values,
		prefix:   keysPath("spec", "values"),
		writable: true,
	})
	return loaded{layers: layers, post: hr.Spec.PostRenderers}, nil
}

// valuesFrom reads the values a HelmRelease takes from a ConfigMap the
// same build renders (as kustomize generates them from values files).
func valuesFrom(kind, name, key, targetPath, ns string, out map[string]map[string]any) (layer, error) {
	if key == "" {
		key = "values.yaml"
	}
	what := fmt.Sprintf("valuesFrom %s %s/%s key %s", kind, ns, name, key)
	if kind != "ConfigMap" {
		return layer{}, fmt.Errorf("%s: only ConfigMaps the repository renders can be read", what)
	}
	var cm map[string]any
	for id, obj := range out {
		n, _ := tree.Dig(obj, "metadata", "name").(string)
		if strings.HasPrefix(id, "/ConfigMap/"+ns+"/") && (n == name || generatedName(n, name)) {
			cm = obj
			break
		}
	}
	if cm == nil {
		return layer{}, fmt.Errorf("%s: the ConfigMap is not rendered with the HelmRelease", what)
	}
	text, ok := tree.Dig(cm, "data", key).(string)
	if !ok {
		return layer{}, fmt.Errorf("%s: the ConfigMap has no such key", what)
	}
	if targetPath != "" {
		// As helm-controller sets it: a quoted value is a string.
		parse := strvals.ParseInto
		if len(text) >= 2 && (text[0] == '"' || text[0] == '\'') && text[len(text)-1] == text[0] {
			parse, text = strvals.ParseIntoString, text[1:len(text)-1]
		}
		vals := map[string]any{}
		if err := parse(targetPath+"="+text, vals); err != nil {
			return layer{}, fmt.Errorf("%s: targetPath %q: %w", what, targetPath, err)
		}
		return layer{what: what, values: vals}, nil
	}
	var vals map[string]any
	if err := sigsyaml.Unmarshal([]byte(text), &vals); err != nil {
		return layer{}, fmt.Errorf("%s: %w", what, err)
	}
	return layer{what: what, values: vals}, nil
}

// generatedFrom makes l, the values of a ConfigMap, the values file a
// configMapGenerator of the release's environment makes it from: the
// generator nearest the environment that has the key wins, as kustomize
// merges them. The layer is writable when no other environment reads the
// file, and the file holds exactly what the ConfigMap does.
func (a *applier) generatedFrom(r *release, l *layer, name, key string) {
	if r.ref.Chain == nil {
		return
	}
	env := r.ref.Chain.Root()
	seen := map[*repoindex.Kustomization]bool{env: true}
	for queue := []*repoindex.Kustomization{env}; len(queue) > 0; queue = queue[1:] {
		k := queue[0]
		for _, g := range slices.Backward(k.Generators) {
			file, ok := g.Files[key]
			if g.Name != name && !generatedName(name, g.Name) || !ok {
				continue
			}
			data, err := a.fileData(file, true)
			if err != nil {
				return
			}
			var vals map[string]any
			if sigsyaml.Unmarshal(data, &vals) != nil || !reflect.DeepEqual(vals, l.values) && len(vals)+len(l.values) > 0 {
				return
			}
			l.what = fmt.Sprintf("the values file %s (ConfigMap %s, key %s)", file, g.Name, key)
			l.file, l.writable = file, a.ownFile(env, file)
			return
		}
		for _, res := range k.Resources {
			if sub := a.idx.Graph.ByDir[res]; sub != nil && !seen[sub] {
				seen[sub] = true
				queue = append(queue, sub)
			}
		}
	}
}

// ownFile reports whether env is the only environment that reads file
// (with those built on it).
func (a *applier) ownFile(env *repoindex.Kustomization, file string) bool {
	for _, k := range a.readers(file) {
		if a.idx.IsEnv(k) && k != env && !k.Includes(env) {
			return false
		}
	}
	return true
}

// generatedName reports whether n is name with the hash suffix kustomize's
// generators add.
func generatedName(n, name string) bool {
	rest, ok := strings.CutPrefix(n, name+"-")
	return ok && len(rest) == 10 && !strings.ContainsAny(rest, "-.")
}

// fluxChart loads a HelmRelease's chart: a directory of this repository
// through a GitRepository, or a chart of a HelmRepository or
// OCIRepository through the run's chart fetcher.
func (a *applier) fluxChart(ctx context.Context, r *release, hr *fluxHelmRelease, out map[string]map[string]any) (*helm.Chart, error) {
	if ref := hr.Spec.ChartRef; ref != nil {
		if ref.Kind != "OCIRepository" {
			return nil, fmt.Errorf("%s: spec.chartRef to a %s is not supported", r, ref.Kind)
		}
		src, err := a.sourceObject("OCIRepository", ref.Name, or(ref.Namespace, hr.Metadata.Namespace), out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src, "spec", "url").(string)
		version, _ := tree.Dig(src, "spec", "ref", "semver").(string)
		if tag, _ := tree.Dig(src, "spec", "ref", "tag").(string); tag != "" {
			version = tag
		}
		// path.Dir would turn oci:// into oci:/.
		i := strings.LastIndex(u, "/")
		if i < 0 {
			return nil, fmt.Errorf("%s: the OCIRepository's url %q names no chart", r, redactURL(u))
		}
		return a.fetchChart(ctx, r, helm.ChartRef{RepoURL: u[:i], Chart: u[i+1:], Version: version})
	}
	if hr.Spec.Chart == nil {
		return nil, fmt.Errorf("%s has neither spec.chart nor spec.chartRef", r)
	}
	spec := hr.Spec.Chart.Spec
	srcNS := or(spec.SourceRef.Namespace, hr.Metadata.Namespace)
	files := spec.ValuesFiles
	if len(files) == 0 && spec.ValuesFile != "" {
		files = []string{spec.ValuesFile}
	}
	var ch *helm.Chart
	var read func(string) ([]byte, error)
	switch spec.SourceRef.Kind {
	case "HelmRepository":
		src, err := a.sourceObject("HelmRepository", spec.SourceRef.Name, srcNS, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src, "spec", "url").(string)
		if ch, err = a.fetchChart(ctx, r, helm.ChartRef{RepoURL: u, Chart: spec.Chart, Version: spec.Version}); err != nil {
			return nil, err
		}
		// The files of a packaged chart.
		read = func(name string) ([]byte, error) {
			if data, ok := ch.File(path.Clean(name)); ok {
				return data, nil
			}
			return nil, fs.ErrNotExist
		}
	case "GitRepository":
		// Flux's own GitRepository is often made by bootstrap and not in
		// the repository: a chart path of a source that is not there is
		// looked for in this repository.
		u := ""
		if src, err := a.sourceObject("GitRepository", spec.SourceRef.Name, srcNS, out); err == nil {
			u, _ = tree.Dig(src, "spec", "url").(string)
		}
		var err error
		if ch, err = a.localChart(r, u, spec.Chart); err != nil {
			return nil, err
		}
		// Paths from the root of the repository, as source-controller reads them.
		read = func(name string) ([]byte, error) { return a.fileData(repoindex.CleanRepoPath(name), false) }
	default:
		return nil, fmt.Errorf("%s: charts from a %s are not supported", r, spec.SourceRef.Kind)
	}
	if len(files) == 0 {
		return ch, nil
	}
	return chartValuesFiles(r, ch, files, read, spec.IgnoreMissingValuesFiles)
}

// chartValuesFiles gives ch the default values Flux builds from a
// HelmRelease's valuesFiles: merged in order, in place of the chart's
// values.yaml (which counts only when listed).
func chartValuesFiles(r *release, ch *helm.Chart, files []string, read func(string) ([]byte, error), ignoreMissing bool) (*helm.Chart, error) {
	var layers []map[string]any
	for _, f := range files {
		data, err := read(f)
		if errors.Is(err, fs.ErrNotExist) && ignoreMissing {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: spec.chart.spec.valuesFiles %q: %w", r, f, err)
		}
		var vals map[string]any
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return nil, fmt.Errorf("%s: spec.chart.spec.valuesFiles %q: %w", r, f, err)
		}
		layers = append(layers, vals)
	}
	return ch.WithDefaults(helm.Merge(layers...))
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// sourceObject finds a Flux source: in the HelmRelease's build, else in
// the repository's index.
func (a *applier) sourceObject(kind, name, ns string, out map[string]map[string]any) (map[string]any, error) {
	if obj, ok := out[repoindex.FluxSourceGroup+"/"+kind+"/"+ns+"/"+name]; ok {
		return obj, nil
	}
	var found []map[string]any
	var where []string
	for _, ref := range a.idx.Refs[repoindex.IdentKey{Group: repoindex.FluxSourceGroup, Kind: kind, Name: name}] {
		if ref.Namespace != ns && ref.Namespace != "" {
			continue
		}
		obj, ok := a.decoded(ref)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(found, func(o map[string]any) bool { return equalSpec(o, obj) }) {
			found = append(found, obj)
			where = append(where, ref.File)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("the %s %s/%s is not in the repository", kind, ns, name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("the %s %s/%s is defined differently in %s", kind, ns, name, strings.Join(where, ", "))
}

func equalSpec(x, y map[string]any) bool {
	a, _ := json.Marshal(x["spec"])
	b, _ := json.Marshal(y["spec"])
	return string(a) == string(b)
}
