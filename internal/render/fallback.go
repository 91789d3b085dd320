package render

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// region is a subtree of a document on lines of its own, which can be
// re-serialised in their place when an edit cannot be spliced: a block
// mapping on the lines below its key, or a mapping item of a block
// sequence from its dash on.
type region struct {
	n           *yaml.Node
	first, last int  // the lines it holds
	indent      int  // the column, from 0, its lines start at
	item        bool // n is a sequence item, written after a dash
}

// regionOf finds the lines of n in the document doc, before n is edited.
func (s *source) regionOf(doc, n *yaml.Node) (region, error) {
	parent, key := parentOf(doc, n)
	if parent == nil || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 ||
		n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		return region{}, fmt.Errorf("line %d: not a block mapping", n.Line)
	}
	r := region{n: n}
	switch {
	case parent.Kind == yaml.MappingNode && key != nil && n.Content[0].Line > key.Line:
		r.first, r.indent = key.Line+1, n.Column-1
	case parent.Kind == yaml.SequenceNode && parent.Style&yaml.FlowStyle == 0:
		dash, err := s.dashBefore(n)
		if err != nil {
			return region{}, err
		}
		r.first, r.indent, r.item = n.Line, dash, true
	default:
		return region{}, fmt.Errorf("line %d: not on lines of its own", n.Line)
	}
	r.last = s.endOf(doc, n)
	return r, nil
}

// endOf returns the last line of n, a block node: where lastLine cannot
// tell (a tagged scalar, or a plain one over several lines, at the end),
// the line before whatever follows n in the file, blank and comment lines
// aside.
func (s *source) endOf(doc, n *yaml.Node) int {
	if l, err := s.lastLine(n); err == nil {
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
	next := s.lineCount() + 1
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
		if t := s.text(l); bytes.HasPrefix(t, []byte("---")) || bytes.HasPrefix(t, []byte("...")) {
			next = l
			break
		}
	}
	last := next - 1
	for last > n.Line {
		if _, blank, comment := s.indent(last); !blank && !comment {
			break
		}
		last--
	}
	return last
}

// reserialise writes r's node, as edited, in place of r's lines, and
// returns the file. Every other line stays as it was, since only r's
// bytes are replaced; the caller checks the comments. Inside the region,
// blank lines go and comments may be respaced.
func (s *source) reserialise(r region, step int) ([]byte, error) {
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
	if yaml.DeriveSeqIndentStyle(string(s.data)) == string(yaml.WideSequenceStyle) {
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
	br := s.lineBreak(r.first)
	if br == "" {
		br = s.defaultBreak()
	}
	pad := strings.Repeat(" ", r.indent)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	start, end := s.lineStart(r.first), s.ends[r.last-1]
	out := make([]byte, 0, len(s.data)+buf.Len())
	out = append(out, s.data[:start]...)
	out = append(out, strings.Join(lines, br)...)
	return append(out, s.data[end:]...), nil
}

// dashBefore returns the column, from 0, of the dash that starts the
// sequence item n on n's own line.
func (s *source) dashBefore(n *yaml.Node) (int, error) {
	off, err := s.offset(n.Line, n.Column)
	if err != nil {
		return 0, err
	}
	start := s.lineStart(n.Line)
	i := off - 1
	for i >= start && (s.data[i] == ' ' || s.data[i] == '\t') {
		i--
	}
	if i < start || s.data[i] != '-' || bytes.ContainsFunc(s.data[start:i], func(r rune) bool { return r != ' ' }) {
		return 0, fmt.Errorf("line %d: the item does not start its line", n.Line)
	}
	return i - start, nil
}

// parentOf returns the node holding n in the tree under root, and n's key
// when that is a mapping.
func parentOf(root, n *yaml.Node) (parent, key *yaml.Node) {
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
