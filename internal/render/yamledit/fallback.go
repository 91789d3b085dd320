package yamledit

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Region is a subtree of a document on lines of its own, which can be
// re-serialised in their place when an edit cannot be spliced: a block
// mapping on the lines below its key, or a mapping item of a block
// sequence from its dash on.
type Region struct {
	n           *yaml.Node
	First, Last int  // the lines it holds
	indent      int  // the column, from 0, its lines start at
	item        bool // n is a sequence item, written after a dash
}

// RegionOf finds the lines of n in the document doc, before n is edited.
func (s *Source) RegionOf(doc, n *yaml.Node) (Region, error) {
	parent, key := ParentOf(doc, n)
	if parent == nil || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 ||
		n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		return Region{}, fmt.Errorf("line %d: not a block mapping", n.Line)
	}
	r := Region{n: n}
	switch {
	case parent.Kind == yaml.MappingNode && key != nil && n.Content[0].Line > key.Line:
		r.First, r.indent = key.Line+1, n.Column-1
	case parent.Kind == yaml.SequenceNode && parent.Style&yaml.FlowStyle == 0:
		dash, err := s.dashBefore(n)
		if err != nil {
			return Region{}, err
		}
		r.First, r.indent, r.item = n.Line, dash, true
	case parent.Kind == yaml.DocumentNode:
		// Its first key's line would blame an entry the edit is not in.
		return Region{}, fmt.Errorf("the edit is at the document's top level, which is not re-serialised")
	default:
		return Region{}, fmt.Errorf("line %d: not on lines of its own", n.Line)
	}
	r.Last = s.endOf(doc, n)
	return r, nil
}

// endOf returns the last line of n, a block node: where lastLine cannot
// tell (a tagged scalar, or a plain one over several lines, at the end),
// the line before whatever follows n in the file, blank and comment lines
// aside.
func (s *Source) endOf(doc, n *yaml.Node) int {
	if l, err := s.LastLine(n); err == nil {
		return l
	}
	inside := map[*yaml.Node]bool{}
	var mark func(m *yaml.Node)
	mark = func(m *yaml.Node) {
		inside[m] = true
		for _, c := range m.Content {
			mark(c)
		}
	}
	mark(n)
	next := s.LineCount() + 1
	var walk func(m *yaml.Node)
	walk = func(m *yaml.Node) {
		if !inside[m] && m.Line > n.Line && m.Line < next {
			next = m.Line
		}
		for _, c := range m.Content {
			walk(c)
		}
	}
	walk(doc)
	for l := n.Line + 1; l < next; l++ {
		if t := s.Text(l); bytes.HasPrefix(t, []byte("---")) || bytes.HasPrefix(t, []byte("...")) {
			next = l
			break
		}
	}
	last := next - 1
	for last > n.Line {
		if _, blank, comment := s.Indent(last); !blank && !comment {
			break
		}
		last--
	}
	return last
}

// Reserialise writes r's node, as edited, in place of r's lines, and
// returns the file. Every other line stays as it was, since only r's
// bytes are replaced; the caller checks the comments. Inside the region,
// blank lines go and comments may be respaced.
func (s *Source) Reserialise(r Region, step int) ([]byte, error) {
	// Aliases in the copy keep pointing at the original anchors, which
	// the edited path never holds.
	enc := yaml.CopyYNode(r.n)
	// Comments the parser gave the subtree from lines outside it stay
	// where they are: those after its last line, and those above an
	// item's dash.
	for m := enc; m != nil; {
		m.FootComment = ""
		if len(m.Content) == 0 {
			break
		}
		if m.Kind == yaml.MappingNode && len(m.Content) >= 2 {
			// The parser hangs a mapping's foot on its last key.
			m.Content[len(m.Content)-2].FootComment = ""
		}
		m = m.Content[len(m.Content)-1]
	}
	what := enc
	if r.item {
		enc.HeadComment, enc.Content[0].HeadComment = "", ""
		what = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{enc}}
	}
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(step)
	if yaml.DeriveSeqIndentStyle(string(s.Data)) == string(yaml.WideSequenceStyle) {
		e.DefaultSeqIndent()
	} else {
		e.CompactSeqIndent()
	}
	if err := e.Encode(what); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	br := s.LineBreak(r.First)
	if br == "" {
		br = s.DefaultBreak()
	}
	pad := strings.Repeat(" ", r.indent)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	start, end := s.LineStart(r.First), s.ends[r.Last-1]
	out := make([]byte, 0, len(s.Data)+buf.Len())
	out = append(out, s.Data[:start]...)
	out = append(out, strings.Join(lines, br)...)
	return append(out, s.Data[end:]...), nil
}

// dashBefore returns the column, from 0, of the dash that starts the
// sequence item n on n's own line.
func (s *Source) dashBefore(n *yaml.Node) (int, error) {
	off, err := s.offset(n.Line, n.Column)
	if err != nil {
		return 0, err
	}
	start := s.LineStart(n.Line)
	i := off - 1
	for i >= start && (s.Data[i] == ' ' || s.Data[i] == '\t') {
		i--
	}
	if i < start || s.Data[i] != '-' || bytes.ContainsFunc(s.Data[start:i], func(r rune) bool { return r != ' ' }) {
		return 0, fmt.Errorf("line %d: the item does not start its line", n.Line)
	}
	return i - start, nil
}

// ParentOf returns the node holding n in the tree under root, and n's key
// when that is a mapping.
func ParentOf(root, n *yaml.Node) (parent, key *yaml.Node) {
	var walk func(m *yaml.Node, depth int) bool
	walk = func(m *yaml.Node, depth int) bool {
		if depth > 200 {
			return false
		}
		for i, c := range m.Content {
			if c == n {
				parent = m
				if m.Kind == yaml.MappingNode && i%2 == 1 {
					key = m.Content[i-1]
				}
				return true
			}
			if walk(c, depth+1) {
				return true
			}
		}
		return false
	}
	walk(root, 0)
	return parent, key
}
