package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/yamledit"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
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
type placer func(p *planner, doc *yaml.Node, c Change) error

// finding places the values in the mapping find finds.
func finding(find repoindex.Finder) placer {
	return func(p *planner, doc *yaml.Node, c Change) error {
		ctr, direct, err := find(doc)
		if err != nil {
			return err
		}
		p.step = indentStep(ctr, yamledit.DocRoot(doc))
		return p.setResources(ctr, direct, c)
	}
}

// pathPlacer places the values at path from the document's root, adding
// the mappings that are missing on the way.
func pathPlacer(path []string, direct bool) placer {
	return func(p *planner, doc *yaml.Node, c Change) error {
		root := yamledit.DocRoot(doc)
		p.step = indentStep(root)
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
			p.scopes = []*yaml.Node{m}
			if k == nil {
				p.insert(m, []yamledit.Entry{{Key: key, Children: leaf}})
			} else {
				p.fill(m, k, v, leaf)
			}
			return nil
		}
		return p.setResources(m, direct, c)
	}
}

func (fe *fileEdit) edit(docs []*yaml.Node, i int, c Change, place placer) (bool, error) {
	fe.docs = docs
	if i >= len(docs) {
		return false, fmt.Errorf("document %d is gone", i+1)
	}
	src := yamledit.NewSource(fe.data)
	p := &planner{src: src}
	if err := place(p, docs[i], c); err != nil {
		return false, err
	}
	if len(p.muts) == 0 {
		return false, nil
	}
	// Where splicing fails, the smallest subtree that holds the edit is
	// re-serialised on its own lines instead; their places are taken
	// before the edit moves nodes.
	var regions []yamledit.Region
	var rerr error
	for _, n := range p.scopes {
		r, err := src.RegionOf(docs[i], n)
		if err != nil {
			rerr = errors.Join(rerr, err)
			continue
		}
		regions = append(regions, r)
	}

	// From here on docs turn into the model of the edited file.
	fe.docs = nil
	out, err := p.splice()
	for _, m := range p.muts {
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
		out, ferr := src.Reserialise(r, p.step)
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

// planner works out the splices of one change and, alongside, the same
// change on the parsed tree, the model the spliced bytes must parse back to.
// Mutations wait until every splice is planned: planning reads the tree.
type planner struct {
	src   *yamledit.Source
	step  int
	edits []yamledit.Splice
	muts  []func()
	err   error // first reason the change cannot be spliced
	// scopes are the mappings that hold every edit, smallest first.
	scopes []*yaml.Node
}

func (p *planner) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *planner) splice() ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	return yamledit.ApplySplices(p.src.Data, p.edits)
}

// setResources plans the change's values into container mapping ctr,
// creating resources, requests and limits where they are missing. When
// direct, ctr is the resources mapping itself.
func (p *planner) setResources(ctr *yaml.Node, direct bool, c Change) error {
	sections := resourceEntries(c)
	if len(sections) == 0 {
		return nil
	}

	where := fmt.Sprintf("container %q: resources", c.Container)
	rk, rv, dup := yamledit.Lookup(ctr, "resources")
	if direct {
		rk, rv, dup = ctr, ctr, false
	}
	p.scopes = []*yaml.Node{ctr}
	if !direct && rv != nil && rv.Kind == yaml.MappingNode {
		p.scopes = []*yaml.Node{rv, ctr}
	}
	switch {
	case dup:
		return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, where)
	case rk == nil:
		p.insert(ctr, []yamledit.Entry{{Key: "resources", Children: sections}})
		return nil
	}
	if err := yamledit.UnsafeTree(rv, where); err != nil {
		return err
	}
	if yamledit.IsNull(rv) {
		p.fill(ctr, rk, rv, sections)
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
			p.fill(rv, sk, sv, sec.Children)
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
			case !sameQuantity(qv, q.Quantity):
				p.replace(qk, qv, q.Value)
			}
		}
		if len(add) > 0 {
			p.insert(sv, add)
		}
	}
	if len(missing) > 0 {
		p.insert(rv, missing)
	}
	return nil
}

// sameQuantity reports whether scalar n already holds the quantity want,
// however it is spelled.
func sameQuantity(n *yaml.Node, want resource.Quantity) bool {
	if n.ShortTag() == "!!null" {
		return false
	}
	have, err := resource.ParseQuantity(strings.TrimSpace(n.Value))
	if err != nil {
		return false
	}
	return have.Cmp(want) == 0
}

// replace plans setting scalar v, the value of key k, keeping its quotes.
func (p *planner) replace(k, v *yaml.Node, value string) {
	p.muts = append(p.muts, func() {
		v.Value, v.Tag = value, ""
		v.Style &^= yaml.TaggedStyle | yaml.LiteralStyle | yaml.FoldedStyle
	})
	if v.Value == "" && v.Style == 0 {
		// "cpu:" with nothing: the value goes right after the colon.
		at, err := p.src.ColonAfter(k)
		if err != nil {
			p.fail(err)
			return
		}
		p.edits = append(p.edits, yamledit.Splice{Start: at, End: at, Text: " " + value})
		return
	}
	start, end, err := p.src.ScalarRange(v)
	if err != nil {
		p.fail(err)
		return
	}
	p.edits = append(p.edits, yamledit.Splice{Start: start, End: end, Text: yamledit.Styled(v, value)})
}

// insert plans adding entries after the last entry of mapping m.
func (p *planner) insert(m *yaml.Node, entries []yamledit.Entry) {
	flow := m.Style&yaml.FlowStyle != 0
	json := flow && yamledit.IsJSONMapping(m)
	p.muts = append(p.muts, func() {
		m.Content = append(m.Content, newNodes(entries, flow, json)...)
	})
	if flow {
		p.insertFlow(m, entries, json)
		return
	}
	if len(m.Content) == 0 {
		p.fail(yamledit.NoSplice("line %d: empty block mapping", m.Line))
		return
	}
	col := m.Content[0].Column
	last, err := p.src.LastLine(m)
	if err != nil {
		p.fail(err)
		return
	}
	last = p.src.TrailingComments(last, col)
	p.insertLines(last, yamledit.BlockLines(entries, col-1, p.step, nil), col)
}

// insertFlow plans adding entries at the end of flow mapping m.
func (p *planner) insertFlow(m *yaml.Node, entries []yamledit.Entry, json bool) {
	text := yamledit.FlowText(entries, json)
	if len(m.Content) == 0 {
		open, err := p.src.NodeOffset(m, "{")
		if err != nil {
			p.fail(err)
			return
		}
		p.edits = append(p.edits, yamledit.Splice{Start: open + 1, End: open + 1, Text: text, Depth: m.Column})
		return
	}
	end, err := p.src.FlowEnd(m.Content[len(m.Content)-1])
	if err != nil {
		p.fail(err)
		return
	}
	p.edits = append(p.edits, yamledit.Splice{Start: end, End: end, Text: ", " + text, Depth: m.Column})
}

// fill plans turning v, the empty value of key k in parent, into a mapping
// of entries: block lines below the key, or a flow mapping in flow context.
func (p *planner) fill(parent, k, v *yaml.Node, entries []yamledit.Entry) {
	flow := parent.Style&yaml.FlowStyle != 0
	json := flow && yamledit.IsJSONMapping(parent)
	p.muts = append(p.muts, func() {
		m := &yaml.Node{Kind: yaml.MappingNode, Content: newNodes(entries, flow, json)}
		if flow {
			m.Style = yaml.FlowStyle
		}
		// Keep the comments for a re-serialisation; "resources: {} # x"
		// becomes "resources: # x".
		k.LineComment = joinComments(k.LineComment, v.LineComment)
		k.HeadComment = joinComments(k.HeadComment, v.HeadComment)
		m.FootComment = v.FootComment
		for i, n := range parent.Content {
			if n == v {
				parent.Content[i] = m
			}
		}
	})

	empty := v.Kind == yaml.ScalarNode && v.Value == "" && v.Style == 0
	var start, end int
	var err error
	switch {
	case empty:
		start, err = p.src.ColonAfter(k)
		end = start
	case v.Kind == yaml.ScalarNode:
		start, end, err = p.src.ScalarRange(v)
	default:
		if start, err = p.src.NodeOffset(v, "{"); err == nil {
			end, err = p.src.FlowEnd(v)
		}
	}
	if err != nil {
		p.fail(err)
		return
	}
	if flow {
		if empty {
			p.fail(yamledit.NoSplice("line %d: empty value in a flow mapping", v.Line))
			return
		}
		p.edits = append(p.edits, yamledit.Splice{Start: start, End: end, Text: "{" + yamledit.FlowText(entries, json) + "}", Depth: v.Column})
		return
	}
	if p.src.LineOf(start) != k.Line || p.src.LineOf(end) != k.Line || !p.src.RestIsComment(end) {
		p.fail(yamledit.NoSplice("line %d: value of %q is not on its key's line", k.Line, k.Value))
		return
	}
	if !empty {
		del := p.src.TrimSpaceBefore(start)
		if del == 0 || p.src.Data[del-1] != ':' {
			p.fail(yamledit.NoSplice("line %d: no colon before the value of %q", k.Line, k.Value))
			return
		}
		p.edits = append(p.edits, yamledit.Splice{Start: del, End: end})
	}
	col := k.Column + p.step
	p.insertLines(k.Line, yamledit.BlockLines(entries, col-1, p.step, nil), col)
}

// insertLines plans lines to follow line, with that line's break.
func (p *planner) insertLines(line int, lines []string, depth int) {
	off, breakFirst := p.src.AfterLine(line)
	br := p.src.LineBreak(line)
	if br == "" {
		br = p.src.DefaultBreak()
	}
	p.edits = append(p.edits, yamledit.Splice{Start: off, End: off, Text: yamledit.BlockText(lines, br, breakFirst), Depth: depth})
}

// newNodes builds the model nodes of entries.
func newNodes(entries []yamledit.Entry, flow, json bool) []*yaml.Node {
	var style yaml.Style
	if json {
		style = yaml.DoubleQuotedStyle
	}
	var out []*yaml.Node
	for _, e := range entries {
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: e.Key, Style: style}
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: e.Value, Style: style}
		if e.Children != nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Content: newNodes(e.Children, flow, json)}
			if flow {
				v.Style = yaml.FlowStyle
			}
		}
		out = append(out, k, v)
	}
	return out
}

func joinComments(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

// indentStep returns how far the file indents a mapping nested in a
// mapping, looking in the container first, then in the whole document; 2
// when neither shows it.
func indentStep(nodes ...*yaml.Node) int {
	for _, n := range nodes {
		if s := findStep(n); s > 0 {
			return s
		}
	}
	return 2
}

func findStep(n *yaml.Node) int {
	if n == nil || n.Style&yaml.FlowStyle != 0 {
		return 0
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Content[0].Line > k.Line {
				if d := v.Content[0].Column - k.Column; d > 0 {
					return d
				}
			}
			if s := findStep(v); s > 0 {
				return s
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if s := findStep(item); s > 0 {
				return s
			}
		}
	}
	return 0
}
