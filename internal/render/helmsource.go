package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/recommend-job/recommend-job/internal/helm"
)

// ErrHelm means a target that Helm renders could not be followed to the
// values that size it: its release, chart or values could not be read,
// or no values key sizes the container alone.
var ErrHelm = errors.New("helm release")

// The API groups of the Flux and Argo CD objects that render Helm releases.
const (
	fluxHelmGroup   = "helm.toolkit.fluxcd.io"
	fluxSourceGroup = "source.toolkit.fluxcd.io"
	argoGroup       = "argoproj.io"
)

// groupKind is an object's API group and kind.
type groupKind struct{ group, kind string }

// helmKinds are the objects that render a Helm release or say where its
// chart is: the index keeps them whatever their names when a target may be
// Helm's.
var helmKinds = map[groupKind]bool{
	{fluxHelmGroup, "HelmRelease"}:      true,
	{fluxSourceGroup, "HelmRepository"}: true,
	{fluxSourceGroup, "GitRepository"}:  true,
	{fluxSourceGroup, "OCIRepository"}:  true,
	{argoGroup, "Application"}:          true,
}

// helmTokens are in every file that holds one of helmKinds.
var helmTokens = [][]byte{[]byte(fluxHelmGroup), []byte(fluxSourceGroup), []byte(argoGroup)}

// mayBeHelm reports whether Helm may render t: helm-controller's labels,
// Helm's release annotation, or an Argo CD application, whose source may
// be a chart.
func mayBeHelm(t Target) bool {
	return helmRelease(t) != "" || argoApp(t) != ""
}

// argoApp returns the Argo CD application that tracks t ("" if none), as
// Argo CD names it: <namespace>_<name> for applications outside its own
// namespace.
func argoApp(t Target) string {
	if id := t.Annotations[ArgoTrackingID]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return app
	}
	return t.Labels[InstanceLabel]
}

// release is a Helm release of the repository that renders targets: a
// Flux HelmRelease or an Argo CD Application with a Helm source.
type release struct {
	kind string // HelmRelease or Application
	ref  docRef // the object's document
	// name and namespace are the Helm release's.
	name, namespace string
	chart           *helm.Chart
	// source is the index in spec.sources of an Application's Helm
	// source, or -1 for spec.source.
	source int
	// changes are the indexes of the changes whose targets it renders.
	changes []int
}

// String names the release for errors and reports.
func (r *release) String() string {
	if r.ref.chain != nil {
		return fmt.Sprintf("%s %s (%s, rendered by %s)", r.kind, r.objectName(), r.ref.file, r.ref.chain.root().dir)
	}
	return fmt.Sprintf("%s %s (%s)", r.kind, r.objectName(), r.ref.file)
}

func (r *release) objectName() string {
	if r.ref.namespace == "" {
		return r.ref.key.name
	}
	return r.ref.namespace + "/" + r.ref.key.name
}

// layer is one source of a release's values, in Helm's order.
type layer struct {
	what   string
	values map[string]any
	// file is the values file of the repository the layer is, "" for
	// values held in the object.
	file string
	// prefix is, for values held in the object, the path to them
	// (spec.values, spec.source.helm.valuesObject).
	prefix helm.Path
	// writable: the layer belongs to this release's environment alone.
	writable bool
}

// findRelease finds the HelmRelease or Application that renders c's
// target: the one helm-controller's labels name, or the application
// Argo CD tracks it by.
func (a *applier) findRelease(c Change, dir string) (*release, error) {
	t := c.Target
	if name := t.Labels[fluxHelmName]; name != "" {
		ns := t.Labels[fluxHelmNamespace]
		if ns == "" {
			ns = t.Namespace
		}
		hr := Change{Target: Target{APIVersion: fluxHelmGroup + "/v2", Kind: "HelmRelease", Namespace: ns, Name: name}, Path: c.Path}
		ref, _, err := a.idx.resolve(hr, dir)
		if errors.Is(err, ErrTargetNotFound) {
			return nil, errNotHelm // the index's error says what to do
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s is installed by the Flux HelmRelease %s/%s: %w", ErrHelm, t, ns, name, err)
		}
		r := &release{kind: "HelmRelease", ref: ref, source: -1}
		r.name, r.namespace = t.Annotations[helmReleaseName], t.Annotations[helmReleaseNS]
		return r, nil
	}
	app := argoApp(t)
	if app == "" {
		return nil, errNotHelm
	}
	ns, name, ok := strings.Cut(app, "_")
	if !ok {
		ns, name = "", app
	}
	var refs []docRef
	for _, r := range a.idx.refs[identKey{argoGroup, "Application", name}] {
		if ns == "" || r.namespace == ns {
			refs = append(refs, r)
		}
	}
	if c.Path != "" {
		refs = a.idx.selectedBy([]string{cleanRepoPath(c.Path)}, refs)
	}
	if len(refs) > 1 {
		refs = a.idx.preferEnvs(refs)
	}
	switch len(refs) {
	case 0:
		return nil, errNotHelm
	case 1:
	default:
		return nil, fmt.Errorf("%w: %w: %s is tracked by the Argo CD application %s, defined in %s", ErrHelm, ErrAmbiguousTarget, t, app, renderersOf(refs))
	}
	r := &release{kind: "Application", ref: refs[0], name: name, source: -1}
	return r, nil
}

// object returns the release's object as its environment renders it
// (kustomize applies the overlays' patches), with the edits of this run
// when edited, and the whole output of that build (nil when no
// kustomization renders the object).
func (a *applier) object(r *release, edited bool) (map[string]any, map[string]map[string]any, error) {
	if r.ref.chain == nil {
		data, err := a.fileData(r.ref.file, edited)
		if err != nil {
			return nil, nil, err
		}
		docs, err := parseDocuments(data)
		if err != nil || r.ref.doc >= len(docs) {
			return nil, nil, fmt.Errorf("%s no longer parses: %w", r.ref.file, err)
		}
		obj, err := decodeNode(docs[r.ref.doc])
		return obj, nil, err
	}
	out, err := a.buildEnv(r.ref.chain.root().dir, edited)
	if err != nil {
		return nil, nil, fmt.Errorf("building %s: %w", r.ref.chain.root().file, err)
	}
	id := r.ref.key.group + "/" + r.ref.key.kind + "/" + r.ref.namespace + "/" + r.ref.key.name
	obj, ok := out[id]
	if !ok {
		return nil, nil, fmt.Errorf("%s does not render %s", r.ref.chain.root().file, id)
	}
	return obj, out, nil
}

// fileData returns a file's bytes, with the run's edits when edited.
func (a *applier) fileData(name string, edited bool) ([]byte, error) {
	if fe := a.files[name]; fe != nil {
		if edited {
			return fe.data, nil
		}
		return fe.orig, nil
	}
	data, _, err := readLimited(a.fsys, name, a.limit)
	return data, err
}

// decodeNode turns a parsed document into plain values.
func decodeNode(doc *yaml.Node) (map[string]any, error) {
	s, err := yaml.String(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := sigsyaml.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// convert decodes plain values into a typed struct through JSON.
func convert(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

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
	return name
}

// loaded is what a release's object says of its values and its output.
type loaded struct {
	layers []layer
	// post are a HelmRelease's post-renderers.
	post []fluxPostRenderer
}

// load reads the release's object, chart, values layers and post-renderers:
// as the repository holds them, or with this run's edits when edited.
func (a *applier) load(ctx context.Context, r *release, edited bool) (loaded, error) {
	obj, out, err := a.object(r, edited)
	if err != nil {
		return loaded{}, err
	}
	if r.kind == "HelmRelease" {
		return a.loadFlux(ctx, r, obj, out)
	}
	layers, err := a.loadArgo(ctx, r, obj)
	return loaded{layers: layers}, err
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
	// Entries with a targetPath are set last, over the inline values too.
	var layers, targeted []layer
	for _, vf := range hr.Spec.ValuesFrom {
		l, err := valuesFrom(vf.Kind, vf.Name, vf.ValuesKey, vf.TargetPath, hr.Metadata.Namespace, out)
		switch {
		case err != nil && vf.Optional:
			continue
		case err != nil:
			return loaded{}, fmt.Errorf("%s: %w", r, err)
		case vf.TargetPath != "":
			targeted = append(targeted, l)
		default:
			a.generatedFrom(r, &l, vf.Name, nsOr(vf.ValuesKey, "values.yaml"))
			layers = append(layers, l)
		}
	}
	layers = append(layers, layer{
		what:     "spec.values of " + r.String(),
		values:   hr.Spec.Values,
		prefix:   keysPath("spec", "values"),
		writable: true,
	})
	return loaded{layers: append(layers, targeted...), post: hr.Spec.PostRenderers}, nil
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
		n, _ := dig(obj, "metadata", "name").(string)
		if strings.HasPrefix(id, "/ConfigMap/"+ns+"/") && (n == name || generatedName(n, name)) {
			cm = obj
			break
		}
	}
	if cm == nil {
		return layer{}, fmt.Errorf("%s: the ConfigMap is not rendered with the HelmRelease", what)
	}
	text, ok := dig(cm, "data", key).(string)
	if !ok {
		return layer{}, fmt.Errorf("%s: the ConfigMap has no such key", what)
	}
	if targetPath != "" {
		vals := map[string]any{}
		if err := strvals.ParseInto(targetPath+"="+text, vals); err != nil {
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
	if r.ref.chain == nil {
		return
	}
	env := r.ref.chain.root()
	seen := map[*kustomization]bool{env: true}
	for queue := []*kustomization{env}; len(queue) > 0; queue = queue[1:] {
		k := queue[0]
		for _, g := range slices.Backward(k.generators) {
			file, ok := g.files[key]
			if g.name != name && !generatedName(name, g.name) || !ok {
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
			l.what = fmt.Sprintf("the values file %s (ConfigMap %s, key %s)", file, g.name, key)
			l.file, l.writable = file, a.ownFile(env, file)
			return
		}
		for _, res := range k.resources {
			if sub := a.idx.graph.byDir[res]; sub != nil && !seen[sub] {
				seen[sub] = true
				queue = append(queue, sub)
			}
		}
	}
}

// ownFile reports whether env is the only environment that reads file
// (with those built on it).
func (a *applier) ownFile(env *kustomization, file string) bool {
	for _, k := range a.readers(file) {
		if a.idx.isEnv(k) && k != env && !k.includes(env) {
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
		src, err := a.sourceObject("OCIRepository", ref.Name, nsOr(ref.Namespace, hr.Metadata.Namespace), out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := dig(src, "spec", "url").(string)
		version, _ := dig(src, "spec", "ref", "semver").(string)
		if tag, _ := dig(src, "spec", "ref", "tag").(string); tag != "" {
			version = tag
		}
		return a.fetchChart(ctx, r, helm.ChartRef{RepoURL: path.Dir(u), Chart: path.Base(u), Version: version})
	}
	if hr.Spec.Chart == nil {
		return nil, fmt.Errorf("%s has neither spec.chart nor spec.chartRef", r)
	}
	spec := hr.Spec.Chart.Spec
	srcNS := nsOr(spec.SourceRef.Namespace, hr.Metadata.Namespace)
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
		u, _ := dig(src, "spec", "url").(string)
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
			u, _ = dig(src, "spec", "url").(string)
		}
		var err error
		if ch, err = a.localChart(r, u, spec.Chart); err != nil {
			return nil, err
		}
		// Paths from the root of the repository, as source-controller reads them.
		read = func(name string) ([]byte, error) { return a.fileData(cleanRepoPath(name), false) }
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

func nsOr(ns, def string) string {
	if ns != "" {
		return ns
	}
	return def
}

// sourceObject finds a Flux source: in the HelmRelease's build, else in
// the repository's index.
func (a *applier) sourceObject(kind, name, ns string, out map[string]map[string]any) (map[string]any, error) {
	if obj, ok := out[fluxSourceGroup+"/"+kind+"/"+ns+"/"+name]; ok {
		return obj, nil
	}
	var found []map[string]any
	var where []string
	for _, ref := range a.idx.refs[identKey{fluxSourceGroup, kind, name}] {
		if ref.namespace != ns && ref.namespace != "" {
			continue
		}
		doc, err := a.doc(ref.file, ref.doc)
		if err != nil {
			continue
		}
		obj, err := decodeNode(doc)
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(found, func(o map[string]any) bool { return equalSpec(o, obj) }) {
			found = append(found, obj)
			where = append(where, ref.file)
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

// fetchChart fetches a chart of a chart repository or registry, once per run.
func (a *applier) fetchChart(ctx context.Context, r *release, ref helm.ChartRef) (*helm.Chart, error) {
	if a.charts == nil {
		return nil, fmt.Errorf("%s: its chart %s is in %s, and no chart repository is configured", r, ref.Chart, redactURL(ref.RepoURL))
	}
	ch, err := a.charts.Fetch(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	return ch, nil
}

// localChart loads a chart directory of this repository, once per run; a
// git source of another repository is refused.
func (a *applier) localChart(r *release, repoURL, dir string) (*helm.Chart, error) {
	if !a.isThisRepo(repoURL) {
		return nil, fmt.Errorf("%s: its chart %s is in the git repository %s, not in this one", r, dir, redactURL(repoURL))
	}
	dir = cleanRepoPath(dir)
	if ch, ok := a.localCharts[dir]; ok {
		return ch, nil
	}
	ch, err := helm.LoadDir(a.fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the chart %s: %w", r, dir, err)
	}
	a.localCharts[dir] = ch
	return ch, nil
}

// isThisRepo reports whether a git URL is the repository being edited:
// the same host and path as the configured URL, or any URL when none is
// configured; "" is a source the repository does not hold, taken to be it.
func (a *applier) isThisRepo(u string) bool {
	if a.repoURL == "" || u == "" {
		return true
	}
	return normalRepoURL(u) == normalRepoURL(a.repoURL)
}

// normalRepoURL reduces a git URL to host and path: scheme, credentials,
// port-less ssh forms and a trailing .git do not tell repositories apart.
func normalRepoURL(u string) string {
	u = strings.TrimSpace(u)
	if !strings.Contains(u, "://") {
		if host, p, ok := strings.Cut(u, ":"); ok { // git@host:org/repo
			u = "ssh://" + host + "/" + p
		}
	}
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	p := strings.TrimSuffix(strings.Trim(pu.Path, "/"), ".git")
	return strings.ToLower(pu.Hostname()) + "/" + p
}

// redactURL drops credentials from a URL for messages.
func redactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil {
		return u
	}
	pu.User = nil
	return pu.String()
}

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
	Helm           *struct {
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
		return s.Ref == "" && (s.Chart != "" || s.Helm != nil || s.Path != "" && a.idx.charts[cleanRepoPath(s.Path)])
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
			continue // a file of a chart from a chart repository
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
	layers = append(layers, layer{what: "helm.valuesObject of " + r.String(), values: src.Helm.ValuesObject, prefix: append(prefix, helm.Key("valuesObject")), writable: true})
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
				return cleanRepoPath(rest), nil
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
		return cleanRepoPath(vf), nil
	}
	if src.Chart != "" {
		return "", nil
	}
	return cleanRepoPath(path.Join(src.Path, vf)), nil
}

// ownValueFile reports whether a values file belongs to r alone: no other
// Application of the repository reads it, and it is not a chart's own
// values.yaml.
func (a *applier) ownValueFile(r *release, file string) bool {
	if path.Base(file) == "values.yaml" && a.idx.charts[path.Dir(file)] {
		return false
	}
	for _, refs := range a.idx.refs {
		for _, ref := range refs {
			if ref.key.group != argoGroup || ref.key.kind != "Application" || ref.file == r.ref.file && ref.doc == r.ref.doc {
				continue
			}
			doc, err := a.doc(ref.file, ref.doc)
			if err != nil {
				continue
			}
			obj, err := decodeNode(doc)
			if err != nil {
				continue
			}
			var other argoApplication
			if convert(obj, &other) != nil {
				continue
			}
			if _, src, ok := a.helmSource(&other); ok && src.Helm != nil {
				for _, vf := range src.Helm.ValueFiles {
					if f, err := a.valueFile(&other, src, vf); err == nil && f == file {
						return false
					}
				}
			}
		}
	}
	return true
}
