package repoindex

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// ErrSharedSource means the file that defines the target is rendered by
// deployers of other namespaces or names too, and the target's own
// deployer cannot carry a patch for it alone.
var ErrSharedSource = errors.New("shared source")

// DeployerKind names the kind of object that deploys a path.
type DeployerKind string

// The deployers the index knows.
const (
	ArgoApplication   DeployerKind = "Argo CD Application"
	FluxKustomization DeployerKind = "Flux Kustomization"
)

// Deployer is one source of an Argo CD Application, or a Flux
// Kustomization: what deploys a path of the repository, and the fields
// that change, at deploy time, the names, namespaces and content of what
// the path renders.
type Deployer struct {
	Kind            DeployerKind
	Namespace, Name string
	// Origin says where the deployer was read: a file of the repository
	// ("argocd/app.yaml"), or where a caller found it (the cluster).
	// File and Doc locate its document when it is in the repository
	// (File "" otherwise); Source is the index of its entry in an
	// Application's spec.sources, -1 for spec.source.
	Origin string
	File   string
	Doc    int
	Source int
	// Path is the directory it deploys, cleaned; Chart is set when the
	// source is a Helm chart, which no file renders as written.
	Path  string
	Chart bool
	// Cluster is an Application's destination.name: the cluster it
	// deploys to, as Argo CD names it ("" for destination.server).
	Cluster string
	// Destination is the namespace of objects without one (Argo CD's
	// destination.namespace); TargetNamespace overrides every object's
	// (Flux's targetNamespace, Argo CD's kustomize.namespace).
	Destination, TargetNamespace string
	NamePrefix, NameSuffix       string
	// Directory, Recurse, Include and Exclude are an Argo CD directory
	// source's.
	Directory, Recurse bool
	Include, Exclude   string
	// Patches, CommonLabels, Images and Replicas are the deployer's
	// kustomize overrides as written, decoded.
	Patches      []any
	CommonLabels map[string]any
	Images       []any
	Replicas     []any
	// Substitute is Flux's postBuild.substitute, and SubstituteFrom the
	// objects of postBuild.substituteFrom ("ConfigMap/name").
	Substitute     map[string]string
	SubstituteFrom []string
	// ServiceAccountName is a Flux Kustomization's: the account it
	// applies as, which a multi-tenant cluster confines to its namespace.
	ServiceAccountName string
	// elsewhereCluster says its destination is another cluster than the
	// run's (otherClusters).
	elsewhereCluster bool
	// untyped says an Application's source names no type (no helm,
	// kustomize, directory or plugin block, no chart): Argo CD detects
	// it from the path, a Chart.yaml making it a Helm chart.
	untyped bool
}

// String names the deployer as errors do: its kind, namespace/name and
// the namespace it deploys into.
func (d *Deployer) String() string {
	s := string(d.Kind) + " " + d.Name
	if d.Namespace != "" {
		s = string(d.Kind) + " " + d.Namespace + "/" + d.Name
	}
	if ns := d.namespaceFor(""); ns != "" {
		s += " (into " + ns + ")"
	}
	if d.File == "" && d.Origin != "" {
		s += " " + d.Origin
	}
	return s
}

// CanPatch says why the deployer cannot carry a patch of its own written
// in the repository, or returns "": a Flux Kustomization's spec.patches
// always can; an Argo CD Application's kustomize.patches only for a path
// with a kustomization, since Argo CD fails to build a directory without
// one that has patches (argoproj/argo-cd#16352).
func (idx *Index) CanPatch(d *Deployer) string {
	switch {
	case d.File == "":
		return "it is not written in the repository (" + d.Origin + ")"
	case d.Chart:
		return "its source is a Helm chart"
	case d.Kind == ArgoApplication && d.Directory:
		return "its source is a plain directory (spec.source.directory), which Argo CD does not kustomize"
	case d.Kind == ArgoApplication && idx.Graph.ByDir[d.Path] == nil:
		return "its path " + d.Path + " has no kustomization, and Argo CD fails to build a directory without one that has kustomize.patches"
	}
	return ""
}

// namespaceFor returns the namespace the deployer gives an object that
// renders with namespace ns.
func (d *Deployer) namespaceFor(ns string) string {
	switch {
	case d.TargetNamespace != "":
		return d.TargetNamespace
	case ns != "":
		return ns
	}
	return d.Destination
}

// Identity returns the namespace and name r's object gets from d: as the
// kustomization d builds renders it (which may not be r's own), then with
// d's namespace and name overrides.
func (idx *Index) Identity(d *Deployer, r DocRef) (string, string) {
	ns, name := r.Namespace, r.Key.Name
	if d.Kind == ArgoApplication && idx.Graph.ByDir[d.Path] == nil {
		ns, name = r.RawNamespace, r.RawName
	} else if r.Chain == nil || !idx.selects(d.Path, r) {
		for _, c := range idx.Graph.Chains(r.File) {
			if x := (DocRef{File: r.File, Chain: c}); idx.selects(d.Path, x) {
				ns, name = c.Transform(r.RawNamespace, r.RawName)
				break
			}
		}
	}
	if d.NamePrefix != "" || d.NameSuffix != "" {
		name = d.NamePrefix + name + d.NameSuffix
	}
	return d.namespaceFor(ns), name
}

// DecodeDeployers returns the deployers an Argo CD Application or a Flux
// Kustomization document holds (one per source of an Application), or
// none for any other document. origin says where it was read, and file
// and doc locate it in the repository (file "" for one that is not).
func DecodeDeployers(doc *yaml.Node, origin, file string, i int) []*Deployer {
	key, ns, ok := Identify(doc)
	if !ok {
		return nil
	}
	root := yamledit.DocRoot(doc)
	_, spec, _ := yamledit.Lookup(root, "spec")
	if spec == nil || spec.Kind != yaml.MappingNode {
		return nil
	}
	base := Deployer{Namespace: ns, Name: key.Name, Origin: origin, File: file, Doc: i, Source: -1}
	switch {
	case key.Group == ArgoGroup && key.Kind == "Application":
		base.Kind = ArgoApplication
		_, dest, _ := yamledit.Lookup(spec, "destination")
		base.Destination, _ = yamledit.ScalarField(dest, "namespace")
		base.Cluster, _ = yamledit.ScalarField(dest, "name")
		var out []*Deployer
		if _, src, _ := yamledit.Lookup(spec, "source"); src != nil && src.Kind == yaml.MappingNode {
			if d, ok := argoSource(base, src); ok {
				out = append(out, d)
			}
		}
		if _, srcs, _ := yamledit.Lookup(spec, "sources"); srcs != nil && srcs.Kind == yaml.SequenceNode {
			for j, src := range srcs.Content {
				b := base
				b.Source = j
				if d, ok := argoSource(b, src); ok {
					out = append(out, d)
				}
			}
		}
		return out
	case key.Group == "kustomize.toolkit.fluxcd.io" && key.Kind == "Kustomization":
		d := base
		d.Kind = FluxKustomization
		p, ok := yamledit.ScalarField(spec, "path")
		if !ok {
			p = "."
		}
		d.Path = CleanRepoPath(p)
		d.TargetNamespace, _ = yamledit.ScalarField(spec, "targetNamespace")
		d.ServiceAccountName, _ = yamledit.ScalarField(spec, "serviceAccountName")
		d.NamePrefix, _ = yamledit.ScalarField(spec, "namePrefix")
		d.NameSuffix, _ = yamledit.ScalarField(spec, "nameSuffix")
		d.Patches, _ = decodeField(spec, "patches").([]any)
		d.Images, _ = decodeField(spec, "images").([]any)
		_, post, _ := yamledit.Lookup(spec, "postBuild")
		if sub, ok := decodeField(post, "substitute").(map[string]any); ok {
			d.Substitute = map[string]string{}
			for k, v := range sub {
				d.Substitute[k] = fmt.Sprint(v)
			}
		}
		from, _ := decodeField(post, "substituteFrom").([]any)
		for _, f := range from {
			m, _ := f.(map[string]any)
			d.SubstituteFrom = append(d.SubstituteFrom, fmt.Sprintf("%v/%v", m["kind"], m["name"]))
		}
		return []*Deployer{&d}
	}
	return nil
}

// argoSource is the deployer of one source of an Application; ok is false
// for a source without a path (a chart of a chart repository).
func argoSource(d Deployer, src *yaml.Node) (*Deployer, bool) {
	p, ok := yamledit.ScalarField(src, "path")
	if !ok {
		return nil, false
	}
	d.Path = CleanRepoPath(p)
	_, helm, _ := yamledit.Lookup(src, "helm")
	chart, _ := yamledit.ScalarField(src, "chart")
	d.Chart = helm != nil || chart != ""
	d.untyped = !d.Chart
	for _, block := range []string{"directory", "kustomize", "plugin"} {
		if _, v, _ := yamledit.Lookup(src, block); v != nil {
			d.untyped = false
		}
	}
	if _, dir, _ := yamledit.Lookup(src, "directory"); dir != nil {
		d.Directory = true
		d.Recurse = decodeField(dir, "recurse") == true
		d.Include, _ = yamledit.ScalarField(dir, "include")
		d.Exclude, _ = yamledit.ScalarField(dir, "exclude")
	}
	if _, k, _ := yamledit.Lookup(src, "kustomize"); k != nil {
		d.TargetNamespace, _ = yamledit.ScalarField(k, "namespace")
		d.NamePrefix, _ = yamledit.ScalarField(k, "namePrefix")
		d.NameSuffix, _ = yamledit.ScalarField(k, "nameSuffix")
		d.Patches, _ = decodeField(k, "patches").([]any)
		d.CommonLabels, _ = decodeField(k, "commonLabels").(map[string]any)
		d.Images, _ = decodeField(k, "images").([]any)
		d.Replicas, _ = decodeField(k, "replicas").([]any)
	}
	return &d, true
}

// decodeField decodes the value under key of mapping m, or returns nil.
func decodeField(m *yaml.Node, key string) any {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	_, v, _ := yamledit.Lookup(m, key)
	if v == nil {
		return nil
	}
	var out any
	if err := v.Decode(&out); err != nil {
		return nil
	}
	return out
}

// AddDeployer adds the deployers of doc, an Argo CD Application or a Flux
// Kustomization that is not a file of the repository (read from the
// cluster, or generated by an ApplicationSet), to the index; origin says
// where it came from ("from the cluster"), for errors. A deployer named like one the
// repository holds replaces it: the live object is what deploys.
func (idx *Index) AddDeployer(doc *yaml.Node, origin string) error {
	ds := DecodeDeployers(doc, origin, "", -1)
	if len(ds) == 0 {
		return fmt.Errorf("%s: not an Argo CD Application or Flux Kustomization with a path", origin)
	}
	idx.Deployers = slices.DeleteFunc(idx.Deployers, func(x *Deployer) bool {
		return x.Kind == ds[0].Kind && x.Namespace == ds[0].Namespace && x.Name == ds[0].Name
	})
	idx.addDecoded(ds)
	return nil
}

// addDecoded adds deployers decoded from one object to the index, beside
// any of their name.
func (idx *Index) addDecoded(ds []*Deployer) {
	for _, d := range ds {
		idx.detectChart(d)
		idx.Deployers = append(idx.Deployers, d)
		idx.Declared[d.Path] = true
		switch d.Kind {
		case ArgoApplication:
			idx.apps[d.Name] = appendNew(idx.apps[d.Name], d.Path)
			if d.Namespace != "" {
				idx.apps[d.Namespace+"_"+d.Name] = appendNew(idx.apps[d.Namespace+"_"+d.Name], d.Path)
			}
		case FluxKustomization:
			key := d.Namespace + "/" + d.Name
			idx.fluxes[key] = appendNew(idx.fluxes[key], d.Path)
		}
	}
}

// detectChart makes an Application's source of no type a Helm chart when
// its path holds a Chart.yaml, as Argo CD detects one.
func (idx *Index) detectChart(d *Deployer) {
	if d.Kind == ArgoApplication && d.untyped && idx.Charts[d.Path] {
		d.Chart = true
	}
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// renders reports whether the deployer renders r: the kustomization in
// its path (and whatever that includes), or, in a directory without one,
// the files there as Argo CD reads a directory (recurse, include,
// exclude), or what kustomize-controller's generated kustomization
// includes.
func (idx *Index) renders(d *Deployer, r DocRef) bool {
	if d.Chart {
		return false
	}
	if k := idx.Graph.ByDir[d.Path]; k != nil && !k.component {
		return r.Chain != nil && slices.ContainsFunc(idx.Graph.Chains(r.File), func(c Chain) bool { return c.Root() == k })
	}
	if d.Kind != ArgoApplication {
		return idx.selects(d.Path, r)
	}
	// Argo CD reads a directory without a kustomization file by file, and
	// builds none of the kustomizations below it.
	if !under(r.File, d.Path) {
		return false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(r.File, d.Path), "/")
	if d.Path == "." {
		rel = r.File
	}
	if !d.Recurse && strings.Contains(rel, "/") {
		return false
	}
	if d.Include != "" && !ArgoGlob(d.Include, rel) {
		return false
	}
	return d.Exclude == "" || !ArgoGlob(d.Exclude, rel)
}

// ArgoGlob matches Argo CD's include and exclude patterns: a glob, or
// {a,b} of globs, against the path or its base name.
func ArgoGlob(pattern, rel string) bool {
	pats := []string{pattern}
	if strings.HasPrefix(pattern, "{") && strings.HasSuffix(pattern, "}") {
		pats = strings.Split(pattern[1:len(pattern)-1], ",")
	}
	for _, p := range pats {
		p = strings.TrimSpace(p)
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		if ok, _ := path.Match(p, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

// deploysRoot reports whether d builds the kustomization k, or one that
// includes it.
func (idx *Index) deploysRoot(d *Deployer, k *Kustomization) bool {
	if dk := idx.Graph.ByDir[d.Path]; dk != nil {
		return dk == k || dk.Includes(k)
	}
	return d.Kind == FluxKustomization && under(k.Dir, d.Path)
}

// FluxApply is how one Flux Kustomization applies a document: into which
// namespace, and whether that namespace is the deployer's to give.
type FluxApply struct {
	By        *Deployer
	Namespace string
	// Established is set when the namespace does not rest on the file's
	// word alone: the Kustomization sets it (targetNamespace), applies
	// into its own namespace, or applies as Flux's own account (no
	// serviceAccountName), which puts an object wherever its file says.
	// A tenant's Kustomization (a serviceAccountName) that applies a file
	// claiming another namespace establishes nothing: Flux would refuse
	// it.
	Established bool
}

// FluxApplies returns how each Flux Kustomization of the index that
// renders r applies its object: the namespace kustomize-controller gives
// it (targetNamespace, else the namespace its build has, else the
// Kustomization's own), and whether that namespace is established. None
// when no Flux Kustomization renders r.
func (idx *Index) FluxApplies(r DocRef) []FluxApply {
	var out []FluxApply
	for _, d := range idx.Deployers {
		if d.Kind != FluxKustomization || !idx.renders(d, r) || r.Chain != nil && !idx.deploysRoot(d, r.Chain.Root()) {
			continue
		}
		ns, _ := idx.Identity(d, r)
		if ns == "" {
			ns = d.Namespace
		}
		out = append(out, FluxApply{By: d, Namespace: ns,
			Established: d.TargetNamespace != "" || d.ServiceAccountName == "" || ns == d.Namespace})
	}
	return out
}

// Deployers are who deploy a document, as it concerns one target.
type Deployers struct {
	// All are the deployers that render the document, Mine the one that
	// deploys the target (nil when none or several could), and Others
	// those that give the document's object another namespace or name.
	All, Others []*Deployer
	Mine        *Deployer
}

// Shared reports whether deployers of other namespaces or names render
// the document too.
func (d Deployers) Shared() bool { return len(d.Others) > 0 }

// DeployersOf returns who deploys r (through the kustomization that
// renders it for t, when one does), and which of them deploys t: the one
// whose namespace and name for r's object are t's, narrowed by Argo CD's
// tracking and Flux's labels when several are.
func (idx *Index) DeployersOf(r DocRef, t Target) Deployers {
	var dep Deployers
	var mine []*Deployer
	for _, d := range idx.Deployers {
		// Through a kustomization, what counts is who deploys it: other
		// environments that render the file are the kustomization's
		// concern (SharedFor), and its patches hold the change.
		if !idx.renders(d, r) || r.Chain != nil && !idx.deploysRoot(d, r.Chain.Root()) {
			continue
		}
		dep.All = append(dep.All, d)
		if ns, name := idx.Identity(d, r); name == t.Name && (ns == t.Namespace || ns == "") {
			mine = append(mine, d)
		}
	}
	if len(mine) > 1 {
		app := ArgoApp(t)
		flux := t.Labels[FluxNamespaceLabel] + "/" + t.Labels[FluxNameLabel]
		named := slices.DeleteFunc(slices.Clone(mine), func(d *Deployer) bool {
			switch d.Kind {
			case ArgoApplication:
				return app != d.Name && app != d.Namespace+"_"+d.Name
			default:
				return flux != d.Namespace+"/"+d.Name
			}
		})
		if len(named) > 0 {
			mine = named
		}
	}
	if len(mine) == 1 {
		dep.Mine = mine[0]
	}
	// A deployer of a kustomization built on the target's renders the
	// change with it, as an overlay does.
	builtOn := func(d *Deployer) bool {
		if dep.Mine == nil || r.Chain == nil {
			return false
		}
		k := idx.Graph.ByDir[d.Path]
		return k != nil && k.Includes(r.Chain.Root())
	}
	ids := map[[2]string]bool{}
	for _, d := range dep.All {
		if builtOn(d) {
			continue
		}
		ns, name := idx.Identity(d, r)
		ids[[2]string{ns, name}] = true
	}
	if len(ids) < 2 {
		return dep
	}
	for _, d := range dep.All {
		if d == dep.Mine || builtOn(d) {
			continue
		}
		if dep.Mine == nil {
			dep.Others = append(dep.Others, d)
			continue
		}
		ns, name := idx.Identity(dep.Mine, r)
		if dns, dname := idx.Identity(d, r); dns != ns || dname != name {
			dep.Others = append(dep.Others, d)
		}
	}
	return dep
}

// SharedError says why r cannot be edited for t's deployer alone: the
// deployers that render it too, and what would make it editable.
func (dep Deployers) SharedError(r DocRef, t Target, why string) error {
	var others []string
	for _, d := range dep.Others {
		others = append(others, d.String())
	}
	slices.Sort(others)
	mine := "no single deployer of " + t.String() + " renders it"
	if dep.Mine != nil {
		mine = dep.Mine.String() + " deploys " + t.String()
		if why != "" {
			mine += ", but " + why
		}
	}
	return fmt.Errorf("%w: %s is also rendered by %s; %s: give each deployer an overlay of its own (a kustomization that includes %s) and point it there, or use deployers that carry a patch (a Flux Kustomization's spec.patches, an Argo CD Application's spec.source.kustomize.patches)",
		ErrSharedSource, r.File, strings.Join(others, ", "), mine, path.Dir(r.File))
}

// unrenamed returns name without d's namePrefix and nameSuffix, and
// whether d renames anything and name has them.
func (d *Deployer) unrenamed(name string) (string, bool) {
	if d.NamePrefix == "" && d.NameSuffix == "" || len(name) <= len(d.NamePrefix)+len(d.NameSuffix) ||
		!strings.HasPrefix(name, d.NamePrefix) || !strings.HasSuffix(name, d.NameSuffix) {
		return "", false
	}
	return name[len(d.NamePrefix) : len(name)-len(d.NameSuffix)], true
}

// renamedWants is what the index must seek besides w: the wanted objects'
// names without the namePrefix and nameSuffix of a deployer that renames.
func (idx *Index) renamedWants(w Wants) Wants {
	extra := Wants{Objects: map[IdentKey]bool{}, Dir: w.Dir}
	if w.Names != nil {
		extra.Names = [][]byte{}
	}
	for k := range w.Objects {
		for _, d := range idx.Deployers {
			name, ok := d.unrenamed(k.Name)
			if !ok {
				continue
			}
			raw := IdentKey{k.Group, k.Kind, name}
			if !w.Objects[raw] && !extra.Objects[raw] {
				extra.Objects[raw] = true
				if extra.Names != nil {
					extra.Names = append(extra.Names, []byte(name))
				}
			}
		}
	}
	return extra
}

// addRefs records the documents a second scan found, and nothing else:
// the first scan recorded the file's markers and deployers.
func (idx *Index) addRefs(s scan) {
	if s.file == nil || len(s.refs) == 0 || idx.chartTemplate(s.file.Name) {
		return
	}
	if idx.Files[s.file.Name] == nil {
		idx.Files[s.file.Name] = s.file
	}
	for _, r := range s.refs {
		idx.Refs[r.Key] = append(idx.Refs[r.Key], r)
	}
}

// renamed returns the documents a deployer that renames renders as t:
// those of t's name without its namePrefix and nameSuffix.
func (idx *Index) renamed(t Target) []DocRef {
	var out []DocRef
	for _, d := range idx.Deployers {
		name, ok := d.unrenamed(t.Name)
		if !ok {
			continue
		}
		k := KeyOf(t)
		k.Name = name
		for _, r := range idx.Refs[k] {
			if idx.renders(d, r) && !slices.ContainsFunc(out, func(x DocRef) bool { return x.File == r.File && x.Doc == r.Doc && x.RenderedFrom() == r.RenderedFrom() }) {
				out = append(out, r)
			}
		}
	}
	return out
}
