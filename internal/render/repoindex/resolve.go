package repoindex

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// scope is a directory the target's source must be rendered from, and why.
type scope struct {
	dirs []string
	why  string
	// strict scopes come from the user; the others from cluster metadata,
	// and narrow only when the repository holds what they point at.
	strict bool
	// deployer scopes are an Argo CD or Flux object's paths; why names it.
	deployer bool
	// claim scopes come from an Application that names the target only
	// through its instance label and is not the cluster's (a file of the
	// repository, or generated from one): any team may write such a
	// claim, so the other files that define the target stay candidates.
	claim bool
}

// scopes returns the narrowings that apply to c, in the order applied.
func (idx *Index) scopes(c Sought) []scope {
	var out []scope
	if c.Path != "" {
		out = append(out, scope{dirs: []string{CleanRepoPath(c.Path)}, why: "path " + c.Path, strict: true})
	}
	t := c.Target
	app, claim := "", false
	if id := t.Annotations[ArgoTrackingID]; id != "" {
		app, _, _ = strings.Cut(id, ":")
	} else if inst := t.Labels[InstanceLabel]; inst != "" {
		app, claim = inst, !idx.deployers["app:"+inst].Live()
	}
	if dirs := idx.apps[app]; app != "" && len(dirs) > 0 {
		name, _, _ := idx.describe("app:"+app, "Argo CD application "+app)
		out = append(out, scope{dirs: dirs, why: name, deployer: true, claim: claim})
	}
	if name := t.Labels[FluxNameLabel]; name != "" {
		key := t.Labels[FluxNamespaceLabel] + "/" + name
		if dirs := idx.fluxes[key]; len(dirs) > 0 {
			name, _, _ := idx.describe("flux:"+key, "Flux Kustomization "+key)
			out = append(out, scope{dirs: dirs, why: name, deployer: true})
		}
	}
	return out
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// RenderedFrom returns the directory a document is rendered from: its
// kustomization's, or its own.
func (r DocRef) RenderedFrom() string {
	if r.Chain != nil {
		return r.Chain.Root().Dir
	}
	return path.Dir(r.File)
}

// where describes a document for errors.
func (r DocRef) where() string {
	s := fmt.Sprintf("%s (document %d)", r.File, r.Doc+1)
	if r.Chain != nil {
		s += " via " + r.Chain.Root().File
	}
	return s
}

// selects reports whether dir, a directory a hint names, renders r: the
// kustomization in exactly that directory, whatever includes it, when it
// has one; otherwise the manifests under it and the kustomizations under
// it that no other one under it includes, as Flux builds a path without a
// kustomization.
func (idx *Index) selects(dir string, r DocRef) bool {
	if k := idx.Graph.ByDir[dir]; k != nil && !k.component {
		return r.Chain != nil && r.Chain.Root() == k
	}
	if r.Chain == nil {
		return under(r.File, dir)
	}
	k := r.Chain.Root()
	if !under(k.Dir, dir) {
		return false
	}
	for _, other := range idx.Graph.ByDir {
		if other != k && under(other.Dir, dir) && other.Includes(k) {
			return false
		}
	}
	return true
}

// SharedFor says why r's file must not be edited in place for r's
// renderer, or returns "": an environment that does not include the
// renderer renders the file too, or the renderer renders it twice.
// Kustomizations that include the renderer render the change with it, as
// they render anything it holds.
func (idx *Index) SharedFor(r DocRef) string {
	if r.Chain == nil {
		return ""
	}
	k := r.Chain.Root()
	ways := 0
	var others []string
	for _, c := range idx.Graph.Chains(r.File) {
		switch {
		case c.Root() == k:
			ways++
		case containsK(c, k):
			// An overlay built on the renderer.
		case idx.IsEnv(c.Root()) && !slices.Contains(others, c.Root().Dir):
			others = append(others, c.Root().Dir)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return fmt.Sprintf("%s is also rendered by %s", r.File, strings.Join(others, ", "))
	}
	if ways > 1 {
		return fmt.Sprintf("%s renders %s more than once", k.File, r.File)
	}
	return ""
}

// Resolve picks the document that defines c's target: a marker comment
// first, else the index narrowed by the change's path and the target's
// Argo CD or Flux metadata, each naming the one directory that renders
// it. A manifest without a namespace matches any namespace, but one whose
// namespace is explicit and equal wins. Without a hint, what an environment
// renders (a kustomization nothing includes, or one something names as
// deployed) wins over what only a base renders. It returns a nil finder
// for a container of a pod template.
func (idx *Index) Resolve(c Sought, dir string) (DocRef, Finder, error) {
	t := c.Target
	key := MarkerValue(t.Namespace, t.Name, c.Container)
	switch ms := idx.markers[key]; len(ms) {
	case 0:
	case 1:
		r, err := idx.resolveMarker(c, ms[0], dir)
		return r, markerFinder(key), err
	default:
		var where []string
		for _, r := range ms {
			where = append(where, r.where())
		}
		slices.Sort(where)
		return DocRef{}, nil, fmt.Errorf("%w: marker %q is in %s", ErrAmbiguousTarget, key, strings.Join(where, ", "))
	}

	refs := append(slices.Clone(idx.Refs[KeyOf(t)]), idx.renamed(t)...)
	if err := idx.Elsewhere(t); err != nil {
		return DocRef{}, nil, err
	}
	deployer, known, _ := idx.deployerOf(t)
	var narrowed []string
	var by, claimed string
	for _, s := range idx.scopes(c) {
		in := idx.SelectedBy(s.dirs, refs)
		if others := otherFiles(refs, in); s.claim && len(in) > 0 && len(others) > 0 {
			// A label is no proof of who deploys a file: the claimed
			// path is one candidate, the other files are others.
			for i := range in {
				in[i].Deployer = s.why
			}
			refs, claimed = append(in, others...), s.why
			continue
		}
		if len(in) == 0 {
			if len(refs) == 0 && !s.strict {
				break // reported as not found below
			}
			err := fmt.Errorf("%w: %s: %s (%s) does not render it", ErrTargetNotFound, t, idx.describeDirs(s.dirs), s.why)
			if len(refs) > 0 {
				err = fmt.Errorf("%w; %s does", err, RenderersOf(refs))
			}
			return DocRef{}, nil, HelmAdvice(idx.withSkipped(err, c, dir), c, len(refs) == 0)
		}
		refs = in
		narrowed = append(narrowed, s.why)
		if s.deployer {
			by = s.why
		}
	}

	var explicit, implicit []DocRef
	for _, r := range refs {
		switch r.Namespace {
		case t.Namespace:
			if r.Namespace != "" {
				explicit = append(explicit, r)
			} else {
				implicit = append(implicit, r)
			}
		case "":
			implicit = append(implicit, r)
		}
	}
	found := explicit
	if len(found) == 0 {
		found = implicit
	}
	if claimed != "" && len(found) > 1 {
		var where []string
		for _, r := range found {
			where = append(where, r.where())
		}
		slices.Sort(where)
		return DocRef{}, nil, ambiguous(fmt.Errorf("%w: %s is defined in %s; %s claims it by its %s label alone, which any team's Application may, and renders only some of them",
			ErrAmbiguousTarget, t, strings.Join(where, ", "), claimed, InstanceLabel), found, "")
	}
	if len(narrowed) == 0 && len(found) > 1 {
		if deployer != "" {
			// The overlay an environment rule would pick may be one no
			// deployer renders (a smoke test's): no guess.
			why := "is neither in the cluster, nor generated by an ApplicationSet or an app of apps, nor in the repository"
			if known {
				why = "names no path of this repository"
			}
			return DocRef{}, nil, ambiguous(fmt.Errorf("%w: %s is defined in %s, and the %s that deploys it %s: none is chosen",
				ErrAmbiguousTarget, t, RenderersOf(found), deployer, why), found, "")
		}
		found = idx.PreferEnvs(found)
	}
	switch len(found) {
	case 1:
		if claimed == "" {
			found[0].Deployer = by
		}
		return found[0], nil, nil
	case 0:
		return DocRef{}, nil, idx.notFound(c, dir)
	}
	var where []string
	for _, r := range found {
		where = append(where, r.where())
	}
	slices.Sort(where)
	err := fmt.Errorf("%w: %s is defined in %s", ErrAmbiguousTarget, t, strings.Join(where, ", "))
	if len(narrowed) > 0 {
		err = fmt.Errorf("%w, even when narrowed by %s", err, strings.Join(narrowed, " and "))
	} else {
		err = fmt.Errorf("%w; an Argo CD tracking-id, Flux labels, render-paths or the %s annotation naming one of %s would tell them apart",
			err, AnnotationPath, RenderersOf(found))
	}
	return DocRef{}, nil, ambiguous(err, found, by)
}

// notFound says why no document under dir defines c's target: the
// namespaces it is defined for, files that name it but do not parse, the
// chart templates that may render it, and the application that tracks it.
func (idx *Index) notFound(c Sought, dir string) error {
	t := c.Target
	err := fmt.Errorf("%w: %s under %s", ErrTargetNotFound, t, dir)
	var others []string
	for _, r := range idx.Refs[KeyOf(t)] {
		others = append(others, fmt.Sprintf("%s in %s", r.Namespace, r.where()))
	}
	if len(others) > 0 {
		err = fmt.Errorf("%w (defined for other namespaces: %s)", err, strings.Join(others, ", "))
	}
	if broken := idx.broken[t.Name]; len(broken) > 0 {
		err = fmt.Errorf("%w (skipped as not valid YAML, although they name it: %s)", err, strings.Join(broken, ", "))
	}
	if templates := idx.templates[t.Name]; len(templates) > 0 {
		err = fmt.Errorf("%w (a chart's template defines it: %s)", err, strings.Join(templates, ", "))
	}
	if maybe := append(slices.Clone(idx.broken[t.Name]), idx.templates[t.Name]...); len(maybe) > 0 {
		for _, b := range maybe {
			if chart := idx.inChart(b); chart != "" && helmRelease(t) == "" {
				// A chart's template names it: the values size it.
				err = fmt.Errorf("%w; %s is a template of the Helm chart %s, which renders the target from values: %s", err, b, chart, MarkerHint(c))
				break
			}
		}
	}
	if app := ArgoApp(t); app != "" && len(idx.apps[app]) == 0 && !idx.hasApplication(app) {
		err = fmt.Errorf("%w; the Argo CD application %s that tracks it is not in the repository as written (an app of apps' chart or an ApplicationSet may generate it)", err, app)
	}
	return HelmAdvice(idx.withSkipped(err, c, dir), c, len(idx.Refs[KeyOf(t)]) == 0)
}

// Elsewhere returns, when the deployer t's metadata names deploys it from
// another repository, or another branch, tag or commit of this one, the
// error that says so, naming the deployer and what it deploys from; nil
// otherwise.
func (idx *Index) Elsewhere(t Target) error {
	deployer, known, d := idx.deployerOf(t)
	if !known || d == nil || d.Elsewhere == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is deployed by %s from %s, not from the repository and branch the job edits (git-url, git-branch)", ErrTargetNotFound, t, deployer, d.Elsewhere)
}

// otherFiles returns the refs of files that none of in is from.
func otherFiles(refs, in []DocRef) []DocRef {
	var out []DocRef
	for _, r := range refs {
		if !slices.ContainsFunc(in, func(x DocRef) bool { return x.File == r.File }) {
			out = append(out, r)
		}
	}
	return out
}

// hasApplication reports whether the repository holds the Argo CD
// application app (<namespace>_<name> or <name>).
func (idx *Index) hasApplication(app string) bool {
	ns, name, ok := strings.Cut(app, "_")
	if !ok {
		ns, name = "", app
	}
	return slices.ContainsFunc(idx.Refs[IdentKey{ArgoGroup, "Application", name}], func(r DocRef) bool {
		return ns == "" || r.Namespace == ns
	})
}

// resolveMarker finds the kustomization that renders the file of marker m
// for c's target, as resolve does for a manifest: the one a hint names,
// else the one environment that renders it. A file no kustomization under
// dir renders has none (a Helm values file); a file several environments
// render and no hint picks one of is refused, since the marker does not
// say which environment it sizes.
func (idx *Index) resolveMarker(c Sought, m DocRef, dir string) (DocRef, error) {
	var refs []DocRef
	for _, ch := range idx.Graph.Chains(m.File) {
		if !under(ch.Root().Dir, dir) || slices.ContainsFunc(refs, func(x DocRef) bool { return x.Chain.Root() == ch.Root() }) {
			continue
		}
		r := m
		r.Chain = ch
		refs = append(refs, r)
	}
	if len(refs) == 0 {
		return m, nil
	}
	key := MarkerValue(c.Target.Namespace, c.Target.Name, c.Container)
	narrowed := false
	for _, s := range idx.scopes(c) {
		in := idx.SelectedBy(s.dirs, refs)
		if len(in) == 0 {
			if !s.strict {
				continue
			}
			return DocRef{}, fmt.Errorf("%w: marker %q is in %s, which %s (%s) does not render; %s does",
				ErrTargetNotFound, key, m.File, idx.describeDirs(s.dirs), s.why, RenderersOf(refs))
		}
		refs, narrowed = in, true
	}
	if !narrowed {
		refs = idx.PreferEnvs(refs)
	}
	if len(refs) > 1 {
		for i := range refs {
			// Each as the environment names the marked object, for a
			// caller that builds them to choose.
			if r, err := idx.markedAs(refs[i]); err == nil {
				refs[i] = r
			}
		}
		return DocRef{}, ambiguous(fmt.Errorf("%w: marker %q is in %s, which %s all render: the value would change each of them; set the %s annotation or render-paths to the directory of the target's environment, and it is written there",
			ErrAmbiguousTarget, key, m.File, RenderersOf(refs), AnnotationPath), refs, "")
	}
	return idx.markedAs(refs[0])
}

// markedAs returns r, a marked document rendered by r.Chain, with the
// identity the chain gives its object.
func (idx *Index) markedAs(r DocRef) (DocRef, error) {
	docs, err := yamledit.ParseDocuments(idx.Files[r.File].Data)
	if err != nil || r.Doc >= len(docs) {
		return DocRef{}, fmt.Errorf("%w: %s no longer parses: %w", ErrUnsafeFile, r.File, err)
	}
	k, ns, ok := Identify(docs[r.Doc])
	if !ok {
		return r, nil
	}
	r.RawName, r.RawNamespace = k.Name, ns
	r.Namespace, r.Key.Name = r.Chain.Transform(ns, k.Name)
	r.Key.Group, r.Key.Kind = k.Group, k.Kind
	return r, nil
}

// SelectedBy returns the refs that one of dirs, a hint's directories,
// renders.
func (idx *Index) SelectedBy(dirs []string, refs []DocRef) []DocRef {
	var in []DocRef
	for _, r := range refs {
		if slices.ContainsFunc(dirs, func(d string) bool { return idx.selects(d, r) }) {
			in = append(in, r)
		}
	}
	return in
}

// PreferEnvs returns the refs an environment renders (or no kustomization
// does), or all of refs when there are none.
func (idx *Index) PreferEnvs(refs []DocRef) []DocRef {
	var envs []DocRef
	for _, r := range refs {
		if r.Chain == nil || idx.IsEnv(r.Chain.Root()) {
			envs = append(envs, r)
		}
	}
	if len(envs) == 0 {
		return refs
	}
	return envs
}

// describeDirs names the directories of a hint for an error.
func (idx *Index) describeDirs(dirs []string) string {
	var out []string
	for _, d := range dirs {
		if k := idx.Graph.ByDir[d]; k != nil && !k.component {
			out = append(out, "the kustomization in "+d)
		} else {
			out = append(out, "the directory "+d)
		}
	}
	return strings.Join(out, ", ")
}

// RenderersOf lists, sorted, the directories that render refs.
func RenderersOf(refs []DocRef) string {
	var dirs []string
	for _, r := range refs {
		if d := r.RenderedFrom(); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	return strings.Join(dirs, ", ")
}

// Metadata Helm and Flux's helm-controller put on what they install.
const (
	helmManagedBy     = "app.kubernetes.io/managed-by"
	HelmReleaseName   = "meta.helm.sh/release-name"
	HelmReleaseNS     = "meta.helm.sh/release-namespace"
	FluxHelmName      = "helm.toolkit.fluxcd.io/name"
	FluxHelmNamespace = "helm.toolkit.fluxcd.io/namespace"
)

// helmRelease says which Helm release installed the target, from its
// labels and annotations, or "" when none did.
func helmRelease(t Target) string {
	switch {
	case t.Labels[FluxHelmName] != "":
		ns := t.Labels[FluxHelmNamespace]
		if ns == "" {
			ns = t.Namespace
		}
		return "the Flux HelmRelease " + ns + "/" + t.Labels[FluxHelmName]
	case t.Annotations[HelmReleaseName] != "":
		ns := t.Annotations[HelmReleaseNS]
		if ns == "" {
			ns = t.Namespace
		}
		return "the Helm release " + ns + "/" + t.Annotations[HelmReleaseName]
	case t.Labels[helmManagedBy] == "Helm":
		return "Helm"
	}
	return ""
}

// MarkerHint tells how to map the values of c with a marker comment.
func MarkerHint(c Sought) string {
	return fmt.Sprintf(`mark the values that size it with the comment # {"$recommend": %q} on the resources key (or the key above it) in the release's values (a HelmRelease's spec.values, an Application's helm.valuesObject, or a values file), and they are written there`,
		MarkerValue(c.Target.Namespace, c.Target.Name, c.Container))
}

// HelmAdvice adds to err, a target without a source (none, when nothing
// defines it at all), what to do when Helm installed the target.
func HelmAdvice(err error, c Sought, none bool) error {
	release := helmRelease(c.Target)
	if release == "" || !none {
		return err
	}
	return fmt.Errorf("%w; %s is installed by %s, so its manifest is rendered from a chart and no file in the repository defines it: %s",
		err, c.Target, release, MarkerHint(c))
}

// maxSkippedNamed bounds the files above the size limit an error names.
const maxSkippedNamed = 5

// withSkipped adds to err, a target not found, the files above the size
// limit that might have defined it: those under the searched path (the
// change's own, else dir), or rendered by a kustomization under it. The
// result wraps ErrFileTooLarge too.
func (idx *Index) withSkipped(err error, c Sought, dir string) error {
	scope := dir
	if c.Path != "" {
		scope = CleanRepoPath(c.Path)
	}
	var named []string
	n := 0
	for _, s := range idx.Skipped {
		in := under(s.File, scope)
		for _, ch := range idx.Graph.Chains(s.File) {
			in = in || under(ch.Root().Dir, scope)
		}
		if !in {
			continue
		}
		if n++; n <= maxSkippedNamed {
			named = append(named, s.File+" is "+humanSize(s.Size))
		}
	}
	switch {
	case n == 0:
		return err
	case n > maxSkippedNamed:
		named = append(named, fmt.Sprintf("and %d more", n-maxSkippedNamed))
	}
	return fmt.Errorf("%w: %w: %s, above max-file-size %s: not read", err, ErrFileTooLarge, strings.Join(named, ", "), limitString(idx.limit))
}
