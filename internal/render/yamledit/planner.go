package yamledit

import (
	"bytes"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Planner works out the splices of one change and, alongside, the same
// change on the parsed tree, the model the spliced bytes must parse back to.
// Mutations wait until every splice is planned: planning reads the tree.
type Planner struct {
	Src   *Source
	Step  int // the file's indentation step
	Edits []Splice
	// Muts are the planned changes to the parsed tree, made once every
	// splice is planned.
	Muts []func()
	err  error // first reason the change cannot be spliced
	// Scopes are the mappings that hold every edit, smallest first.
	Scopes []*yaml.Node
}

// fail keeps the first reason the change cannot be spliced.
func (p *Planner) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Splice returns the file with the planned splices made, or the first
// reason they cannot be.
func (p *Planner) Splice() ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	return ApplySplices(p.Src.Data, p.Edits)
}

// Err returns the first reason the change cannot be spliced, or nil.
func (p *Planner) Err() error { return p.err }

// ReplaceQuoted plans setting scalar v, the value of key k, to value
// written double-quoted, whatever v's style: a string that would read as
// a number written plain.
func (p *Planner) ReplaceQuoted(k, v *yaml.Node, value string) {
	p.Muts = append(p.Muts, func() {
		v.Value, v.Tag, v.Style = value, "", yaml.DoubleQuotedStyle
	})
	p.splice(k, v, strconv.Quote(value))
}

// Replace plans setting scalar v, the value of key k, keeping its quotes.
func (p *Planner) Replace(k, v *yaml.Node, value string) {
	p.Muts = append(p.Muts, func() {
		v.Value, v.Tag = value, ""
		v.Style &^= yaml.TaggedStyle | yaml.LiteralStyle | yaml.FoldedStyle
	})
	p.splice(k, v, Styled(v, value))
}

// splice plans writing text in place of scalar v, the value of key k.
func (p *Planner) splice(k, v *yaml.Node, text string) {
	if v.Value == "" && v.Style == 0 {
		// "cpu:" with nothing: the value goes right after the colon.
		at, err := p.Src.ColonAfter(k)
		if err != nil {
			p.fail(err)
			return
		}
		p.Edits = append(p.Edits, Splice{Start: at, End: at, Text: " " + text})
		return
	}
	start, end, err := p.Src.ScalarRange(v)
	if err != nil {
		p.fail(err)
		return
	}
	p.Edits = append(p.Edits, Splice{Start: start, End: end, Text: text})
}

// Insert plans adding entries after the last entry of mapping m.
func (p *Planner) Insert(m *yaml.Node, entries []Entry) {
	flow := m.Style&yaml.FlowStyle != 0
	json := flow && IsJSONMapping(m)
	p.Muts = append(p.Muts, func() {
		m.Content = append(m.Content, newNodes(entries, flow, json)...)
	})
	if flow {
		p.insertFlow(m, entries, json)
		return
	}
	if len(m.Content) == 0 {
		p.fail(NoSplice("line %d: empty block mapping", m.Line))
		return
	}
	col := m.Content[0].Column
	last, err := p.Src.LastLine(m)
	if err != nil {
		p.fail(err)
		return
	}
	last = p.Src.TrailingComments(last, col)
	p.InsertLines(last, BlockLines(entries, col-1, p.Step, nil), col)
}

// insertFlow plans adding entries at the end of flow mapping m.
func (p *Planner) insertFlow(m *yaml.Node, entries []Entry, json bool) {
	text := FlowText(entries, json)
	if len(m.Content) == 0 {
		open, err := p.Src.NodeOffset(m, "{")
		if err != nil {
			p.fail(err)
			return
		}
		p.Edits = append(p.Edits, Splice{Start: open + 1, End: open + 1, Text: text, Depth: m.Column})
		return
	}
	end, err := p.Src.FlowEnd(m.Content[len(m.Content)-1])
	if err != nil {
		p.fail(err)
		return
	}
	p.Edits = append(p.Edits, Splice{Start: end, End: end, Text: ", " + text, Depth: m.Column})
}

// Fill plans turning v, the empty value of key k in parent, into a mapping
// of entries: block lines below the key, or a flow mapping in flow context.
func (p *Planner) Fill(parent, k, v *yaml.Node, entries []Entry) {
	flow := parent.Style&yaml.FlowStyle != 0
	json := flow && IsJSONMapping(parent)
	p.Muts = append(p.Muts, func() {
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
		start, err = p.Src.ColonAfter(k)
		end = start
	case v.Kind == yaml.ScalarNode:
		start, end, err = p.Src.ScalarRange(v)
	default:
		if start, err = p.Src.NodeOffset(v, "{"); err == nil {
			end, err = p.Src.FlowEnd(v)
		}
	}
	if err != nil {
		p.fail(err)
		return
	}
	if flow {
		if empty {
			p.fail(NoSplice("line %d: empty value in a flow mapping", v.Line))
			return
		}
		p.Edits = append(p.Edits, Splice{Start: start, End: end, Text: "{" + FlowText(entries, json) + "}", Depth: v.Column})
		return
	}
	if !empty && p.Src.LineOf(start) > k.Line && p.braceLine(k, p.Src.LineOf(start)) {
		// "resources:", comment lines, then "{}" alone on its line, as
		// charts ship it: the entries take the braces' line, below the
		// comments.
		line := p.Src.LineOf(start)
		col := k.Column + p.Step
		br := p.Src.LineBreak(line)
		joint := br
		if joint == "" {
			joint = p.Src.DefaultBreak()
		}
		next, _ := p.Src.AfterLine(line)
		text := strings.Join(BlockLines(entries, col-1, p.Step, nil), joint) + br
		p.Edits = append(p.Edits, Splice{Start: p.Src.LineStart(line), End: next, Text: text, Depth: col})
		return
	}
	if p.Src.LineOf(start) != k.Line || p.Src.LineOf(end) != k.Line || !p.Src.RestIsComment(end) {
		p.fail(NoSplice("line %d: value of %q is not on its key's line", k.Line, k.Value))
		return
	}
	if !empty {
		del := p.Src.TrimSpaceBefore(start)
		if del == 0 || p.Src.Data[del-1] != ':' {
			p.fail(NoSplice("line %d: no colon before the value of %q", k.Line, k.Value))
			return
		}
		p.Edits = append(p.Edits, Splice{Start: del, End: end})
	}
	col := k.Column + p.Step
	p.InsertLines(k.Line, BlockLines(entries, col-1, p.Step, nil), col)
}

// braceLine reports whether key k's value is an empty flow mapping alone
// on line, below the key, with only a comment after the key's colon and
// only blank and comment lines, indented below the key, between them.
func (p *Planner) braceLine(k *yaml.Node, line int) bool {
	if !p.Src.EmptyAfterKey(k) || string(bytes.TrimSpace(p.Src.Text(line))) != "{}" {
		return false
	}
	if ind, _, _ := p.Src.Indent(line); ind < k.Column {
		return false
	}
	for l := k.Line + 1; l < line; l++ {
		if ind, blank, comment := p.Src.Indent(l); !blank && (!comment || ind < k.Column) {
			return false
		}
	}
	return true
}

// InsertLines plans lines to follow line, with that line's break.
func (p *Planner) InsertLines(line int, lines []string, depth int) {
	off, breakFirst := p.Src.AfterLine(line)
	br := p.Src.LineBreak(line)
	if br == "" {
		br = p.Src.DefaultBreak()
	}
	p.Edits = append(p.Edits, Splice{Start: off, End: off, Text: BlockText(lines, br, breakFirst), Depth: depth})
}

// newNodes builds the model nodes of entries.
func newNodes(entries []Entry, flow, json bool) []*yaml.Node {
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

// IndentStep returns how far the file indents a mapping nested in a
// mapping, looking in the container first, then in the whole document; 2
// when neither shows it.
func IndentStep(nodes ...*yaml.Node) int {
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
