package render

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/yamledit"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kustomizationNames are the file names kustomize reads in a directory.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// maxChains bounds the ways one file is reached from the kustomizations
// that render it, against pathological graphs.
const maxChains = 256

// kustomization is what the index needs of one kustomization file.
type kustomization struct {
	dir, file                         string
	namespace, namePrefix, nameSuffix string
	// resources and components are the local paths listed, relative to
	// the repository root; external lists the entries that are remote or
	// outside the repository.
	resources []string
	external  []string
	// patches lists the files of patches (path entries) and
	// patchesStrategicMerge; selectors holds, for a patches entry whose
	// target selects objects by anything but a plain name, the kind
	// (and group) it selects.
	patches   []string
	selectors map[string]patchSelector
	// components are the entries of components, a subset of resources.
	components []string
	// generators are its configMapGenerator entries that read files.
	generators []generator
	// component marks a kustomization of kind Component, which only a
	// kustomization listing it builds.
	component bool
	// parents are the kustomizations that list this one's directory.
	parents []*kustomization
	// tooLarge says why the file was not read, when it is above the size
	// limit: the kustomization then lists nothing, and is not built.
	tooLarge error
}

// isKustomizationName reports whether a file name is one kustomize reads.
func isKustomizationName(name string) bool {
	for _, n := range kustomizationNames {
		if path.Base(name) == n {
			return true
		}
	}
	return false
}

// parseKustomization reads a kustomization file, or returns nil when the
// file is not one (a Flux Kustomization is named like one at times).
func parseKustomization(fsys fs.FS, name string, limit int64) (*kustomization, error) {
	data, _, err := readLimited(fsys, name, limit)
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
	k := &kustomization{dir: path.Dir(name), file: name}
	kind, _ := yamledit.ScalarField(root, "kind")
	k.component = kind == "Component"
	k.namespace, _ = yamledit.ScalarField(root, "namespace")
	k.namePrefix, _ = yamledit.ScalarField(root, "namePrefix")
	k.nameSuffix, _ = yamledit.ScalarField(root, "nameSuffix")
	for _, field := range []string{"resources", "bases", "components"} {
		for _, e := range stringItems(root, field) {
			p := path.Join(k.dir, e)
			if isRemote(e) || !fs.ValidPath(p) {
				k.external = append(k.external, e)
				continue
			}
			k.resources = append(k.resources, p)
			if field == "components" {
				k.components = append(k.components, p)
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
			p = path.Join(k.dir, p)
			k.patches = append(k.patches, p)
			if _, target, _ := yamledit.Lookup(item, "target"); target != nil {
				if sel, broad := selectorOf(target); broad {
					if k.selectors == nil {
						k.selectors = map[string]patchSelector{}
					}
					k.selectors[p] = sel
				}
			}
		}
	}
	_, gens, _ := yamledit.Lookup(root, "configMapGenerator")
	if gens != nil && gens.Kind == yaml.SequenceNode {
		for _, item := range gens.Content {
			name, _ := yamledit.ScalarField(item, "name")
			g := generator{name: name, files: map[string]string{}}
			g.namespace, _ = yamledit.ScalarField(item, "namespace")
			for _, e := range stringItems(item, "files") {
				key, file, ok := strings.Cut(e, "=")
				if !ok {
					key, file = path.Base(e), e
				}
				if p := path.Join(k.dir, file); fs.ValidPath(p) {
					g.files[key] = p
				}
			}
			if name != "" && len(g.files) > 0 {
				k.generators = append(k.generators, g)
			}
		}
	}
	for _, e := range stringItems(root, "patchesStrategicMerge") {
		// An entry may be an inline patch rather than a file name.
		if !strings.ContainsAny(e, "\n:") {
			k.patches = append(k.patches, path.Join(k.dir, e))
		}
	}
	return k, nil
}

// patchSelector is the kind a patch's target selects when it may select
// several objects: no name, a name pattern, or a label or annotation
// selector.
type patchSelector struct{ group, kind string }

// selectorOf reads a patch's target and reports whether it may select
// more than the object it names.
func selectorOf(target *yaml.Node) (patchSelector, bool) {
	var sel patchSelector
	sel.group, _ = yamledit.ScalarField(target, "group")
	sel.kind, _ = yamledit.ScalarField(target, "kind")
	name, _ := yamledit.ScalarField(target, "name")
	_, labels, _ := yamledit.Lookup(target, "labelSelector")
	_, annotations, _ := yamledit.Lookup(target, "annotationSelector")
	plain := name != "" && !strings.ContainsAny(name, "*?[]()|^$.+\\")
	return sel, !plain || labels != nil || annotations != nil
}

// generator is a configMapGenerator entry: the ConfigMap's name, its
// namespace when the entry sets one, and the files it reads by data key.
type generator struct {
	name, namespace string
	files           map[string]string
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

// isRemote reports whether a resources entry names something kustomize
// would fetch rather than read from the repository.
func isRemote(e string) bool {
	return strings.Contains(e, "://") || strings.HasPrefix(e, "git@") ||
		strings.HasPrefix(e, "github.com/") || strings.HasPrefix(e, "gitlab.com/")
}

// kgraph is the kustomizations of a repository and how they reach files.
type kgraph struct {
	byDir map[string]*kustomization
	// listedBy maps a file to the kustomizations whose resources list it.
	listedBy map[string][]*kustomization
	// patchFiles maps every file some kustomization uses as a patch to
	// the kustomizations that do, and generated the files a
	// configMapGenerator reads to the kustomizations that read them.
	patchFiles map[string][]*kustomization
	generated  map[string][]*kustomization
}

func newKgraph(ks []*kustomization) *kgraph {
	g := &kgraph{
		byDir: map[string]*kustomization{}, listedBy: map[string][]*kustomization{},
		patchFiles: map[string][]*kustomization{}, generated: map[string][]*kustomization{},
	}
	for _, k := range ks {
		if _, dup := g.byDir[k.dir]; !dup {
			g.byDir[k.dir] = k
		}
	}
	for _, k := range g.byDir {
		for _, p := range k.patches {
			g.patchFiles[p] = append(g.patchFiles[p], k)
		}
		for _, gen := range k.generators {
			for _, f := range gen.files {
				g.generated[f] = append(g.generated[f], k)
			}
		}
		for _, r := range k.resources {
			if sub, ok := g.byDir[r]; ok {
				sub.parents = append(sub.parents, k)
				continue
			}
			g.listedBy[r] = append(g.listedBy[r], k)
		}
	}
	return g
}

// chain is the kustomizations a document passes through on its way to the
// kustomization that renders it, innermost first; the last one is that
// renderer. Every kustomization but a component renders what it includes,
// so a document has a chain for each kustomization it reaches: its own, and
// every one that includes that one, directly or not.
type chain []*kustomization

// root returns the kustomization that renders the chain.
func (c chain) root() *kustomization { return c[len(c)-1] }

// transform returns the namespace and name a document with ns and name
// gets from the kustomizations of c: prefixes and suffixes accumulate, the
// outermost namespace wins.
func (c chain) transform(ns, name string) (string, string) {
	for _, k := range c {
		name = k.namePrefix + name + k.nameSuffix
		if k.namespace != "" {
			ns = k.namespace
		}
	}
	return ns, name
}

// chains returns every way file is rendered, one chain per kustomization
// (but components) it reaches and per path there, or nil when no
// kustomization lists it.
func (g *kgraph) chains(file string) []chain {
	var out []chain
	for _, k := range g.listedBy[file] {
		out = g.up(k, chain{k}, out)
	}
	return out
}

func (g *kgraph) up(k *kustomization, c chain, out []chain) []chain {
	if len(out) >= maxChains || len(c) > 32 {
		return out
	}
	if !k.component {
		out = append(out, c)
	}
	for _, p := range k.parents {
		if containsK(c, p) {
			continue // a cycle; kustomize refuses it
		}
		next := append(append(chain{}, c...), p)
		out = g.up(p, next, out)
	}
	return out
}

// sharedPatch reports whether a kustomization other than k, and not built
// on k, patches with file: editing it for k would change that one too.
func (g *kgraph) sharedPatch(file string, k *kustomization) bool {
	return slices.ContainsFunc(g.patchFiles[file], func(u *kustomization) bool { return u != k && !u.includes(k) })
}

// isRoot reports whether k is a kustomization nothing else includes.
func (k *kustomization) isRoot() bool { return len(k.parents) == 0 && !k.component }

// includes reports whether k includes other, directly or through others.
func (k *kustomization) includes(other *kustomization) bool {
	seen := map[*kustomization]bool{}
	var walk func(x *kustomization) bool
	walk = func(x *kustomization) bool {
		if x == k {
			return true
		}
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, p := range x.parents {
			if walk(p) {
				return true
			}
		}
		return false
	}
	return other != k && walk(other)
}

func containsK(c chain, k *kustomization) bool {
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
	_, ok := g.byDir[path.Dir(file)]
	return ok && len(g.listedBy[file]) == 0
}

// renames reports whether some kustomization on a way to file changes
// names, so that the file need not contain the live name.
func (g *kgraph) renames(file string) bool {
	for _, c := range g.chains(file) {
		for _, k := range c {
			if k.namePrefix != "" || k.nameSuffix != "" {
				return true
			}
		}
	}
	return false
}
