package helmsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// helmSource returns the index of the Application's Helm source (-1 for
// spec.source) and the source, or false.
func (a *Sources) helmSource(app *ArgoApplication) (int, *ArgoSource, bool) {
	isHelm := func(s *ArgoSource) bool {
		if s.Ref != "" || s.Plugin != nil || s.Kustomize != nil || s.Directory != nil {
			return false
		}
		return s.Chart != "" || s.Helm != nil || s.Path != "" && a.Index.Charts[repoindex.CleanRepoPath(s.Path)]
	}
	if s := app.Spec.Source; s != nil && isHelm(s) {
		return -1, s, true
	}
	for i := range app.Spec.Sources {
		if isHelm(&app.Spec.Sources[i]) {
			return i, &app.Spec.Sources[i], true
		}
	}
	return 0, nil, false
}

// loadArgo reads an Application with a Helm source: its chart, then its
// values in Argo CD's order: valueFiles, values, valuesObject, parameters.
func (a *Sources) loadArgo(ctx context.Context, r *Release, obj map[string]any) ([]Layer, error) {
	var app ArgoApplication
	if err := Convert(obj, &app); err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	i, src, ok := a.helmSource(&app)
	if !ok {
		return nil, ErrNotHelm
	}
	r.Source = i
	if r.Namespace == "" {
		r.Namespace = app.Spec.Destination.Namespace
	}
	if src.Helm != nil && src.Helm.ReleaseName != "" {
		r.Name = src.Helm.ReleaseName
	}
	if src.Helm != nil && src.Helm.Namespace != "" {
		r.Namespace = src.Helm.Namespace
	}
	if r.Chart == nil {
		var ch *helm.Chart
		var err error
		if src.Chart != "" {
			u := src.RepoURL
			if !strings.Contains(u, "://") {
				u = "oci://" + u // Argo CD names OCI registries without a scheme
			}
			ch, err = a.fetchChart(ctx, r, chartfetch.ChartRef{RepoURL: u, Chart: src.Chart, Version: src.TargetRevision})
		} else {
			ch, err = a.localChart(ctx, r, src.RepoURL, src.Path)
		}
		if err != nil {
			return nil, err
		}
		r.Chart = ch
	}
	prefix := KeysPath("spec", "source", "helm")
	if i >= 0 {
		prefix = helm.Path{helm.Key("spec"), helm.Key("sources"), helm.Index(i), helm.Key("helm")}
	}
	var layers []Layer
	// An Application the repository does not hold has no values of its
	// own to write: its chart's values.yaml is, when only it renders the
	// chart (Helm reads it first).
	ext := a.external(r)
	objectRefused := ""
	if ext {
		objectRefused = "helm.valuesObject of " + r.Kind + " " + r.ObjectName() + ", which is not a file of the repository"
		if src.Chart == "" {
			l, ok, err := a.chartValuesLayer(ctx, r, repoindex.CleanRepoPath(src.Path))
			if err != nil {
				return nil, err
			}
			if ok {
				layers = append(layers, l)
			}
		}
	}
	if src.Helm == nil {
		return append(layers, Layer{What: "helm.valuesObject of " + r.String(), Prefix: append(prefix, helm.Key("valuesObject")), Writable: !ext, Refused: objectRefused}), nil
	}
	files, err := a.valueFileLayers(ctx, r, &app, src)
	if err != nil {
		return nil, err
	}
	layers = append(layers, files...)
	// Argo CD reads the values string only when valuesObject is empty.
	if src.Helm.Values != "" && len(src.Helm.ValuesObject) == 0 {
		var vals map[string]any
		if err := sigsyaml.Unmarshal([]byte(src.Helm.Values), &vals); err != nil {
			return nil, fmt.Errorf("%s: helm.values: %w", r, err)
		}
		layers = append(layers, Layer{What: "helm.values of " + r.String(), Values: vals})
	}
	// A valuesObject the job would add makes Argo CD drop a values
	// string: it is written only when there is none.
	layers = append(layers, Layer{
		What: "helm.valuesObject of " + r.String(), Values: src.Helm.ValuesObject, Prefix: append(prefix, helm.Key("valuesObject")),
		Writable: !ext && (src.Helm.Values == "" || len(src.Helm.ValuesObject) > 0), Refused: objectRefused,
	})
	if len(src.Helm.Parameters) > 0 {
		l, err := parametersLayer(r, src.Helm.Parameters)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	if ext && len(layers) > 0 && layers[0].Writable {
		// The chart's defaults are the fallback: a values file the
		// Application names, which only it reads, is its environment's.
		chartValues := layers[0].File
		if slices.ContainsFunc(layers[1:], func(l Layer) bool { return l.Writable && l.File != "" && l.File != chartValues }) {
			for j := range layers {
				if layers[j].File == chartValues {
					layers[j].Writable = false
				}
			}
		}
	}
	return layers, nil
}

// valueFileLayers reads the layers of an Application's Helm valueFiles, in
// order: a file of this repository, writable when only this release reads
// it, or a file of a chart fetched from a repository, read only.
func (a *Sources) valueFileLayers(ctx context.Context, r *Release, app *ArgoApplication, src *ArgoSource) ([]Layer, error) {
	var layers []Layer
	for _, vf := range src.Helm.ValueFiles {
		file, err := a.valueFile(app, src, vf)
		if err != nil {
			return nil, fmt.Errorf("%s: valueFiles %q: %w", r, vf, err)
		}
		if file == "" {
			// A file of the chart from a chart repository: read, never
			// written.
			name := path.Clean(strings.TrimPrefix(vf, "/"))
			data, ok := r.Chart.File(name)
			if !ok && src.Helm.IgnoreMissingValueFiles {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("%s: valueFiles %q: chart %s %s has no file %s", r, vf, r.Chart.Name, r.Chart.Version, name)
			}
			var vals map[string]any
			if err := sigsyaml.Unmarshal(data, &vals); err != nil {
				return nil, fmt.Errorf("%s: %s of chart %s: %w", r, name, r.Chart.Name, err)
			}
			layers = append(layers, Layer{What: fmt.Sprintf("the values file %s of chart %s %s", name, r.Chart.Name, r.Chart.Version), Values: vals})
			continue
		}
		data, err := a.fileData(file, true)
		if errors.Is(err, fs.ErrNotExist) && src.Helm.IgnoreMissingValueFiles {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: valueFiles %q: %w", r, vf, err)
		}
		var vals map[string]any
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", r, file, err)
		}
		own, refused := a.ownValueFile(ctx, r, file)
		layers = append(layers, Layer{What: "the values file " + file, Values: vals, File: file, Writable: own, Refused: refused})
	}
	return layers, nil
}

// parametersLayer is the layer of an Application's helm.parameters, as
// helm --set and --set-string read them.
func parametersLayer(r *Release, params []ArgoParameter) (Layer, error) {
	vals := map[string]any{}
	for _, p := range params {
		parse := strvals.ParseInto
		if p.ForceString {
			parse = strvals.ParseIntoString
		}
		if err := parse(p.Name+"="+p.Value, vals); err != nil {
			return Layer{}, fmt.Errorf("%s: helm.parameters %s: %w", r, p.Name, err)
		}
	}
	return Layer{What: "helm.parameters of " + r.String(), Values: vals}, nil
}

// valueFile resolves an Application's valueFiles entry to a file of this
// repository: $ref/... in the source with that ref, else relative to the
// Helm source's path. It returns "" for a file inside a chart fetched from
// a chart repository.
func (a *Sources) valueFile(app *ArgoApplication, src *ArgoSource, vf string) (string, error) {
	if ref, rest, ok := strings.Cut(vf, "/"); ok && strings.HasPrefix(ref, "$") {
		for _, s := range app.Spec.Sources {
			if s.Ref == ref[1:] {
				if !a.isThisRepo(s.RepoURL) {
					return "", fmt.Errorf("the source %s is the git repository %s, not this one", ref, repoindex.RedactURL(s.RepoURL))
				}
				return inRepository(rest)
			}
		}
		return "", fmt.Errorf("no source has ref %s", ref[1:])
	}
	if strings.Contains(vf, "://") {
		return "", fmt.Errorf("remote values files are not supported")
	}
	if strings.HasPrefix(vf, "/") {
		// From the root of the source's repository.
		if src.Chart != "" {
			return "", nil
		}
		return inRepository(vf)
	}
	if src.Chart != "" {
		return "", nil
	}
	return inRepository(path.Join(src.Path, vf))
}

// inRepository returns a values file's path in the repository, or, for one
// that climbs out of it, the error Argo CD refuses it with, rather than
// reading some other file of the repository's root.
func inRepository(p string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(p, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("resolves to outside the repository root, which Argo CD refuses")
	}
	return clean, nil
}

// ownValueFile reports whether a values file belongs to r alone: no other
// Application of the repository reads it, nor does r's own document as
// another environment deploys it (a base Application that staging and
// production both render), and it is not a chart's own values.yaml. When
// no other reader is known but an ApplicationSet's Applications are not
// (past appset's budget), it does not, and refused says why.
func (a *Sources) ownValueFile(ctx context.Context, r *Release, file string) (own bool, refused string) {
	if path.Base(file) == "values.yaml" && a.Index.Charts[path.Dir(file)] {
		// Every release of the chart reads it: it is r's alone only
		// when r is generated or live and no other deployer renders it.
		return a.external(r) && len(a.chartReaders(ctx, r, path.Dir(file))) == 0, ""
	}
	for _, key := range slices.SortedFunc(maps.Keys(a.Index.Refs), compareKeys) {
		for _, ref := range a.Index.Refs[key] {
			if ref.Key.Group != repoindex.ArgoGroup {
				continue
			}
			// The same document is another reader as another environment
			// deploys it, with the values files it names as written.
			if ref.File == r.Ref.File && ref.Doc == r.Ref.Doc &&
				(ref.RenderedFrom() == r.Ref.RenderedFrom() || ref.Chain != nil && !a.Index.IsEnv(ref.Chain.Root())) {
				continue
			}
			var apps []map[string]any
			switch ref.Key.Kind {
			case "Application":
				obj, ok := a.decoded(ref)
				if !ok {
					continue
				}
				apps = []map[string]any{obj}
			case "ApplicationSet":
				var err error
				if apps, err = a.generatedApps(ctx, ref); err != nil {
					if refused == "" {
						refused = fmt.Sprintf("the values file %s, whose readers are not known: %v", file, err)
					}
					continue
				}
			}
			for _, app := range apps {
				if a.ReadsValueFile(app, file) {
					return false, ""
				}
			}
		}
	}
	return refused == "", refused
}

// ReadsValueFile reports whether an Application (or an ApplicationSet's
// template, where a {{...}} left in a path matches any text) reads file.
func (a *Sources) ReadsValueFile(obj map[string]any, file string) bool {
	var app ArgoApplication
	if Convert(obj, &app) != nil {
		return false
	}
	_, src, ok := a.helmSource(&app)
	if !ok || src.Helm == nil {
		return false
	}
	for _, vf := range src.Helm.ValueFiles {
		f, err := a.valueFile(&app, src, vf)
		if err != nil {
			continue
		}
		glob := TemplateParam.ReplaceAllString(EscapeGlob(f), "*")
		if ok, _ := path.Match(glob, file); ok || f == file {
			return true
		}
	}
	return false
}

// ArgoApplication is what an Application says about its Helm source.
type ArgoApplication struct {
	Spec struct {
		Source      *ArgoSource  `json:"source"`
		Sources     []ArgoSource `json:"sources"`
		Destination struct {
			Namespace string `json:"namespace"`
		} `json:"destination"`
	} `json:"spec"`
}

// ArgoSource is one source of an Argo CD Application: a chart, a path in a
// repository, or a ref to one that value files name.
type ArgoSource struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path"`
	Chart          string `json:"chart"`
	TargetRevision string `json:"targetRevision"`
	Ref            string `json:"ref"`
	// A source with one of these is rendered by Kustomize, a plain
	// directory or a plugin, even with a chart in its path.
	Plugin    any `json:"plugin"`
	Kustomize any `json:"kustomize"`
	Directory any `json:"directory"`
	Helm      *struct {
		ReleaseName             string          `json:"releaseName"`
		Namespace               string          `json:"namespace"`
		ValueFiles              []string        `json:"valueFiles"`
		Values                  string          `json:"values"`
		ValuesObject            map[string]any  `json:"valuesObject"`
		IgnoreMissingValueFiles bool            `json:"ignoreMissingValueFiles"`
		Parameters              []ArgoParameter `json:"parameters"`
	} `json:"helm"`
}

// ArgoParameter is one of an Application's helm.parameters.
type ArgoParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString"`
}

// TemplateParam is a parameter of an ApplicationSet's template, in Go
// template or fasttemplate syntax.
var TemplateParam = regexp.MustCompile(`\{\{[^}]*\}\}`)

// EscapeGlob quotes what path.Match would read as a pattern, but the
// template's parameters.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
