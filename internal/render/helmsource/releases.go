package helmsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// FindRelease finds the HelmRelease or Application that renders c's
// target: the one helm-controller's labels name, or the application
// Argo CD tracks it by.
func (a *Sources) FindRelease(c repoindex.Sought, dir string) (*Release, error) {
	t := c.Target
	if name := t.Labels[repoindex.FluxHelmName]; name != "" {
		ns := t.Labels[repoindex.FluxHelmNamespace]
		if ns == "" {
			ns = t.Namespace
		}
		hr := repoindex.Sought{Target: repoindex.Target{APIVersion: repoindex.FluxHelmGroup + "/v2", Kind: "HelmRelease", Namespace: ns, Name: name}, Path: c.Path}
		// The live HelmRelease's own labels (kustomize-controller's, Argo
		// CD's) say which Kustomization or Application applies it, and
		// so which of the environments patching a shared base it is.
		if live, ok := a.Index.LiveHelmRelease(ns, name); ok {
			hr.Target.Labels, hr.Target.Annotations = stringMap(tree.Dig(live.Object, "metadata", "labels")), stringMap(tree.Dig(live.Object, "metadata", "annotations"))
		}
		ref, _, err := a.Index.Resolve(hr, dir)
		if elsewhere := a.Index.Elsewhere(hr.Target); elsewhere != nil {
			// The Kustomization that applies the release deploys
			// another branch or repository: no marker would help.
			return nil, fmt.Errorf("%w: %s is installed by the Flux HelmRelease %s/%s: %w", ErrHelm, t, ns, name, elsewhere)
		}
		if errors.Is(err, repoindex.ErrTargetNotFound) {
			return nil, ErrNotHelm // the index's error says what to do
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s is installed by the Flux HelmRelease %s/%s: %w", ErrHelm, t, ns, name, err)
		}
		r := &Release{Kind: "HelmRelease", Ref: ref, Source: -1, LiveNamespace: ns}
		r.Name, r.Namespace = t.Annotations[repoindex.HelmReleaseName], t.Annotations[repoindex.HelmReleaseNS]
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
	for _, r := range a.Index.Refs[repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "Application", Name: name}] {
		if ns == "" || r.Namespace == ns {
			refs = append(refs, r)
		}
	}
	refs = narrow(a.Index, c, refs)
	switch len(refs) {
	case 0:
		// app.kubernetes.io/instance is also a chart's label of its
		// release, whatever installed it.
		return a.releaseNamed(c)
	case 1:
	default:
		return nil, fmt.Errorf("%w: %w: %s is tracked by the Argo CD application %s, defined in %s", ErrHelm, repoindex.ErrAmbiguousTarget, t, app, repoindex.RenderersOf(refs))
	}
	r := &Release{Kind: "Application", Ref: refs[0], Name: name, Source: -1}
	return r, nil
}

// releaseNamed finds the HelmRelease whose Helm release Helm's own
// annotations on c's target name, for a target without helm-controller's
// labels (helm-controller before it set them, or a label a post-renderer
// dropped): the HelmRelease whose release name and namespace, as
// helm-controller works them out, are those.
func (a *Sources) releaseNamed(c repoindex.Sought) (*Release, error) {
	t := c.Target
	name, ns := t.Annotations[repoindex.HelmReleaseName], t.Annotations[repoindex.HelmReleaseNS]
	if name == "" {
		return nil, ErrNotHelm
	}
	if ns == "" {
		ns = t.Namespace
	}
	var refs []repoindex.DocRef
	for _, n := range a.releasesNamed()[name] {
		if n.Namespace == "" || n.Namespace == ns {
			refs = append(refs, n.Ref)
		}
	}
	refs = narrow(a.Index, c, refs)
	switch len(refs) {
	case 0:
		return nil, ErrNotHelm
	case 1:
	default:
		return nil, fmt.Errorf("%w: %w: %s is installed by the Helm release %s/%s, which the HelmReleases in %s all name",
			ErrHelm, repoindex.ErrAmbiguousTarget, t, ns, name, repoindex.RenderersOf(refs))
	}
	return &Release{Kind: "HelmRelease", Ref: refs[0], Name: name, Namespace: ns, Source: -1}, nil
}

// narrow keeps of refs, the objects that may render c's target's
// release, those the directory c names renders, then, of several, those
// of environments.
func narrow(idx *repoindex.Index, c repoindex.Sought, refs []repoindex.DocRef) []repoindex.DocRef {
	if c.Path != "" {
		refs = idx.SelectedBy([]string{repoindex.CleanRepoPath(c.Path)}, refs)
	}
	if len(refs) > 1 {
		refs = idx.PreferEnvs(refs)
	}
	return refs
}

// releasesNamed maps the name of the Helm release each HelmRelease of the
// index installs, as helm-controller works it out, to the HelmReleases;
// worked out once per run, in the order of their files.
func (a *Sources) releasesNamed() map[string][]NamedRelease {
	if a.releaseNames != nil {
		return a.releaseNames
	}
	a.releaseNames = map[string][]NamedRelease{}
	for k, refs := range a.Index.Refs {
		if k.Group != repoindex.FluxHelmGroup || k.Kind != "HelmRelease" {
			continue
		}
		for _, ref := range refs {
			obj, ok := a.decoded(ref)
			if !ok {
				continue
			}
			var hr FluxHelmRelease
			if Convert(obj, &hr) != nil {
				continue
			}
			// The identity as rendered: an overlay may set the namespace
			// or prefix the name.
			hr.Metadata.Name, hr.Metadata.Namespace = ref.Key.Name, ref.Namespace
			name := hr.ReleaseName()
			a.releaseNames[name] = append(a.releaseNames[name], NamedRelease{Ref: ref, Namespace: OrDefault(hr.Spec.TargetNamespace, ref.Namespace)})
		}
	}
	for _, named := range a.releaseNames {
		slices.SortFunc(named, func(x, y NamedRelease) int {
			return cmp.Or(strings.Compare(x.Ref.File, y.Ref.File), cmp.Compare(x.Ref.Doc, y.Ref.Doc), strings.Compare(x.Ref.RenderedFrom(), y.Ref.RenderedFrom()))
		})
	}
	return a.releaseNames
}

// object returns the release's object as its environment renders it
// (kustomize applies the overlays' patches), with the edits of this run
// when edited, and the whole output of that build (nil when no
// kustomization renders the object).
func (a *Sources) object(r *Release, edited bool) (map[string]any, map[string]map[string]any, error) {
	if r.Ref.Chain == nil {
		data, err := a.fileData(r.Ref.File, edited)
		if err != nil {
			return nil, nil, err
		}
		docs, err := yamledit.ParseDocuments(data)
		if err != nil || r.Ref.Doc >= len(docs) {
			return nil, nil, fmt.Errorf("%s no longer parses: %w", r.Ref.File, err)
		}
		obj, err := DecodeNode(docs[r.Ref.Doc])
		return obj, nil, err
	}
	out, err := a.Edits.BuildEnv(r.Ref.Chain.Root().Dir, edited)
	if err != nil {
		return nil, nil, fmt.Errorf("building %s: %w", r.Ref.Chain.Root().File, err)
	}
	id := r.Ref.Key.Group + "/" + r.Ref.Key.Kind + "/" + r.Ref.Namespace + "/" + r.Ref.Key.Name
	obj, ok := out[id]
	if !ok {
		return nil, nil, fmt.Errorf("%s does not render %s", r.Ref.Chain.Root().File, id)
	}
	return obj, out, nil
}

// fileData returns a file's bytes, with the run's edits when edited.
func (a *Sources) fileData(name string, edited bool) ([]byte, error) {
	if data, orig, ok := a.Edits.FileEdits(name); ok {
		if edited {
			return data, nil
		}
		return orig, nil
	}
	if f := a.Index.Files[name]; f != nil {
		// As indexed: a live or generated Application has no file.
		return f.Data, nil
	}
	data, _, err := repoindex.ReadLimited(a.FS, name, a.Limit)
	return data, err
}

// decoded returns the document ref points at as plain values, or false
// when it no longer parses.
func (a *Sources) decoded(ref repoindex.DocRef) (map[string]any, bool) {
	doc, err := a.Edits.Doc(ref.File, ref.Doc)
	if err != nil {
		return nil, false
	}
	obj, err := DecodeNode(doc)
	return obj, err == nil
}

// Loaded is what a release's object says of its values and its output.
type Loaded struct {
	Layers []Layer
	// Post are a HelmRelease's post-renderers.
	Post []FluxPostRenderer
}

// Load reads the release's object, chart, values layers and post-renderers:
// as the repository holds them, or with this run's edits when edited.
func (a *Sources) Load(ctx context.Context, r *Release, edited bool) (Loaded, error) {
	obj, out, err := a.object(r, edited)
	if err != nil {
		return Loaded{}, err
	}
	if r.Kind == "HelmRelease" {
		if !edited {
			if err := a.checkLive(r, obj); err != nil {
				return Loaded{}, err
			}
		}
		return a.loadFlux(ctx, r, obj, out)
	}
	layers, err := a.loadArgo(ctx, r, obj)
	return Loaded{Layers: layers}, err
}

// fetchChart fetches a chart of a chart repository or registry, once per run.
func (a *Sources) fetchChart(ctx context.Context, r *Release, ref chartfetch.ChartRef) (*helm.Chart, error) {
	if a.Charts == nil {
		return nil, fmt.Errorf("%s: its chart %s is in %s, and no chart repository is configured", r, ref.Chart, repoindex.RedactURL(ref.RepoURL))
	}
	f, ok := a.Fetched[ref]
	switch {
	case ok:
	case a.Wanted != nil:
		a.Wanted[ref] = true
		return nil, ErrChartWanted
	default:
		f.Chart, f.Err = a.Charts.Fetch(ctx, ref)
	}
	if f.Err != nil {
		return nil, fmt.Errorf("%s: %w", r, f.Err)
	}
	return f.Chart, nil
}

// localChart loads a chart directory of this repository, once per run; a
// git source of another repository is refused.
func (a *Sources) localChart(ctx context.Context, r *Release, repoURL, dir string) (*helm.Chart, error) {
	if !a.isThisRepo(repoURL) {
		return nil, fmt.Errorf("%s: its chart %s is in the git repository %s, not in this one", r, dir, repoindex.RedactURL(repoURL))
	}
	dir = repoindex.CleanRepoPath(dir)
	if ch, ok := a.LocalCharts[dir]; ok {
		return ch, nil
	}
	load := chartfetch.LoadDir
	if a.Charts != nil {
		load = func(fsys fs.FS, dir string) (*helm.Chart, error) { return a.Charts.LoadDir(ctx, fsys, dir) }
	}
	ch, err := load(a.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the chart %s: %w", r, dir, err)
	}
	a.LocalCharts[dir] = ch
	return ch, nil
}

// isThisRepo reports whether a git URL is the repository being edited:
// the same host and path as the configured URL, or any URL when none is
// configured; "" is a source the repository does not hold, taken to be it.
func (a *Sources) isThisRepo(u string) bool {
	if a.RepoURL == "" || u == "" {
		return true
	}
	return repoindex.NormalRepoURL(u) == repoindex.NormalRepoURL(a.RepoURL)
}

// Release is a Helm release of the repository that renders targets: a
// Flux HelmRelease or an Argo CD Application with a Helm source.
type Release struct {
	Kind string           // HelmRelease or Application
	Ref  repoindex.DocRef // the object's document
	// Name and namespace are the Helm release's.
	Name, Namespace string
	// LiveNamespace is the HelmRelease's namespace as the cluster gives
	// it (helm-controller's labels on the target); "" when not known.
	LiveNamespace string
	Chart         *helm.Chart
	// SkipSchema follows a HelmRelease's disableSchemaValidation: its
	// values are not checked against the chart's schema.
	SkipSchema bool
	// Source is the index in spec.sources of an Application's Helm
	// source, or -1 for spec.source.
	Source int
	// Changes are the indexes of the changes whose targets it renders.
	Changes []int
}

// String names the release for errors and reports.
func (r *Release) String() string {
	if r.Ref.Chain != nil {
		return fmt.Sprintf("%s %s (%s, rendered by %s)", r.Kind, r.ObjectName(), r.Ref.File, r.Ref.Chain.Root().Dir)
	}
	return fmt.Sprintf("%s %s (%s)", r.Kind, r.ObjectName(), r.Ref.File)
}

// ObjectName is the namespace/name of the object that defines the release.
func (r *Release) ObjectName() string {
	if r.Ref.Namespace == "" {
		return r.Ref.Key.Name
	}
	return r.Ref.Namespace + "/" + r.Ref.Key.Name
}

// BuildID is the release object's id in a kustomize build.
func (r *Release) BuildID() string {
	return r.Ref.Key.Group + "/" + r.Ref.Key.Kind + "/" + r.Ref.Namespace + "/" + r.Ref.Key.Name
}

// NamedRelease is a HelmRelease and the namespace of the Helm release it
// installs ("" when neither it nor its environment sets one).
type NamedRelease struct {
	Ref       repoindex.DocRef
	Namespace string
}

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
		return "helmrelease/" + OrDefault(t.Labels[repoindex.FluxHelmNamespace], t.Namespace) + "/" + name
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
		return "helm/" + OrDefault(t.Annotations[repoindex.HelmReleaseNS], t.Namespace) + "/" + name
	}
	if app := t.Labels[repoindex.InstanceLabel]; app != "" {
		return "argocd/" + app
	}
	return ""
}

// stringMap returns the string values of a decoded map, as labels and
// annotations are.
func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
