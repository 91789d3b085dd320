package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// fileEdit accumulates the changes made to one file.
type fileEdit struct {
	name string
	orig []byte
	data []byte
	docs []*yaml.Node // data parsed; nil when it must be parsed again
	mode fs.FileMode
	// unsafe says why the file must not be edited in place, if it must not.
	unsafe error
	// created marks a file this run writes for the first time.
	created bool
	// reencoded counts the subtrees re-serialised because splicing was
	// impossible; tests read it.
	reencoded int
	// method is how the last edit that changed the file was made.
	method Method
}

func newFileEdit(f *repoindex.IndexedFile) *fileEdit {
	return &fileEdit{name: f.Name, orig: f.Data, data: f.Data, mode: f.Mode, unsafe: f.Unsafe}
}

// containerFinder finds a container of a pod template by name.
func containerFinder(name string) repoindex.Finder {
	return func(doc *yaml.Node) (*yaml.Node, bool, error) {
		c, err := repoindex.FindContainer(doc, name)
		return c, false, err
	}
}

// dirty reports whether the file must be written.
func (fe *fileEdit) dirty() bool { return !bytes.Equal(fe.data, fe.orig) }

// currentDocs returns the file as it now parses.
func (fe *fileEdit) currentDocs() ([]*yaml.Node, error) {
	if fe.docs == nil {
		docs, err := yamledit.ParseDocuments(fe.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fe.name, err)
		}
		fe.docs = docs
	}
	return fe.docs, nil
}

// apply makes one change to document doc and reports whether the bytes
// changed; find defaults to the change's container.
func (fe *fileEdit) apply(c Change, doc int, find repoindex.Finder) (bool, error) {
	if find == nil {
		find = containerFinder(c.Container)
	}
	docs := fe.docs
	if docs == nil {
		var err error
		if docs, err = yamledit.ParseDocuments(fe.data); err != nil {
			return false, fmt.Errorf("%s: %w", fe.name, err)
		}
	}
	changed, err := fe.edit(docs, doc, c, finding(find))
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.name, err)
	}
	return changed, nil
}

// applyAt makes one change to document doc at path, a list of mapping
// keys from its root, creating the keys that are missing: the mapping
// that holds resources, or, when direct, the resources mapping itself.
func (fe *fileEdit) applyAt(c Change, doc int, path []string, direct bool) (bool, error) {
	docs, err := fe.currentDocs()
	if err != nil {
		return false, err
	}
	changed, err := fe.edit(docs, doc, c, pathPlacer(path, direct))
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.name, err)
	}
	return changed, nil
}

// placer plans a change's values into a document.
type placer func(p *yamledit.Planner, doc *yaml.Node, c Change) error

// finding places the values in the mapping find finds.
func finding(find repoindex.Finder) placer {
	return func(p *yamledit.Planner, doc *yaml.Node, c Change) error {
		ctr, direct, err := find(doc)
		if err != nil {
			return err
		}
		p.Step = yamledit.IndentStep(ctr, yamledit.DocRoot(doc))
		return setResources(p, ctr, direct, c)
	}
}

// pathPlacer places the values at path from the document's root, adding
// the mappings that are missing on the way.
func pathPlacer(path []string, direct bool) placer {
	return func(p *yamledit.Planner, doc *yaml.Node, c Change) error {
		root := yamledit.DocRoot(doc)
		p.Step = yamledit.IndentStep(root)
		m := root
		for i, key := range path {
			where := strings.Join(path[:i+1], ".")
			k, v, dup := yamledit.Lookup(m, key)
			switch {
			case dup:
				return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, where)
			case k != nil && !yamledit.IsNull(v) && v.Kind != yaml.MappingNode:
				return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, where, v.Line)
			case k != nil && !yamledit.IsNull(v):
				if err := yamledit.UnsafeNode(v, where); err != nil {
					return err
				}
				m = v
				continue
			}
			// The rest of the path is new: nested entries that end with
			// the values.
			leaf := nestedEntries(path[i+1:], direct, c)
			p.Scopes = []*yaml.Node{m}
			if k == nil {
				p.Insert(m, []yamledit.Entry{{Key: key, Children: leaf}})
			} else {
				p.Fill(m, k, v, leaf)
			}
			return nil
		}
		return setResources(p, m, direct, c)
	}
}

func (fe *fileEdit) edit(docs []*yaml.Node, i int, c Change, place placer) (bool, error) {
	fe.docs = docs
	if i >= len(docs) {
		return false, fmt.Errorf("document %d is gone", i+1)
	}
	src := yamledit.NewSource(fe.data)
	p := &yamledit.Planner{Src: src}
	if err := place(p, docs[i], c); err != nil {
		return false, err
	}
	if len(p.Muts) == 0 {
		return false, nil
	}
	// Where splicing fails, the smallest subtree that holds the edit is
	// re-serialised on its own lines instead; their places are taken
	// before the edit moves nodes.
	var regions []yamledit.Region
	var rerr error
	for _, n := range p.Scopes {
		r, err := src.RegionOf(docs[i], n)
		if err != nil {
			rerr = errors.Join(rerr, err)
			continue
		}
		regions = append(regions, r)
	}

	// From here on docs turn into the model of the edited file.
	fe.docs = nil
	out, err := p.Splice()
	for _, m := range p.Muts {
		m()
	}
	if err == nil {
		var next []*yaml.Node
		if next, err = yamledit.Verify(out, docs, nil); err == nil {
			changed := !bytes.Equal(out, fe.data)
			fe.data, fe.docs = out, next
			if changed {
				fe.method = MethodSplice
			}
			return changed, nil
		}
	}
	// The mutations move comments but keep every line of them; a
	// re-serialisation may not, which verify checks against these.
	comments := yamledit.CollectComments(docs)
	for _, r := range regions {
		out, ferr := src.Reserialise(r, p.Step)
		if ferr == nil {
			var next []*yaml.Node
			if next, ferr = yamledit.Verify(out, docs, comments); ferr == nil {
				changed := !bytes.Equal(out, fe.data)
				fe.data, fe.docs = out, next
				fe.reencoded++
				if changed {
					fe.method = MethodSubtree
				}
				return changed, nil
			}
		}
		rerr = errors.Join(rerr, fmt.Errorf("lines %d-%d: %w", r.First, r.Last, ferr))
	}
	if rerr == nil {
		rerr = errors.New("no subtree to re-serialise")
	}
	return false, fmt.Errorf("%w: cannot splice the values into the file (%w), and re-serialising only the lines of the edited subtree would change more (%w); refusing to rewrite more of the file",
		repoindex.ErrUnsafeFile, err, rerr)
}

// setResources plans the change's values into container mapping ctr,
// creating resources, requests and limits where they are missing. When
// direct, ctr is the resources mapping itself.
func setResources(p *yamledit.Planner, ctr *yaml.Node, direct bool, c Change) error {
	sections := resourceEntries(c)
	if len(sections) == 0 {
		return nil
	}

	where := fmt.Sprintf("container %q: resources", c.Container)
	rk, rv, dup := yamledit.Lookup(ctr, "resources")
	if direct {
		rk, rv, dup = ctr, ctr, false
	}
	p.Scopes = []*yaml.Node{ctr}
	if !direct && rv != nil && rv.Kind == yaml.MappingNode {
		p.Scopes = []*yaml.Node{rv, ctr}
	}
	switch {
	case dup:
		return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, where)
	case rk == nil:
		p.Insert(ctr, []yamledit.Entry{{Key: "resources", Children: sections}})
		return nil
	}
	if err := yamledit.UnsafeTree(rv, where); err != nil {
		return err
	}
	if yamledit.IsNull(rv) {
		p.Fill(ctr, rk, rv, sections)
		return nil
	}
	if rv.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a mapping (line %d)", where, rv.Line)
	}
	var missing []yamledit.Entry
	for _, sec := range sections {
		at := where + "." + sec.Key
		sk, sv, dup := yamledit.Lookup(rv, sec.Key)
		switch {
		case dup:
			return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, at)
		case sk == nil:
			missing = append(missing, sec)
			continue
		case yamledit.IsNull(sv):
			p.Fill(rv, sk, sv, sec.Children)
			continue
		case sv.Kind != yaml.MappingNode:
			return fmt.Errorf("%s is not a mapping (line %d)", at, sv.Line)
		}
		var add []yamledit.Entry
		for _, q := range sec.Children {
			qk, qv, dup := yamledit.Lookup(sv, q.Key)
			switch {
			case dup:
				return fmt.Errorf("%w: %s.%s is defined twice", repoindex.ErrUnsafeFile, at, q.Key)
			case qk == nil:
				add = append(add, q)
			case qv.Kind != yaml.ScalarNode:
				return fmt.Errorf("%s.%s is not a quantity (line %d)", at, q.Key, qv.Line)
			case !yamledit.SameQuantity(qv, q.Quantity):
				p.Replace(qk, qv, q.Value)
			}
		}
		if len(add) > 0 {
			p.Insert(sv, add)
		}
	}
	if len(missing) > 0 {
		p.Insert(rv, missing)
	}
	return nil
}
