package edits

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

// File accumulates the edits made to one file.
type File struct {
	Name string
	// Orig are the file's bytes as they were, Data as edited.
	Orig []byte
	Data []byte
	docs []*yaml.Node // Data parsed; nil when it must be parsed again
	Mode fs.FileMode
	// Unsafe says why the file must not be edited in place, if it must not.
	Unsafe error
	// Created marks a file this run writes for the first time.
	Created bool
	// Reencoded counts the subtrees re-serialised because splicing was
	// impossible; tests read it.
	Reencoded int
	// Subtree says that the last edit that changed the file re-serialised
	// a subtree rather than splicing the values in.
	Subtree bool
}

func newFile(f *repoindex.IndexedFile) *File {
	return &File{Name: f.Name, Orig: f.Data, Data: f.Data, Mode: f.Mode, Unsafe: f.Unsafe}
}

// ContainerFinder finds a container of a pod template by name.
func ContainerFinder(name string) repoindex.Finder {
	return func(doc *yaml.Node) (*yaml.Node, bool, error) {
		c, err := repoindex.FindContainer(doc, name)
		return c, false, err
	}
}

// Dirty reports whether the file must be written.
func (fe *File) Dirty() bool { return !bytes.Equal(fe.Data, fe.Orig) }

// Revert drops the file's edits.
func (fe *File) Revert() { fe.SetData(fe.Orig) }

// SetData replaces the file's bytes as edited.
func (fe *File) SetData(data []byte) { fe.Data, fe.docs = data, nil }

// CurrentDocs returns the file as it now parses.
func (fe *File) CurrentDocs() ([]*yaml.Node, error) {
	if fe.docs == nil {
		docs, err := yamledit.ParseDocuments(fe.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fe.Name, err)
		}
		fe.docs = docs
	}
	return fe.docs, nil
}

// Apply makes one change to document doc and reports whether the bytes
// changed; find defaults to the change's container.
func (fe *File) Apply(c Resources, doc int, find repoindex.Finder) (bool, error) {
	if find == nil {
		find = ContainerFinder(c.Container)
	}
	docs := fe.docs
	if docs == nil {
		var err error
		if docs, err = yamledit.ParseDocuments(fe.Data); err != nil {
			return false, fmt.Errorf("%s: %w", fe.Name, err)
		}
	}
	changed, err := fe.Edit(docs, doc, finding(find, c))
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.Name, err)
	}
	return changed, nil
}

// ApplyAt makes one change to document doc at path, a list of mapping
// keys from its root, creating the keys that are missing: the mapping
// that holds resources, or, when direct, the resources mapping itself.
func (fe *File) ApplyAt(c Resources, doc int, path []string, direct bool) (bool, error) {
	docs, err := fe.CurrentDocs()
	if err != nil {
		return false, err
	}
	changed, err := fe.Edit(docs, doc, pathPlacer(path, direct, c))
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.Name, err)
	}
	return changed, nil
}

// Placer plans values into a document.
type Placer func(p *yamledit.Planner, doc *yaml.Node) error

// finding places c's values in the mapping find finds.
func finding(find repoindex.Finder, c Resources) Placer {
	return func(p *yamledit.Planner, doc *yaml.Node) error {
		ctr, direct, err := find(doc)
		if err != nil {
			return err
		}
		p.Step = yamledit.IndentStep(ctr, yamledit.DocRoot(doc))
		return setResources(p, ctr, direct, c)
	}
}

// pathPlacer places c's values at path from the document's root, adding
// the mappings that are missing on the way.
func pathPlacer(path []string, direct bool, c Resources) Placer {
	return func(p *yamledit.Planner, doc *yaml.Node) error {
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

// Edit plans with place into document i of docs, the file as it parses
// now, and splices the plan into the file's bytes; where splicing fails,
// it re-serialises the smallest subtree that holds the edit. It reports
// whether the bytes changed.
func (fe *File) Edit(docs []*yaml.Node, i int, place Placer) (bool, error) {
	fe.docs = docs
	if i >= len(docs) {
		return false, fmt.Errorf("document %d is gone", i+1)
	}
	src := yamledit.NewSource(fe.Data)
	p := &yamledit.Planner{Src: src}
	if err := place(p, docs[i]); err != nil {
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
			changed := !bytes.Equal(out, fe.Data)
			fe.Data, fe.docs = out, next
			if changed {
				fe.Subtree = false
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
				changed := !bytes.Equal(out, fe.Data)
				fe.Data, fe.docs = out, next
				fe.Reencoded++
				if changed {
					fe.Subtree = true
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
func setResources(p *yamledit.Planner, ctr *yaml.Node, direct bool, c Resources) error {
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
