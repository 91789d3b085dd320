package edits

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// patchPrefix starts the name of the patch files the job writes.
const patchPrefix = "recommend-job-"

// Patch sets the change's values with a strategic-merge patch in the
// kustomization that renders the target: it updates a patch of that
// kustomization that already names the object, or writes
// recommend-job-<kind>-<name>.yaml next to it and lists it in patches. It
// returns the patch file, whether bytes changed, and the files touched.
func (w *Workspace) Patch(c Resources, ref repoindex.DocRef) (string, bool, []string, error) {
	base, err := w.Doc(ref.File, ref.Doc)
	if err != nil {
		return ref.File, false, nil, err
	}
	if _, _, err := repoindex.LocateContainer(base, c.Container); err != nil {
		return ref.File, false, nil, fmt.Errorf("%s: %w", ref.File, err)
	}
	_, at, _ := repoindex.LocateContainer(base, c.Container)
	apiVersion, _ := yamledit.ScalarField(yamledit.DocRoot(base), "apiVersion")
	k := ref.Chain.Root()
	// Patches of a kustomization apply before its own name and namespace
	// transformers, so they name the object as the inner layers render it.
	ns, name := ref.Chain[:len(ref.Chain)-1].Transform(ref.RawNamespace, ref.RawName)
	want := repoindex.IdentKey{Group: ref.Key.Group, Kind: ref.Key.Kind, Name: name}

	best, err := w.findPatch(c, k, want, ns, at, true)
	if err != nil {
		return best.file, false, nil, err
	}
	switch best.rank {
	case patchSetsResources, patchHasContainer:
		changed, err := best.fe.Apply(c, best.doc, nil)
		return best.file, changed, []string{best.file}, err
	case patchHasContainers:
		err := w.addContainer(best.fe, best.doc, at, c)
		return best.file, err == nil, []string{best.file}, err
	}

	return w.newPatch(k, want, name, base, func(style layout, br string) string {
		return patchText(apiVersion, want.Kind, ns, name, at, c, style, br)
	})
}

// newPatch writes recommend-job-<kind>-<name>.yaml next to kustomization k,
// with the text text gives in k's layout (indentation from base, the
// object's document), and lists it in k's patches. It returns the patch
// file, whether bytes changed, and the files touched.
func (w *Workspace) newPatch(k *repoindex.Kustomization, want repoindex.IdentKey, name string, base *yaml.Node, text func(layout, string) string) (string, bool, []string, error) {
	kfe, err := w.File(k.File)
	if err != nil {
		return k.File, false, nil, err
	}
	if kfe.Unsafe != nil {
		return k.File, false, nil, fmt.Errorf("%s: %w", k.File, kfe.Unsafe)
	}
	file := path.Join(k.Dir, patchPrefix+strings.ToLower(want.Kind)+"-"+name+".yaml")
	if _, ok := w.Files[file]; ok {
		return file, false, nil, fmt.Errorf("%w: %s is already written in this run but %s does not list it", repoindex.ErrUnsafeFile, file, k.File)
	}
	if _, err := fs.Stat(w.FS, file); err == nil {
		return file, false, nil, fmt.Errorf("%w: %s exists but %s does not list it as a patch", repoindex.ErrUnsafeFile, file, k.File)
	}
	src := yamledit.NewSource(kfe.Data)
	kdocs, err := kfe.CurrentDocs()
	if err != nil {
		return k.File, false, nil, err
	}
	style := layoutOf(yamledit.DocRoot(kdocs[0]), yamledit.IndentStep(yamledit.DocRoot(base)))
	body := text(style, src.DefaultBreak())
	if err := addPatchEntry(kfe, path.Base(file), style); err != nil {
		return k.File, false, nil, fmt.Errorf("%s: %w", k.File, err)
	}
	w.record(file, nil)
	w.Files[file] = &File{Name: file, Data: []byte(body), Mode: 0o644, Created: true}
	k.Patches = append(k.Patches, file)
	return file, true, []string{file, k.File}, nil
}

// MarkerPatch sets the values of a marker in a file other environments
// render too with a strategic-merge patch of the marked object, at the
// marked path, in the kustomization that renders it for the target: a
// patch of that kustomization that names the object gains the path, or a
// new one is written. keys and direct are the marked path (repoindex.MarkedObject).
func (w *Workspace) MarkerPatch(c Resources, ref repoindex.DocRef, value string, keys []string, direct bool) (string, bool, []string, error) {
	if _, err := w.Doc(ref.File, ref.Doc); err != nil {
		return ref.File, false, nil, err
	}
	for _, key := range keys {
		if !PlainKey.MatchString(key) {
			return ref.File, false, nil, fmt.Errorf("%w: %s: key %q on the way to marker %q would need quoting in a patch", repoindex.ErrUnsafeFile, ref.File, key, value)
		}
	}
	pf, fe, d, err := w.ObjectPatch(ref)
	switch {
	case err != nil:
		return pf, false, nil, err
	case fe != nil:
		changed, err := fe.ApplyAt(c, d, keys, direct)
		return pf, changed, []string{pf}, err
	}
	return w.NewObjectPatch(ref, func(step int) []string {
		return yamledit.BlockLines(nestedEntries(keys, direct, c), 0, step, nil)
	})
}

// ObjectPatch finds the last patch of the object ref points at among the
// patches of the kustomization that renders it, and returns its file, its
// edit and its document; fe is nil when there is none.
func (w *Workspace) ObjectPatch(ref repoindex.DocRef) (file string, fe *File, doc int, err error) {
	k := ref.Chain.Root()
	ns, name := ref.Chain[:len(ref.Chain)-1].Transform(ref.RawNamespace, ref.RawName)
	want := repoindex.IdentKey{Group: ref.Key.Group, Kind: ref.Key.Kind, Name: name}
	for i := len(k.Patches) - 1; i >= 0; i-- {
		pf := k.Patches[i]
		if w.Index.Graph.SharedPatch(pf, k) {
			continue
		}
		if sel, ok := k.Selectors[pf]; ok && !w.selectsOne(k, sel, want) {
			// It patches other objects too: a value set there would
			// land on them as well.
			continue
		}
		fe, err := w.File(pf)
		if errors.Is(err, repoindex.ErrFileTooLarge) {
			return pf, nil, 0, fmt.Errorf("%s patches with %s: %w", k.File, pf, err)
		}
		if err != nil {
			continue
		}
		docs, err := fe.CurrentDocs()
		if err != nil {
			return pf, nil, 0, err
		}
		for d := len(docs) - 1; d >= 0; d-- {
			key, pns, ok := repoindex.Identify(docs[d])
			if !ok || key != want || (pns != "" && pns != ns) {
				continue
			}
			if fe.Unsafe != nil {
				return pf, nil, 0, fmt.Errorf("%s: %w", pf, fe.Unsafe)
			}
			return pf, fe, d, nil
		}
	}
	return "", nil, 0, nil
}

// selectsOne reports whether a patch target that selects by kind selects
// only the object want among what k renders: the only object of its kind
// there.
func (w *Workspace) selectsOne(k *repoindex.Kustomization, sel repoindex.PatchSelector, want repoindex.IdentKey) bool {
	// Without a kind it selects objects of every kind.
	if sel.Kind != want.Kind || sel.Group != "" && sel.Group != want.Group {
		return false
	}
	out, err := w.BuildEnv(k.Dir, false)
	if err != nil {
		return false
	}
	n := 0
	for _, obj := range out {
		apiVersion, _ := obj["apiVersion"].(string)
		if kind, _ := obj["kind"].(string); kind == want.Kind && repoindex.Group(apiVersion) == want.Group {
			n++
		}
	}
	return n == 1
}

// NewObjectPatch writes a new strategic-merge patch of the object ref
// points at, holding below its identity the lines body gives at the
// patch's indentation step, in the kustomization that renders it.
func (w *Workspace) NewObjectPatch(ref repoindex.DocRef, body func(step int) []string) (string, bool, []string, error) {
	base, err := w.Doc(ref.File, ref.Doc)
	if err != nil {
		return ref.File, false, nil, err
	}
	apiVersion, _ := yamledit.ScalarField(yamledit.DocRoot(base), "apiVersion")
	k := ref.Chain.Root()
	ns, name := ref.Chain[:len(ref.Chain)-1].Transform(ref.RawNamespace, ref.RawName)
	want := repoindex.IdentKey{Group: ref.Key.Group, Kind: ref.Key.Kind, Name: name}
	return w.newPatch(k, want, name, base, func(style layout, br string) string {
		lines := append(patchHeader(apiVersion, want.Kind, ns, name, style), body(style.step)...)
		return strings.Join(lines, br) + br
	})
}

// PlainKey is a key a patch can write without quotes.
var PlainKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)

// patchHeader is the first lines of a new strategic-merge patch: a note
// and the object's identity.
func patchHeader(apiVersion, kind, ns, name string, l layout) []string {
	note := "# Resources recommended by recommend-job."
	if kind == "HorizontalPodAutoscaler" {
		note = "# Utilization targets set by recommend-job with the requests they are relative to."
	}
	lines := []string{
		note,
		"apiVersion: " + apiVersion,
		"kind: " + kind,
		"metadata:",
		strings.Repeat(" ", l.step) + "name: " + name,
	}
	if ns != "" {
		lines = append(lines, strings.Repeat(" ", l.step)+"namespace: "+ns)
	}
	return lines
}

// nestedEntries is c's values under keys, nested in that order, and under
// a resources key unless direct (keys then lead to resources itself).
func nestedEntries(keys []string, direct bool, c Resources) []yamledit.Entry {
	leaf := resourceEntries(c)
	if !direct {
		leaf = []yamledit.Entry{{Key: "resources", Children: leaf}}
	}
	for j := len(keys) - 1; j >= 0; j-- {
		leaf = []yamledit.Entry{{Key: keys[j], Children: leaf}}
	}
	return leaf
}

// How well an existing patch document fits a change.
const (
	patchNone          = iota
	patchHasContainers // lists containers, not this one: it is added
	patchHasContainer  // names the container
	patchSetsResources // sets the container's resources
)

// patchFit is the best existing patch document for a change.
type patchFit struct {
	rank int
	file string
	fe   *File
	doc  int
}

// findPatch looks through k's patch files for the document that names the
// object (want, in namespace ns or none) and fits the change best. Of
// several that set the container's resources, the last wins, as it does
// when kustomize applies them; patches of other fields (replicas, say)
// are left alone. With own, a patch file another kustomization also
// patches with (one k is not built on) is not a candidate: editing it
// would change that one too.
func (w *Workspace) findPatch(c Resources, k *repoindex.Kustomization, want repoindex.IdentKey, ns string, at repoindex.ContainerPath, own bool) (patchFit, error) {
	var best patchFit
	for _, pf := range k.Patches {
		if own && w.Index.Graph.SharedPatch(pf, k) {
			continue
		}
		fe, err := w.File(pf)
		if errors.Is(err, repoindex.ErrFileTooLarge) {
			return patchFit{file: pf}, fmt.Errorf("%s patches with %s: %w", k.File, pf, err)
		}
		if err != nil {
			continue // kustomize reports a missing patch; the proof fails then
		}
		docs, err := fe.CurrentDocs()
		if err != nil {
			return patchFit{file: pf}, err
		}
		for i, d := range docs {
			key, pns, ok := repoindex.Identify(d)
			if !ok || key != want || (pns != "" && pns != ns) {
				continue
			}
			rank := patchNone
			ctr, err := repoindex.FindContainer(d, c.Container)
			switch {
			case err == nil && repoindex.HasKey(ctr, "resources"):
				rank = patchSetsResources
			case err == nil:
				rank = patchHasContainer
			case !errors.Is(err, repoindex.ErrContainerNotFound):
				return patchFit{file: pf}, fmt.Errorf("%s: %w", pf, err)
			case hasContainers(d, at):
				rank = patchHasContainers
			}
			if rank == patchNone || rank < best.rank || (rank == best.rank && rank != patchSetsResources) {
				continue
			}
			if fe.Unsafe != nil {
				return patchFit{file: pf}, fmt.Errorf("%s: %w", pf, fe.Unsafe)
			}
			best = patchFit{rank: rank, file: pf, fe: fe, doc: i}
		}
	}
	return best, nil
}

// Overridden reports whether a kustomization on the way from ref's file to
// its renderer, or a component of one, has a patch that sets the
// container's resources: an edit of the defining file would not show, so
// the values go in a patch of the renderer, which applies last.
func (w *Workspace) Overridden(c Resources, ref repoindex.DocRef) bool {
	base, err := w.Doc(ref.File, ref.Doc)
	if err != nil {
		return false
	}
	_, at, err := repoindex.LocateContainer(base, c.Container)
	if err != nil {
		return false
	}
	for i, k := range ref.Chain {
		// A layer's patches name the object as the layers below render it.
		ns, name := ref.Chain[:i].Transform(ref.RawNamespace, ref.RawName)
		want := repoindex.IdentKey{Group: ref.Key.Group, Kind: ref.Key.Kind, Name: name}
		layers := []*repoindex.Kustomization{k}
		for _, d := range k.Components {
			if comp := w.Index.Graph.ByDir[d]; comp != nil {
				layers = append(layers, comp)
			}
		}
		for _, l := range layers {
			best, err := w.findPatch(c, l, want, ns, at, false)
			if err == nil && best.rank == patchSetsResources {
				return true
			}
		}
	}
	return false
}

// layout is how a file indents: mappings by step, block sequences by seq
// under their key (0 or step).
type layout struct{ step, seq int }

// layoutOf reads a kustomization's layout from its resources list, with
// step as the mapping indentation.
func layoutOf(root *yaml.Node, step int) layout {
	l := layout{step: step}
	for _, key := range []string{"resources", "patches", "components", "bases"} {
		k, v, _ := yamledit.Lookup(root, key)
		if v != nil && v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			l.seq = max(v.Column-k.Column, 0)
			break
		}
	}
	return l
}

// resourceEntries returns the change's values as entries to write.
func resourceEntries(c Resources) []yamledit.Entry {
	return yamledit.ResourceEntries(c.Requests, c.Limits)
}

// containerLines renders one container item of a patch at indent.
func containerLines(c Resources, indent, step int) []string {
	pad := strings.Repeat(" ", indent)
	lines := []string{pad + "- name: " + c.Container}
	return yamledit.BlockLines([]yamledit.Entry{{Key: "resources", Children: resourceEntries(c)}}, indent+2, step, lines)
}

// patchText is a new strategic-merge patch holding only the object's
// identity and the container's resources.
func patchText(apiVersion, kind, ns, name string, at repoindex.ContainerPath, c Resources, l layout, br string) string {
	lines := patchHeader(apiVersion, kind, ns, name, l)
	indent := 0
	for _, key := range append(slices.Clone(at.Pod), at.Field) {
		lines = append(lines, strings.Repeat(" ", indent)+key+":")
		indent += l.step
	}
	indent += l.seq - l.step
	lines = append(lines, containerLines(c, indent, l.step)...)
	return strings.Join(lines, br) + br
}

// hasContainers reports whether a patch document lists containers where
// the object has the container.
func hasContainers(d *yaml.Node, at repoindex.ContainerPath) bool {
	pod, err := repoindex.MappingAt(yamledit.DocRoot(d), at.Pod)
	if err != nil || pod == nil {
		return false
	}
	_, seq, _ := yamledit.Lookup(pod, at.Field)
	return seq != nil && seq.Kind == yaml.SequenceNode
}

// addContainer adds the change's container to the containers (or
// initContainers) list of a patch that names the object without it.
func (w *Workspace) addContainer(fe *File, doc int, at repoindex.ContainerPath, c Resources) error {
	docs, err := fe.CurrentDocs()
	if err != nil {
		return err
	}
	pod, err := repoindex.MappingAt(yamledit.DocRoot(docs[doc]), at.Pod)
	if err != nil || pod == nil {
		return fmt.Errorf("%w: %s: the patch of %s has no %s", repoindex.ErrUnsafeFile, fe.Name, c.Target, strings.Join(at.Pod, "."))
	}
	_, seq, _ := yamledit.Lookup(pod, at.Field)
	if seq == nil || seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		return fmt.Errorf("%w: %s: %s of the patch is not a block list", repoindex.ErrUnsafeFile, fe.Name, at.Field)
	}
	if err := yamledit.UnsafeNode(seq, at.Field); err != nil {
		return fmt.Errorf("%s: %w", fe.Name, err)
	}
	return appendItem(fe, seq, containerLines(c, seq.Column-1, yamledit.IndentStep(yamledit.DocRoot(docs[doc]))))
}

// addPatchEntry lists file in a kustomization's patches, or in its
// patchesStrategicMerge when that is what it uses.
func addPatchEntry(fe *File, file string, l layout) error {
	docs, err := fe.CurrentDocs()
	if err != nil {
		return err
	}
	root := yamledit.DocRoot(docs[0])
	_, patches, _ := yamledit.Lookup(root, "patches")
	_, psm, _ := yamledit.Lookup(root, "patchesStrategicMerge")
	block := func(n *yaml.Node) bool {
		return n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0
	}
	pk, _, _ := yamledit.Lookup(root, "patches")
	src := yamledit.NewSource(fe.Data)
	switch {
	case patches != nil && block(patches):
		return appendItem(fe, patches, []string{strings.Repeat(" ", patches.Column-1) + "- path: " + file})
	case patches == nil && psm != nil && block(psm):
		return appendItem(fe, psm, []string{strings.Repeat(" ", psm.Column-1) + "- " + file})
	case patches != nil && patches.Kind == yaml.ScalarNode && patches.Value == "" && patches.Style == 0 &&
		patches.Line == pk.Line && src.EmptyAfterKey(pk):
		// "patches:" and nothing, perhaps over commented-out entries: the
		// entry goes after them, so that uncommenting them keeps one list.
		col := pk.Column
		pad := strings.Repeat(" ", col-1)
		p := &yamledit.Planner{Src: src}
		p.InsertLines(src.LastCommentedEntry(pk.Line), []string{pad + strings.Repeat(" ", l.seq) + "- path: " + file}, col)
		return commit(p, fe)
	case patches != nil:
		return fmt.Errorf("%w: patches is not a block list", repoindex.ErrUnsafeFile)
	}
	if len(root.Content) == 0 {
		return fmt.Errorf("%w: empty kustomization", repoindex.ErrUnsafeFile)
	}
	last, err := src.LastLine(root)
	if err != nil {
		return fmt.Errorf("%w: %w", repoindex.ErrUnsafeFile, err)
	}
	col := root.Content[0].Column
	pad := strings.Repeat(" ", col-1)
	lines := []string{pad + "patches:", pad + strings.Repeat(" ", l.seq) + "- path: " + file}
	p := &yamledit.Planner{Src: src}
	// After the commented-out entries of the last key (components: over
	// "# - components/x" lines, say), so that uncommenting them, as such
	// files invite, does not put them under patches.
	p.InsertLines(src.LastCommentedEntry(last), lines, col)
	return commit(p, fe)
}

// appendItem adds lines, a new item, after the last item of block
// sequence seq, and after the commented-out items that follow it.
func appendItem(fe *File, seq *yaml.Node, lines []string) error {
	src := yamledit.NewSource(fe.Data)
	last, err := src.LastLine(seq)
	if err != nil {
		return fmt.Errorf("%w: %w", repoindex.ErrUnsafeFile, err)
	}
	p := &yamledit.Planner{Src: src}
	p.InsertLines(src.LastCommentedEntry(last), lines, seq.Column)
	return commit(p, fe)
}

// commit splices the planned text into fe and checks that it still parses.
func commit(p *yamledit.Planner, fe *File) error {
	out, err := p.Splice()
	if err != nil {
		return fmt.Errorf("%w: %w", repoindex.ErrUnsafeFile, err)
	}
	docs, err := yamledit.ParseDocuments(out)
	if err != nil {
		return fmt.Errorf("%w: the edit would not parse: %w", repoindex.ErrUnsafeFile, err)
	}
	fe.Data, fe.docs = out, docs
	fe.Subtree = false
	return nil
}
