package repoindex

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// kustomizationNames are the file names kustomize reads in a directory.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// maxChains bounds the ways one file is reached from the kustomizations
// that render it, against pathological graphs.
const maxChains = 256

// Kustomization is what the index needs of one kustomization file.
type Kustomization struct {
	Dir, File                         string
	Namespace, NamePrefix, NameSuffix string
	// Resources and components are the local paths listed, relative to
	// the repository root; external lists the entries that are remote or
	// outside the repository.
	Resources []string
	External  []string
	// Patches lists the files of patches (path entries) and
	// patchesStrategicMerge; selectors holds, for a patches entry whose
	// target selects objects by anything but a plain name, the kind
	// (and group) it selects.
	Patches   []string
	Selectors map[string]PatchSelector
	// Components are the entries of components, a subset of resources.
	Components []string
	// Generators are its configMapGenerator entries that read files.
	Generators []generator
	// component marks a kustomization of kind Component, which only a
	// kustomization listing it builds.
	component bool
	// componentKs are the kustomizations of Components: their
	// transformers apply to all k holds.
	componentKs []*Kustomization
	// Parents are the kustomizations that list this one's directory.
	Parents []*Kustomization
	// TooLarge says why the file was not read, when it is above the size
	// limit: the kustomization then lists nothing, and is not built.
	TooLarge error
}

// IsKustomizationName reports whether a file name is one kustomize reads.
func IsKustomizationName(name string) bool {
	for _, n := range kustomizationNames {
		if path.Base(name) == n {
			return true
		}
	}
	return false
}

// parseKustomization reads a kustomization file, or returns nil when the
// file is not one (a Flux Kustomization is named like one at times).
func parseKustomization(fsys fs.FS, name string, limit int64) (*Kustomization, error) {
	data, _, err := ReadLimited(fsys, name, limit)
	if err != nil {
		return nil, err
	}
	docs, err := yamledit.ParseDocuments(data)
	if err != nil || len(docs) != 1 {
		return nil, nil
	}
	root := yamledit.DocRoot(docs[0])
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, nil
	}
	if av, _ := yamledit.ScalarField(root, "apiVersion"); av != "" && !strings.HasPrefix(av, "kustomize.config.k8s.io/") {
		return nil, nil
	}
	k := &Kustomization{Dir: path.Dir(name), File: name}
	kind, _ := yamledit.ScalarField(root, "kind")
	k.component = kind == "Component"
	k.Namespace, _ = yamledit.ScalarField(root, "namespace")
	k.NamePrefix, _ = yamledit.ScalarField(root, "namePrefix")
	k.NameSuffix, _ = yamledit.ScalarField(root, "nameSuffix")
	for _, field := range []string{"resources", "bases", "components"} {
		for _, e := range stringItems(root, field) {
			p := path.Join(k.Dir, e)
			if IsRemote(e) || !fs.ValidPath(p) {
				k.External = append(k.External, e)
				continue
			}
			k.Resources = append(k.Resources, p)
			if field == "components" {
				k.Components = append(k.Components, p)
			}
		}
	}
	_, patches, _ := yamledit.Lookup(root, "patches")
	if patches != nil && patches.Kind == yaml.SequenceNode {
		for _, item := range patches.Content {
			p, ok := yamledit.ScalarField(item, "path")
			if !ok {
				continue
			}
			p = path.Join(k.Dir, p)
			k.Patches = append(k.Patches, p)
			if _, target, _ := yamledit.Lookup(item, "target"); target != nil {
				if sel, broad := selectorOf(target); broad {
					if k.Selectors == nil {
						k.Selectors = map[string]PatchSelector{}
					}
					k.Selectors[p] = sel
				}
			}
		}
	}
	_, gens, _ := yamledit.Lookup(root, "configMapGenerator")
	if gens != nil && gens.Kind == yaml.SequenceNode {
		for _, item := range gens.Content {
			name, _ := yamledit.ScalarField(item, "name")
			g := generator{Name: name, Files: map[string]string{}}
			g.namespace, _ = yamledit.ScalarField(item, "namespace")
			for _, e := range stringItems(item, "files") {
				key, file, ok := strings.Cut(e, "=")
				if !ok {
					key, file = path.Base(e), e
				}
				if p := path.Join(k.Dir, file); fs.ValidPath(p) {
					g.Files[key] = p
				}
			}
			if name != "" && len(g.Files) > 0 {
				k.Generators = append(k.Generators, g)
			}
		}
	}
	for _, e := range stringItems(root, "patchesStrategicMerge") {
		// An entry may be an inline patch rather than a file name.
		if !strings.ContainsAny(e, "\n:") {
			k.Patches = append(k.Patches, path.Join(k.Dir, e))
		}
	}
	return k, nil
}

// PatchSelector is the kind a patch's target selects when it may select
// several objects: no name, a name pattern, or a label or annotation
// selector.
type PatchSelector struct{ Group, Kind string }

// selectorOf reads a patch's target and reports whether it may select
// more than the object it names.
func selectorOf(target *yaml.Node) (PatchSelector, bool) {
	var sel PatchSelector
	sel.Group, _ = yamledit.ScalarField(target, "group")
	sel.Kind, _ = yamledit.ScalarField(target, "kind")
	name, _ := yamledit.ScalarField(target, "name")
	_, labels, _ := yamledit.Lookup(target, "labelSelector")
	_, annotations, _ := yamledit.Lookup(target, "annotationSelector")
	plain := name != "" && !strings.ContainsAny(name, "*?[]()|^$.+\\")
	return sel, !plain || labels != nil || annotations != nil
}

// generator is a configMapGenerator entry: the ConfigMap's name, its
// namespace when the entry sets one, and the files it reads by data key.
type generator struct {
	Name, namespace string
	Files           map[string]string
}

// stringItems returns the string items of the sequence under key.
func stringItems(m *yaml.Node, key string) []string {
	_, seq, _ := yamledit.Lookup(m, key)
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, item := range seq.Content {
		if item.Kind == yaml.ScalarNode && item.Value != "" {
			out = append(out, item.Value)
		}
	}
	return out
}

// kgraph is the kustomizations of a repository and how they reach files.
type kgraph struct {
	ByDir map[string]*Kustomization
	// listedBy maps a file to the kustomizations whose resources list it.
	listedBy map[string][]*Kustomization
	// PatchFiles maps every file some kustomization uses as a patch to
	// the kustomizations that do, and generated the files a
	// configMapGenerator reads to the kustomizations that read them.
	PatchFiles map[string][]*Kustomization
	Generated  map[string][]*Kustomization
}

func newKgraph(ks []*Kustomization) *kgraph {
	g := &kgraph{
		ByDir: map[string]*Kustomization{}, listedBy: map[string][]*Kustomization{},
		PatchFiles: map[string][]*Kustomization{}, Generated: map[string][]*Kustomization{},
	}
	for _, k := range ks {
		if _, dup := g.ByDir[k.Dir]; !dup {
			g.ByDir[k.Dir] = k
		}
	}
	for _, k := range g.ByDir {
		for _, p := range k.Patches {
			g.PatchFiles[p] = append(g.PatchFiles[p], k)
		}
		for _, gen := range k.Generators {
			for _, f := range gen.Files {
				g.Generated[f] = append(g.Generated[f], k)
			}
		}
		for _, r := range k.Resources {
			if sub, ok := g.ByDir[r]; ok {
				sub.Parents = append(sub.Parents, k)
				if sub.component && slices.Contains(k.Components, r) {
					k.componentKs = append(k.componentKs, sub)
				}
				continue
			}
			g.listedBy[r] = append(g.listedBy[r], k)
		}
	}
	return g
}

// Chain is the kustomizations a document passes through on its way to the
// kustomization that renders it, innermost first; the last one is that
// renderer. Every kustomization but a component renders what it includes,
// so a document has a chain for each kustomization it reaches: its own, and
// every one that includes that one, directly or not.
type Chain []*Kustomization

// Root returns the kustomization that renders the chain.
func (c Chain) Root() *Kustomization { return c[len(c)-1] }

// Transform returns the namespace and name a document with ns and name
// gets from the kustomizations of c: prefixes and suffixes accumulate, the
// outermost namespace wins.
func (c Chain) Transform(ns, name string) (string, string) {
	for i := range c {
		for _, t := range c.transformers(i) {
			name = t.NamePrefix + name + t.NameSuffix
			if t.Namespace != "" {
				ns = t.Namespace
			}
		}
	}
	return ns, name
}

// transformers are the kustomizations whose prefixes, suffixes and
// namespace the i-th of c applies, in kustomize's order: its components',
// then its own. A component the chain came through is applied already.
func (c Chain) transformers(i int) []*Kustomization {
	k := c[i]
	out := make([]*Kustomization, 0, len(k.componentKs)+1)
	for _, comp := range k.componentKs {
		if i == 0 || c[i-1] != comp {
			out = append(out, comp)
		}
	}
	return append(out, k)
}

// Chains returns every way file is rendered, one chain per kustomization
// (but components) it reaches and per path there, or nil when no
// kustomization lists it.
func (g *kgraph) Chains(file string) []Chain {
	var out []Chain
	for _, k := range g.listedBy[file] {
		out = g.up(k, Chain{k}, out)
	}
	return out
}

func (g *kgraph) up(k *Kustomization, c Chain, out []Chain) []Chain {
	if len(out) >= maxChains || len(c) > 32 {
		return out
	}
	if !k.component {
		out = append(out, c)
	}
	for _, p := range k.Parents {
		if containsK(c, p) {
			continue // a cycle; kustomize refuses it
		}
		next := append(append(Chain{}, c...), p)
		out = g.up(p, next, out)
	}
	return out
}

// SharedPatch reports whether a kustomization other than k, and not built
// on k, patches with file: editing it for k would change that one too.
func (g *kgraph) SharedPatch(file string, k *Kustomization) bool {
	return slices.ContainsFunc(g.PatchFiles[file], func(u *Kustomization) bool { return u != k && !u.Includes(k) })
}

// isRoot reports whether k is a kustomization nothing else includes.
func (k *Kustomization) isRoot() bool { return len(k.Parents) == 0 && !k.component }

// Includes reports whether k includes other, directly or through others.
func (k *Kustomization) Includes(other *Kustomization) bool {
	seen := map[*Kustomization]bool{}
	var walk func(x *Kustomization) bool
	walk = func(x *Kustomization) bool {
		if x == k {
			return true
		}
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, p := range x.Parents {
			if walk(p) {
				return true
			}
		}
		return false
	}
	return other != k && walk(other)
}

func containsK(c Chain, k *Kustomization) bool {
	for _, x := range c {
		if x == k {
			return true
		}
	}
	return false
}

// orphan reports whether file sits in a kustomization's directory without
// being one of its resources: kustomize never renders it.
func (g *kgraph) orphan(file string) bool {
	_, ok := g.ByDir[path.Dir(file)]
	return ok && len(g.listedBy[file]) == 0
}

// renames reports whether some kustomization on a way to file changes
// names, so that the file need not contain the live name.
func (g *kgraph) renames(file string) bool {
	for _, c := range g.Chains(file) {
		for i := range c {
			for _, k := range c.transformers(i) {
				if k.NamePrefix != "" || k.NameSuffix != "" {
					return true
				}
			}
		}
	}
	return false
}

// Readers returns the kustomizations whose build reads file: those that
// render it, those that patch with it and those built on them, and the
// kustomization it is with those built on it.
func (idx *Index) Readers(file string) []*Kustomization {
	g := idx.Graph
	var out []*Kustomization
	var addUp func(k *Kustomization)
	addUp = func(k *Kustomization) {
		if slices.Contains(out, k) {
			return
		}
		out = append(out, k)
		for _, p := range k.Parents {
			addUp(p)
		}
	}
	for _, c := range g.Chains(file) {
		addUp(c.Root())
	}
	for _, k := range g.PatchFiles[file] {
		addUp(k)
	}
	for _, k := range g.Generated[file] {
		addUp(k)
	}
	if IsKustomizationName(file) {
		if k := g.ByDir[path.Dir(file)]; k != nil && k.File == file {
			addUp(k)
		}
	}
	return out
}
