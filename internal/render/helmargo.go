package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// argoApplication is what an Application says about its Helm source.
type argoApplication struct {
	Spec struct {
		Source      *argoSource  `json:"source"`
		Sources     []argoSource `json:"sources"`
		Destination struct {
			Namespace string `json:"namespace"`
		} `json:"destination"`
	} `json:"spec"`
}

type argoSource struct {
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
		ReleaseName             string         `json:"releaseName"`
		Namespace               string         `json:"namespace"`
		ValueFiles              []string       `json:"valueFiles"`
		Values                  string         `json:"values"`
		ValuesObject            map[string]any `json:"valuesObject"`
		IgnoreMissingValueFiles bool           `json:"ignoreMissingValueFiles"`
		Parameters              []struct {
			Name        string `json:"name"`
			Value       string `json:"value"`
			ForceString bool   `json:"forceString"`
		} `json:"parameters"`
	} `json:"helm"`
}

// helmSource returns the index of the Application's Helm source (-1 for
// spec.source) and the source, or false.
func (a *applier) helmSource(app *argoApplication) (int, *argoSource, bool) {
	isHelm := func(s *argoSource) bool {
		if s.Ref != "" || s.Plugin != nil || s.Kustomize != nil || s.Directory != nil {
			return false
		}
		return s.Chart != "" || s.Helm != nil || s.Path != "" && a.idx.Charts[repoindex.CleanRepoPath(s.Path)]
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
func (a *applier) loadArgo(ctx context.Context, r *release, obj map[string]any) ([]layer, error) {
	var app argoApplication
	if err := convert(obj, &app); err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	i, src, ok := a.helmSource(&app)
	if !ok {
		return nil, errNotHelm
	}
	r.source = i
	if r.namespace == "" {
		r.namespace = app.Spec.Destination.Namespace
	}
	if src.Helm != nil && src.Helm.ReleaseName != "" {
		r.name = src.Helm.ReleaseName
	}
	if src.Helm != nil && src.Helm.Namespace != "" {
		r.namespace = src.Helm.Namespace
	}
	if r.chart == nil {
		var ch *helm.Chart
		var err error
		if src.Chart != "" {
			u := src.RepoURL
			if !strings.Contains(u, "://") {
				u = "oci://" + u // Argo CD names OCI registries without a scheme
			}
			ch, err = a.fetchChart(ctx, r, helm.ChartRef{RepoURL: u, Chart: src.Chart, Version: src.TargetRevision})
		} else {
			ch, err = a.localChart(r, src.RepoURL, src.Path)
		}
		if err != nil {
			return nil, err
		}
		r.chart = ch
	}
	prefix := keysPath("spec", "source", "helm")
	if i >= 0 {
		prefix = helm.Path{helm.Key("spec"), helm.Key("sources"), helm.Index(i), helm.Key("helm")}
	}
	var layers []layer
	if src.Helm == nil {
		return []layer{{what: "helm.valuesObject of " + r.String(), prefix: append(prefix, helm.Key("valuesObject")), writable: true}}, nil
	}
	for _, vf := range src.Helm.ValueFiles {
		file, err := a.valueFile(&app, src, vf)
		if err != nil {
			return nil, fmt.Errorf("%s: valueFiles %q: %w", r, vf, err)
		}
		if file == "" {
			// A file of the chart from a chart repository: read, never
			// written.
			name := path.Clean(strings.TrimPrefix(vf, "/"))
			data, ok := r.chart.File(name)
			if !ok && src.Helm.IgnoreMissingValueFiles {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("%s: valueFiles %q: chart %s %s has no file %s", r, vf, r.chart.Name, r.chart.Version, name)
			}
			var vals map[string]any
			if err := sigsyaml.Unmarshal(data, &vals); err != nil {
				return nil, fmt.Errorf("%s: %s of chart %s: %w", r, name, r.chart.Name, err)
			}
			layers = append(layers, layer{what: fmt.Sprintf("the values file %s of chart %s %s", name, r.chart.Name, r.chart.Version), values: vals})
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
		layers = append(layers, layer{what: "the values file " + file, values: vals, file: file, writable: a.ownValueFile(r, file)})
	}
	// Argo CD reads the values string only when valuesObject is empty.
	if src.Helm.Values != "" && len(src.Helm.ValuesObject) == 0 {
		var vals map[string]any
		if err := sigsyaml.Unmarshal([]byte(src.Helm.Values), &vals); err != nil {
			return nil, fmt.Errorf("%s: helm.values: %w", r, err)
		}
		layers = append(layers, layer{what: "helm.values of " + r.String(), values: vals})
	}
	// A valuesObject the job would add makes Argo CD drop a values
	// string: it is written only when there is none.
	layers = append(layers, layer{
		what: "helm.valuesObject of " + r.String(), values: src.Helm.ValuesObject, prefix: append(prefix, helm.Key("valuesObject")),
		writable: src.Helm.Values == "" || len(src.Helm.ValuesObject) > 0,
	})
	if len(src.Helm.Parameters) > 0 {
		vals := map[string]any{}
		for _, p := range src.Helm.Parameters {
			parse := strvals.ParseInto
			if p.ForceString {
				parse = strvals.ParseIntoString
			}
			if err := parse(p.Name+"="+p.Value, vals); err != nil {
				return nil, fmt.Errorf("%s: helm.parameters %s: %w", r, p.Name, err)
			}
		}
		layers = append(layers, layer{what: "helm.parameters of " + r.String(), values: vals})
	}
	return layers, nil
}

// valueFile resolves an Application's valueFiles entry to a file of this
// repository: $ref/... in the source with that ref, else relative to the
// Helm source's path. It returns "" for a file inside a chart fetched from
// a chart repository.
func (a *applier) valueFile(app *argoApplication, src *argoSource, vf string) (string, error) {
	if ref, rest, ok := strings.Cut(vf, "/"); ok && strings.HasPrefix(ref, "$") {
		for _, s := range app.Spec.Sources {
			if s.Ref == ref[1:] {
				if !a.isThisRepo(s.RepoURL) {
					return "", fmt.Errorf("the source %s is the git repository %s, not this one", ref, redactURL(s.RepoURL))
				}
				return repoindex.CleanRepoPath(rest), nil
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
		return repoindex.CleanRepoPath(vf), nil
	}
	if src.Chart != "" {
		return "", nil
	}
	return repoindex.CleanRepoPath(path.Join(src.Path, vf)), nil
}

// ownValueFile reports whether a values file belongs to r alone: no other
// Application of the repository reads it, nor does r's own document as
// another environment deploys it (a base Application that staging and
// production both render), and it is not a chart's own values.yaml.
func (a *applier) ownValueFile(r *release, file string) bool {
	if path.Base(file) == "values.yaml" && a.idx.Charts[path.Dir(file)] {
		return false
	}
	for _, refs := range a.idx.Refs {
		for _, ref := range refs {
			if ref.Key.Group != repoindex.ArgoGroup {
				continue
			}
			// The same document is another reader as another environment
			// deploys it, with the values files it names as written.
			if ref.File == r.ref.File && ref.Doc == r.ref.Doc &&
				(ref.RenderedFrom() == r.ref.RenderedFrom() || ref.Chain != nil && !a.idx.IsEnv(ref.Chain.Root())) {
				continue
			}
			obj, ok := a.decoded(ref)
			if !ok {
				continue
			}
			var apps []map[string]any
			switch ref.Key.Kind {
			case "Application":
				apps = []map[string]any{obj}
			case "ApplicationSet":
				apps = generatedApps(obj)
			}
			for _, app := range apps {
				if a.readsValueFile(app, file) {
					return false
				}
			}
		}
	}
	return true
}

// readsValueFile reports whether an Application (or an ApplicationSet's
// template, where a {{...}} left in a path matches any text) reads file.
func (a *applier) readsValueFile(obj map[string]any, file string) bool {
	var app argoApplication
	if convert(obj, &app) != nil {
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
		glob := templateParam.ReplaceAllString(escapeGlob(f), "*")
		if ok, _ := path.Match(glob, file); ok || f == file {
			return true
		}
	}
	return false
}

// templateParam is a parameter of an ApplicationSet's template, in Go
// template or fasttemplate syntax.
var templateParam = regexp.MustCompile(`\{\{[^}]*\}\}`)

// escapeGlob quotes what path.Match would read as a pattern, but the
// template's parameters.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// generatedApps returns the Applications an ApplicationSet makes from its
// template: one per element of a list generator, with the element's
// parameters filled in; for other generators, the template as written,
// whose parameters match anything.
func generatedApps(appset map[string]any) []map[string]any {
	tmpl, _ := tree.Dig(appset, "spec", "template").(map[string]any)
	if tmpl == nil {
		return nil
	}
	gens, _ := tree.Dig(appset, "spec", "generators").([]any)
	var out []map[string]any
	for _, g := range gens {
		elems, ok := tree.Dig(g, "list", "elements").([]any)
		if !ok {
			return []map[string]any{tmpl}
		}
		for _, e := range elems {
			params, _ := e.(map[string]any)
			filled := fillParams(tree.DeepCopy(tmpl), params)
			out = append(out, filled.(map[string]any))
		}
	}
	if len(out) == 0 {
		out = append(out, tmpl)
	}
	return out
}

// fillParams replaces {{.key}} and {{key}} in the strings of v with the
// element's values; other parameters stay.
func fillParams(v any, params map[string]any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = fillParams(e, params)
		}
	case []any:
		for i, e := range t {
			t[i] = fillParams(e, params)
		}
	case string:
		return templateParam.ReplaceAllStringFunc(t, func(m string) string {
			key := strings.TrimPrefix(strings.TrimSpace(strings.Trim(m, "{}")), ".")
			if val, ok := params[key]; ok {
				return fmt.Sprint(val)
			}
			return m
		})
	}
	return v
}
