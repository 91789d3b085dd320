package render

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/yamledit"
)

// ErrHelm means a target that Helm renders could not be followed to the
// values that size it: its release, chart or values could not be read,
// or no values key sizes the container alone.
var ErrHelm = errors.New("helm release")

// Deployer names, from a live object's metadata, what deploys it: the
// Flux HelmRelease whose helm-controller installed it
// (helmrelease/<namespace>/<name>), the Argo CD application that tracks
// it (argocd/<application>), or the Flux Kustomization that applied it
// (kustomization/<namespace>/<name>), else the Helm release that Helm's
// annotations name (helm/<namespace>/<release>); "" when its metadata
// names none. The instance label, which charts also set, counts last.
func Deployer(t repoindex.Target) string {
	if name := t.Labels[repoindex.FluxHelmName]; name != "" {
		return "helmrelease/" + or(t.Labels[repoindex.FluxHelmNamespace], t.Namespace) + "/" + name
	}
	if id := t.Annotations[repoindex.ArgoTrackingID]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return "argocd/" + app
	}
	if name := t.Labels[repoindex.FluxNameLabel]; name != "" {
		return "kustomization/" + t.Labels[repoindex.FluxNamespaceLabel] + "/" + name
	}
	if name := t.Annotations[repoindex.HelmReleaseName]; name != "" {
		// Helm installed it; Argo CD renders charts without installing
		// them, so the instance label is the release's, no application's.
		return "helm/" + or(t.Annotations[repoindex.HelmReleaseNS], t.Namespace) + "/" + name
	}
	if app := t.Labels[repoindex.InstanceLabel]; app != "" {
		return "argocd/" + app
	}
	return ""
}

// release is a Helm release of the repository that renders targets: a
// Flux HelmRelease or an Argo CD Application with a Helm source.
type release struct {
	kind string           // HelmRelease or Application
	ref  repoindex.DocRef // the object's document
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
	if r.ref.Chain != nil {
		return fmt.Sprintf("%s %s (%s, rendered by %s)", r.kind, r.objectName(), r.ref.File, r.ref.Chain.Root().Dir)
	}
	return fmt.Sprintf("%s %s (%s)", r.kind, r.objectName(), r.ref.File)
}

func (r *release) objectName() string {
	if r.ref.Namespace == "" {
		return r.ref.Key.Name
	}
	return r.ref.Namespace + "/" + r.ref.Key.Name
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
	if name := t.Labels[repoindex.FluxHelmName]; name != "" {
		ns := t.Labels[repoindex.FluxHelmNamespace]
		if ns == "" {
			ns = t.Namespace
		}
		hr := Change{Target: repoindex.Target{APIVersion: repoindex.FluxHelmGroup + "/v2", Kind: "HelmRelease", Namespace: ns, Name: name}, Path: c.Path}
		ref, _, err := a.idx.Resolve(hr.sought(), dir)
		if errors.Is(err, repoindex.ErrTargetNotFound) {
			return nil, errNotHelm // the index's error says what to do
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s is installed by the Flux HelmRelease %s/%s: %w", ErrHelm, t, ns, name, err)
		}
		r := &release{kind: "HelmRelease", ref: ref, source: -1}
		r.name, r.namespace = t.Annotations[repoindex.HelmReleaseName], t.Annotations[repoindex.HelmReleaseNS]
		return r, nil
	}
	app := repoindex.ArgoApp(t)
	if app == "" {
		return a.releaseNamed(c)
	}
	ns, name, ok := strings.Cut(app, "_")
	if !ok {
		ns, name = "", app
	}
	var refs []repoindex.DocRef
	for _, r := range a.idx.Refs[repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "Application", Name: name}] {
		if ns == "" || r.Namespace == ns {
			refs = append(refs, r)
		}
	}
	refs = narrow(a.idx, c, refs)
	switch len(refs) {
	case 0:
		// app.kubernetes.io/instance is also a chart's label of its
		// release, whatever installed it.
		return a.releaseNamed(c)
	case 1:
	default:
		return nil, fmt.Errorf("%w: %w: %s is tracked by the Argo CD application %s, defined in %s", ErrHelm, repoindex.ErrAmbiguousTarget, t, app, repoindex.RenderersOf(refs))
	}
	r := &release{kind: "Application", ref: refs[0], name: name, source: -1}
	return r, nil
}

// releaseNamed finds the HelmRelease whose Helm release Helm's own
// annotations on c's target name, for a target without helm-controller's
// labels (helm-controller before it set them, or a label a post-renderer
// dropped): the HelmRelease whose release name and namespace, as
// helm-controller works them out, are those.
func (a *applier) releaseNamed(c Change) (*release, error) {
	t := c.Target
	name, ns := t.Annotations[repoindex.HelmReleaseName], t.Annotations[repoindex.HelmReleaseNS]
	if name == "" {
		return nil, errNotHelm
	}
	if ns == "" {
		ns = t.Namespace
	}
	var refs []repoindex.DocRef
	for _, n := range a.releasesNamed()[name] {
		if n.namespace == "" || n.namespace == ns {
			refs = append(refs, n.ref)
		}
	}
	refs = narrow(a.idx, c, refs)
	switch len(refs) {
	case 0:
		return nil, errNotHelm
	case 1:
	default:
		return nil, fmt.Errorf("%w: %w: %s is installed by the Helm release %s/%s, which the HelmReleases in %s all name",
			ErrHelm, repoindex.ErrAmbiguousTarget, t, ns, name, repoindex.RenderersOf(refs))
	}
	return &release{kind: "HelmRelease", ref: refs[0], name: name, namespace: ns, source: -1}, nil
}

// narrow keeps of refs, the objects that may render c's target's
// release, those the directory c names renders, then, of several, those
// of environments.
func narrow(idx *repoindex.Index, c Change, refs []repoindex.DocRef) []repoindex.DocRef {
	if c.Path != "" {
		refs = idx.SelectedBy([]string{repoindex.CleanRepoPath(c.Path)}, refs)
	}
	if len(refs) > 1 {
		refs = idx.PreferEnvs(refs)
	}
	return refs
}

// namedRelease is a HelmRelease and the namespace of the Helm release it
// installs ("" when neither it nor its environment sets one).
type namedRelease struct {
	ref       repoindex.DocRef
	namespace string
}

// releasesNamed maps the name of the Helm release each HelmRelease of the
// index installs, as helm-controller works it out, to the HelmReleases;
// worked out once per run, in the order of their files.
func (a *applier) releasesNamed() map[string][]namedRelease {
	if a.releaseNames != nil {
		return a.releaseNames
	}
	a.releaseNames = map[string][]namedRelease{}
	for k, refs := range a.idx.Refs {
		if k.Group != repoindex.FluxHelmGroup || k.Kind != "HelmRelease" {
			continue
		}
		for _, ref := range refs {
			obj, ok := a.decoded(ref)
			if !ok {
				continue
			}
			var hr fluxHelmRelease
			if convert(obj, &hr) != nil {
				continue
			}
			// The identity as rendered: an overlay may set the namespace
			// or prefix the name.
			hr.Metadata.Name, hr.Metadata.Namespace = ref.Key.Name, ref.Namespace
			name := hr.releaseName()
			a.releaseNames[name] = append(a.releaseNames[name], namedRelease{ref: ref, namespace: or(hr.Spec.TargetNamespace, ref.Namespace)})
		}
	}
	for _, named := range a.releaseNames {
		slices.SortFunc(named, func(x, y namedRelease) int {
			return cmp.Or(strings.Compare(x.ref.File, y.ref.File), cmp.Compare(x.ref.Doc, y.ref.Doc), strings.Compare(x.ref.RenderedFrom(), y.ref.RenderedFrom()))
		})
	}
	return a.releaseNames
}

// object returns the release's object as its environment renders it
// (kustomize applies the overlays' patches), with the edits of this run
// when edited, and the whole output of that build (nil when no
// kustomization renders the object).
func (a *applier) object(r *release, edited bool) (map[string]any, map[string]map[string]any, error) {
	if r.ref.Chain == nil {
		data, err := a.fileData(r.ref.File, edited)
		if err != nil {
			return nil, nil, err
		}
		docs, err := yamledit.ParseDocuments(data)
		if err != nil || r.ref.Doc >= len(docs) {
			return nil, nil, fmt.Errorf("%s no longer parses: %w", r.ref.File, err)
		}
		obj, err := decodeNode(docs[r.ref.Doc])
		return obj, nil, err
	}
	out, err := a.buildEnv(r.ref.Chain.Root().Dir, edited)
	if err != nil {
		return nil, nil, fmt.Errorf("building %s: %w", r.ref.Chain.Root().File, err)
	}
	id := r.ref.Key.Group + "/" + r.ref.Key.Kind + "/" + r.ref.Namespace + "/" + r.ref.Key.Name
	obj, ok := out[id]
	if !ok {
		return nil, nil, fmt.Errorf("%s does not render %s", r.ref.Chain.Root().File, id)
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
	data, _, err := repoindex.ReadLimited(a.fsys, name, a.limit)
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

// decoded returns the document ref points at as plain values, or false
// when it no longer parses.
func (a *applier) decoded(ref repoindex.DocRef) (map[string]any, bool) {
	doc, err := a.doc(ref.File, ref.Doc)
	if err != nil {
		return nil, false
	}
	obj, err := decodeNode(doc)
	return obj, err == nil
}

// convert decodes plain values into a typed struct through JSON.
func convert(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
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

// fetchChart fetches a chart of a chart repository or registry, once per run.
func (a *applier) fetchChart(ctx context.Context, r *release, ref helm.ChartRef) (*helm.Chart, error) {
	if a.charts == nil {
		return nil, fmt.Errorf("%s: its chart %s is in %s, and no chart repository is configured", r, ref.Chart, redactURL(ref.RepoURL))
	}
	f, ok := a.fetched[ref]
	switch {
	case ok:
	case a.wanted != nil:
		a.wanted[ref] = true
		return nil, errChartWanted
	default:
		f.chart, f.err = a.charts.Fetch(ctx, ref)
	}
	if f.err != nil {
		return nil, fmt.Errorf("%s: %w", r, f.err)
	}
	return f.chart, nil
}

// localChart loads a chart directory of this repository, once per run; a
// git source of another repository is refused.
func (a *applier) localChart(r *release, repoURL, dir string) (*helm.Chart, error) {
	if !a.isThisRepo(repoURL) {
		return nil, fmt.Errorf("%s: its chart %s is in the git repository %s, not in this one", r, dir, redactURL(repoURL))
	}
	dir = repoindex.CleanRepoPath(dir)
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
