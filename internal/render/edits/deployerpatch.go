package edits

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// variableRef is a request or limit written as ${name}, which Flux's
// postBuild substitution fills.
var variableRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=][^}]*)?\}$`)

// ViaDeployer writes change c where its deployer decides, when the file
// that defines the target is not the change's alone to edit: deployers of
// other namespaces or names render it too, or a value in it is a variable
// that a deployer's postBuild fills. It reports whether it did (res says
// how it went; false leaves the change to the usual placement), and
// returns the deployer its edit must be proved as and the files it
// touched.
func (w *Workspace) ViaDeployer(c Resources, ref repoindex.DocRef, find repoindex.Finder, res *Placed) (bool, *repoindex.Deployer, []string) {
	dep := w.Index.DeployersOf(ref, c.Target)
	var vars map[corev1.ResourceName]string
	var limitVars map[corev1.ResourceName]string
	if find == nil {
		vars, limitVars = w.variables(c, ref)
	}
	if d := dep.Mine; !dep.Shared() && len(vars)+len(limitVars) == 0 {
		if d == nil && len(dep.All) > 0 && find == nil {
			// Every deployer of the file gives the object another
			// namespace or name: the target comes from elsewhere.
			var all []string
			for _, o := range dep.All {
				all = append(all, o.String())
			}
			slices.Sort(all)
			res.File = ref.File
			res.Err = fmt.Errorf("%w: %s defines %s, but only %s deploys it, as another object; the deployer of %s is not in the repository as written",
				repoindex.ErrTargetNotFound, ref.File, ref.Key.Name, strings.Join(all, ", "), c.Target)
			return true, nil, nil
		}
		if d == nil || find != nil {
			return false, nil, nil
		}
		if _, name := w.Index.Identity(d, ref); name == ref.Key.Name {
			return false, nil, nil
		}
		// The deployer renames the object: only its build shows the target.
		res.File = ref.File
		if why := w.Index.SharedFor(ref); why != "" {
			if w.Index.CanPatch(d) != "" {
				res.Err = fmt.Errorf("%w: %s; %s renames the target and cannot carry a patch of its own: %s", repoindex.ErrSharedSource, why, d, w.Index.CanPatch(d))
				return true, nil, nil
			}
			res.File, res.Changed, res.Err = w.deployerPatch(c, ref, d)
		} else {
			res.Changed, res.Err = w.InPlace(c, ref, nil)
		}
		if res.Err != nil {
			return true, nil, nil
		}
		return true, d, []string{res.File}
	}
	res.File = ref.File
	if len(vars)+len(limitVars) > 0 {
		res.File, res.Changed, res.Err = w.substitute(c, ref, dep, vars, limitVars)
		if res.Err != nil {
			return true, nil, nil
		}
		return true, dep.Mine, []string{res.File}
	}
	switch {
	case find != nil:
		res.Err = dep.SharedError(ref, c.Target, "the marked values would change for every one of them")
		return true, nil, nil
	case dep.Mine == nil:
		res.Err = dep.SharedError(ref, c.Target, "")
		return true, nil, nil
	case w.Index.CanPatch(dep.Mine) != "":
		res.Err = dep.SharedError(ref, c.Target, w.Index.CanPatch(dep.Mine))
		return true, nil, nil
	}
	res.File, res.Changed, res.Err = w.deployerPatch(c, ref, dep.Mine)
	if res.Err != nil {
		return true, nil, nil
	}
	return true, dep.Mine, []string{res.File}
}

// variables returns the requests and limits of c that the target's
// container writes as a ${variable}, by the variable's name.
func (w *Workspace) variables(c Resources, ref repoindex.DocRef) (requests, limits map[corev1.ResourceName]string) {
	doc, err := w.Doc(ref.File, ref.Doc)
	if err != nil {
		return nil, nil
	}
	ctr, err := repoindex.FindContainer(doc, c.Container)
	if err != nil {
		return nil, nil
	}
	_, res, _ := yamledit.Lookup(ctr, "resources")
	find := func(section string, values corev1.ResourceList) map[corev1.ResourceName]string {
		_, sec, _ := yamledit.Lookup(res, section)
		var out map[corev1.ResourceName]string
		for name := range values {
			v, ok := yamledit.ScalarField(sec, string(name))
			if m := variableRef.FindStringSubmatch(v); ok && m != nil {
				if out == nil {
					out = map[corev1.ResourceName]string{}
				}
				out[name] = m[1]
			}
		}
		return out
	}
	if res == nil || res.Kind != yaml.MappingNode {
		return nil, nil
	}
	return find("requests", c.Requests), find("limits", c.Limits)
}

// substitute sets the variables that fill c's values where the target's
// deployer sets them, in its postBuild.substitute, when that deployer is
// the only one that reads the file and every value of c is a variable.
func (w *Workspace) substitute(c Resources, ref repoindex.DocRef, dep repoindex.Deployers, vars, limitVars map[corev1.ResourceName]string) (string, bool, error) {
	var names []string
	for _, v := range vars {
		names = append(names, "${"+v+"}")
	}
	for _, v := range limitVars {
		names = append(names, "${"+v+"}")
	}
	slices.Sort(names)
	what := fmt.Sprintf("%s writes %s of %s as %s", ref.File, c.Container, c.Target, strings.Join(names, ", "))
	d := dep.Mine
	switch {
	case d == nil || d.Kind != repoindex.FluxKustomization:
		return ref.File, false, fmt.Errorf("%w: %s, which no Flux Kustomization that deploys the target fills with postBuild.substitute", repoindex.ErrSharedSource, what)
	case len(dep.All) > 1:
		var others []string
		for _, o := range dep.All {
			if o != d {
				others = append(others, o.String())
			}
		}
		slices.Sort(others)
		return ref.File, false, fmt.Errorf("%w: %s, and %s reads it too: setting the variable in %s would not reach them, and setting it in the file would change them", repoindex.ErrSharedSource, what, strings.Join(others, ", "), d)
	case len(vars) != len(c.Requests) || len(limitVars) != len(c.Limits):
		return ref.File, false, fmt.Errorf("%w: %s but not every value the change sets: refusing to split the change between %s and %s", repoindex.ErrSharedSource, what, ref.File, d.File)
	}
	for _, v := range append(slices.Collect(mapValues(vars)), slices.Collect(mapValues(limitVars))...) {
		if _, ok := d.Substitute[v]; !ok {
			from := ""
			if len(d.SubstituteFrom) > 0 {
				from = " (it may come from " + strings.Join(d.SubstituteFrom, ", ") + ", which the job does not edit)"
			}
			return ref.File, false, fmt.Errorf("%w: %s, and %s does not set ${%s} in postBuild.substitute%s", repoindex.ErrSharedSource, what, d, v, from)
		}
	}
	fe, err := w.File(d.File)
	if err != nil {
		return d.File, false, err
	}
	if fe.Unsafe != nil {
		return d.File, false, fmt.Errorf("%s: %w", d.File, fe.Unsafe)
	}
	docs, err := fe.CurrentDocs()
	if err != nil || d.Doc >= len(docs) {
		return d.File, false, fmt.Errorf("%w: %s: document %d of %s is gone", repoindex.ErrUnsafeFile, d.File, d.Doc+1, d)
	}
	_, spec, _ := yamledit.Lookup(yamledit.DocRoot(docs[d.Doc]), "spec")
	_, post, _ := yamledit.Lookup(spec, "postBuild")
	_, sub, _ := yamledit.Lookup(post, "substitute")
	p := &yamledit.Planner{Src: yamledit.NewSource(fe.Data)}
	set := func(values corev1.ResourceList, vs map[corev1.ResourceName]string) error {
		for name, v := range vs {
			k, n, dup := yamledit.Lookup(sub, v)
			if dup || n == nil || n.Kind != yaml.ScalarNode {
				return fmt.Errorf("%w: %s: postBuild.substitute.%s of %s is not one plain value", repoindex.ErrUnsafeFile, d.File, v, d)
			}
			q := values[name]
			if yamledit.SameQuantity(n, q) {
				continue
			}
			value := q.String()
			if _, err := strconv.ParseFloat(value, 64); err == nil && n.Style == 0 {
				// Flux's variables are strings: a bare number is not one.
				p.ReplaceQuoted(k, n, value)
				continue
			}
			p.Replace(k, n, value)
		}
		return nil
	}
	if err := set(c.Requests, vars); err != nil {
		return d.File, false, err
	}
	if err := set(c.Limits, limitVars); err != nil {
		return d.File, false, err
	}
	if err := p.Err(); err != nil {
		return d.File, false, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	if len(p.Edits) == 0 {
		return d.File, false, nil
	}
	return d.File, true, commit(p, fe)
}

// mapValues yields the values of m.
func mapValues(m map[corev1.ResourceName]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// deployerPatch sets c's values with a strategic-merge patch in the
// patches of d, the target's deployer: a patch there that targets the
// object gains the container's values, or a new one is added. It returns
// the deployer's file and whether its bytes changed.
func (w *Workspace) deployerPatch(c Resources, ref repoindex.DocRef, d *repoindex.Deployer) (string, bool, error) {
	base, err := w.Doc(ref.File, ref.Doc)
	if err != nil {
		return ref.File, false, err
	}
	_, at, err := repoindex.LocateContainer(base, c.Container)
	if err != nil {
		return ref.File, false, fmt.Errorf("%s: %w", ref.File, err)
	}
	apiVersion, _ := yamledit.ScalarField(yamledit.DocRoot(base), "apiVersion")
	// The deployer's patches join the kustomization of its path, and apply
	// before its name transforms: they name the object as the layers
	// under that kustomization render it.
	name := ref.RawName
	if ref.Chain != nil {
		_, name = ref.Chain[:len(ref.Chain)-1].Transform(ref.RawNamespace, ref.RawName)
	}
	fe, err := w.File(d.File)
	if err != nil {
		return d.File, false, err
	}
	if fe.Unsafe != nil {
		return d.File, false, fmt.Errorf("%s: %w", d.File, fe.Unsafe)
	}
	docs, err := fe.CurrentDocs()
	if err != nil || d.Doc >= len(docs) {
		return d.File, false, fmt.Errorf("%w: %s: document %d of %s is gone", repoindex.ErrUnsafeFile, d.File, d.Doc+1, d)
	}
	root := yamledit.DocRoot(docs[d.Doc])
	holder, err := patchesHolder(root, d)
	if err != nil {
		return d.File, false, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	step := max(yamledit.IndentStep(root), 2)
	src := yamledit.NewSource(fe.Data)
	_, patches, _ := yamledit.Lookup(holder, "patches")
	text := patchText(apiVersion, ref.Key.Kind, "", name, at, c, layout{step: step, seq: step}, "\n")
	if patches != nil && patches.Kind == yaml.SequenceNode {
		if item := ownPatch(patches, ref.Key.Kind, name); item != nil {
			return w.updatePatch(fe, src, item, c, d, at)
		}
	}
	item := func(indent int) []string {
		pad := strings.Repeat(" ", indent)
		lines := []string{pad + "- patch: |"}
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			lines = append(lines, strings.TrimRight(pad+"    "+l, " "))
		}
		lines = append(lines, pad+"  target:")
		if g := repoindex.Group(apiVersion); g != "" {
			lines = append(lines, pad+"    group: "+g)
		}
		return append(lines, pad+"    kind: "+ref.Key.Kind, pad+"    name: "+name)
	}
	p := &yamledit.Planner{Src: src}
	switch {
	case patches != nil && patches.Kind == yaml.SequenceNode && patches.Style&yaml.FlowStyle == 0 && len(patches.Content) > 0:
		return d.File, true, appendItem(fe, patches, item(patches.Column-1))
	case patches != nil && !yamledit.IsNull(patches):
		return d.File, false, fmt.Errorf("%w: %s: the patches of %s are not a block list", repoindex.ErrUnsafeFile, d.File, d)
	case holder.Kind != yaml.MappingNode || holder.Style&yaml.FlowStyle != 0 || len(holder.Content) == 0:
		return d.File, false, fmt.Errorf("%w: %s: where %s's patches go is not a block mapping", repoindex.ErrUnsafeFile, d.File, d)
	}
	last, err := src.LastLine(holder)
	if err != nil {
		return d.File, false, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	col := holder.Content[0].Column
	var lines []string
	if holder.Tag == "!!new" {
		// The kustomize section is new: its key comes first, at the
		// source's keys' column, and its patches a step deeper.
		lines = []string{strings.Repeat(" ", col-1) + "kustomize:"}
		col += step
	}
	pad := strings.Repeat(" ", col-1)
	lines = append(lines, pad+"patches:")
	lines = append(lines, item(col-1+step)...)
	p.InsertLines(src.LastCommentedEntry(last), lines, col)
	return d.File, true, commit(p, fe)
}

// ownPatch returns the patch entry the job wrote for kind/name, or nil.
func ownPatch(patches *yaml.Node, kind, name string) *yaml.Node {
	for _, item := range patches.Content {
		_, target, _ := yamledit.Lookup(item, "target")
		k, _ := yamledit.ScalarField(target, "kind")
		n, _ := yamledit.ScalarField(target, "name")
		if k == kind && n == name && isOwnPatch(item) {
			return item
		}
	}
	return nil
}

// isOwnPatch reports whether a patch entry is one the job writes: an
// inline strategic-merge patch in a literal block that starts with the
// job's note, and a target. The deployer's other patches of the object
// stay as they are; the job's comes after them and wins.
func isOwnPatch(item *yaml.Node) bool {
	_, p, _ := yamledit.Lookup(item, "patch")
	return item.Kind == yaml.MappingNode && len(item.Content) == 4 && p != nil &&
		p.Kind == yaml.ScalarNode && p.Style&yaml.LiteralStyle != 0 &&
		strings.HasPrefix(p.Value, patchHeader("", "Deployment", "", "", layout{})[0]+"\n")
}

// updatePatch sets c's values in the patch the job wrote before, keeping
// its text but for the values.
func (w *Workspace) updatePatch(fe *File, src *yamledit.Source, item *yaml.Node, c Resources, d *repoindex.Deployer, at repoindex.ContainerPath) (string, bool, error) {
	_, p, _ := yamledit.Lookup(item, "patch")
	inner := newFile(&repoindex.IndexedFile{Name: d.File, Data: []byte(p.Value)})
	changed, err := inner.Apply(c, 0, nil)
	if errors.Is(err, repoindex.ErrContainerNotFound) {
		// Another container of the object: it joins the patch.
		err = w.addContainer(inner, 0, at, c)
		changed = err == nil
	}
	if err != nil || !changed {
		return d.File, false, err
	}
	last, err := src.LastLine(p)
	if err != nil {
		return d.File, false, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	ind, _, _ := src.Indent(p.Line + 1)
	pad := strings.Repeat(" ", ind)
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(inner.Data), "\n"), "\n") {
		lines = append(lines, strings.TrimRight(pad+l, " "))
	}
	br := src.LineBreak(p.Line)
	end := len(src.Data)
	if last < src.LineCount() {
		end = src.LineStart(last + 1)
	}
	out, err := yamledit.ApplySplices(src.Data, []yamledit.Splice{{Start: src.LineStart(p.Line + 1), End: end, Text: strings.Join(lines, br) + br}})
	if err != nil {
		return d.File, false, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	docs, err := yamledit.ParseDocuments(out)
	if err != nil {
		return d.File, false, fmt.Errorf("%w: %s: the edit would not parse: %w", repoindex.ErrUnsafeFile, d.File, err)
	}
	fe.Data, fe.docs, fe.Subtree = out, docs, false
	return d.File, true, nil
}

// patchesHolder returns the mapping whose patches are d's: a Flux
// Kustomization's spec, an Application source's kustomize section. A
// source without one gets a new, empty mapping tagged !!new, whose place
// is the source's.
func patchesHolder(root *yaml.Node, d *repoindex.Deployer) (*yaml.Node, error) {
	_, spec, _ := yamledit.Lookup(root, "spec")
	if spec == nil || spec.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s has no spec", d)
	}
	if d.Kind == repoindex.FluxKustomization {
		return spec, nil
	}
	var src *yaml.Node
	if d.Source < 0 {
		_, src, _ = yamledit.Lookup(spec, "source")
	} else if _, srcs, _ := yamledit.Lookup(spec, "sources"); srcs != nil && d.Source < len(srcs.Content) {
		src = srcs.Content[d.Source]
	}
	if src == nil || src.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s's source is gone", d)
	}
	_, k, _ := yamledit.Lookup(src, "kustomize")
	if k != nil {
		return k, nil
	}
	if src.Style&yaml.FlowStyle != 0 || len(src.Content) == 0 {
		return nil, fmt.Errorf("the source of %s is not a block mapping", d)
	}
	// The new section's entries sit one step deeper than the source's keys;
	// its place is after the source's last line.
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!new", Line: src.Line, Column: src.Content[0].Column, Content: src.Content}, nil
}
