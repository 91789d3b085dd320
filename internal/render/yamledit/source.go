package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// errNoSplice marks an edit that cannot be made by splicing bytes.
var errNoSplice = errors.New("cannot splice")

// NoSplice says why an edit cannot be made by splicing bytes.
func NoSplice(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNoSplice}, args...)...)
}

var bom = []byte("\ufeff")

// Source maps the parser's positions (1-based lines, columns counted in
// characters) onto the bytes of a file.
type Source struct {
	Data   []byte
	starts []int // byte offset of the first character of each line
	ends   []int // byte offset of each line's break, or len(data)
	bom    bool
}

// NewSource indexes the lines of data. The line breaks are those of the YAML
// parser: \r\n, \r, \n, and the Unicode NEL, LS and PS.
func NewSource(data []byte) *Source {
	s := &Source{Data: data, starts: []int{0}, bom: bytes.HasPrefix(data, bom)}
	for i := 0; i < len(data); {
		w := breakLen(data, i)
		if w == 0 {
			i++
			continue
		}
		s.ends = append(s.ends, i)
		i += w
		s.starts = append(s.starts, i)
	}
	s.ends = append(s.ends, len(data))
	return s
}

// breakLen returns the length of the line break at data[i], or 0.
func breakLen(data []byte, i int) int {
	switch c := data[i]; {
	case c == '\n':
		return 1
	case c == '\r':
		if i+1 < len(data) && data[i+1] == '\n' {
			return 2
		}
		return 1
	case c == 0xC2 && i+1 < len(data) && data[i+1] == 0x85:
		return 2
	case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
		return 3
	}
	return 0
}

// LineCount returns the number of lines, a last one without a break included.
func (s *Source) LineCount() int { return len(s.starts) }

// LineStart returns the offset of the first character of line, after a BOM.
func (s *Source) LineStart(line int) int {
	off := s.starts[line-1]
	if line == 1 && s.bom {
		off += len(bom)
	}
	return off
}

// Text returns line without its break.
func (s *Source) Text(line int) []byte { return s.Data[s.LineStart(line):s.ends[line-1]] }

// LineBreak returns the break that ends line, "" for a last line without one.
func (s *Source) LineBreak(line int) string {
	if line >= s.LineCount() {
		return ""
	}
	return string(s.Data[s.ends[line-1]:s.starts[line]])
}

// DefaultBreak is the file's first line break, for lines that have none.
func (s *Source) DefaultBreak() string {
	if len(s.starts) > 1 {
		return s.LineBreak(1)
	}
	return "\n"
}

// offset returns the byte offset of a parser position.
func (s *Source) offset(line, col int) (int, error) {
	if line < 1 || line > s.LineCount() || col < 1 {
		return 0, NoSplice("position %d:%d outside the file", line, col)
	}
	off, end := s.LineStart(line), s.ends[line-1]
	for range col - 1 {
		if off >= end {
			return 0, NoSplice("position %d:%d outside its line", line, col)
		}
		_, w := utf8.DecodeRune(s.Data[off:])
		off += w
	}
	return off, nil
}

// NodeOffset returns the byte offset of n, which must start with one of the
// bytes in first; an anchor or tag before the node makes it start elsewhere.
func (s *Source) NodeOffset(n *yaml.Node, first string) (int, error) {
	off, err := s.offset(n.Line, n.Column)
	if err != nil {
		return 0, err
	}
	if off >= len(s.Data) || bytes.IndexByte([]byte(first), s.Data[off]) < 0 {
		return 0, NoSplice("line %d: node does not start with %q", n.Line, first)
	}
	return off, nil
}

// LineOf returns the line holding byte offset off.
func (s *Source) LineOf(off int) int {
	return sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off })
}

// Indent returns the number of leading spaces of line, whether it is blank
// and whether its first character is a comment's #.
func (s *Source) Indent(line int) (n int, blank, comment bool) {
	t := s.Text(line)
	for n < len(t) && t[n] == ' ' {
		n++
	}
	rest := bytes.TrimLeft(t[n:], " \t")
	return n, len(rest) == 0, len(rest) > 0 && rest[0] == '#'
}

// ScalarRange returns the byte range of a plain or quoted scalar. A plain
// scalar must be on one line, which holds when its text at the position the
// parser gives is exactly its value.
func (s *Source) ScalarRange(n *yaml.Node) (int, int, error) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Anchor != "" {
		return 0, 0, NoSplice("line %d: value is tagged, anchored or a block scalar", n.Line)
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		start, err := s.NodeOffset(n, `"`)
		if err != nil {
			return 0, 0, err
		}
		for i := start + 1; i < len(s.Data); i++ {
			switch s.Data[i] {
			case '\\':
				i++
			case '"':
				return start, i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		start, err := s.NodeOffset(n, `'`)
		if err != nil {
			return 0, 0, err
		}
		for i := start + 1; i < len(s.Data); i++ {
			if s.Data[i] == '\'' {
				if i+1 < len(s.Data) && s.Data[i+1] == '\'' {
					i++
					continue
				}
				return start, i + 1, nil
			}
		}
	default:
		if n.Value == "" {
			return 0, 0, NoSplice("line %d: empty value", n.Line)
		}
		start, err := s.offset(n.Line, n.Column)
		if err != nil {
			return 0, 0, err
		}
		if !bytes.HasPrefix(s.Data[start:], []byte(n.Value)) {
			return 0, 0, NoSplice("line %d: plain scalar spans lines", n.Line)
		}
		return start, start + len(n.Value), nil
	}
	return 0, 0, NoSplice("line %d: unterminated quoted scalar", n.Line)
}

// FlowEnd returns the offset just past a node inside or as a flow collection.
// It relies on the parser's positions of the children, so brackets and
// quotes inside scalars are never misread.
func (s *Source) FlowEnd(n *yaml.Node) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		_, end, err := s.ScalarRange(n)
		return end, err
	case yaml.AliasNode:
		start, err := s.NodeOffset(n, "*")
		return start + 1 + len(n.Value), err
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle == 0 || n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
			return 0, NoSplice("line %d: not a plain flow collection", n.Line)
		}
		start, err := s.NodeOffset(n, "{[")
		if err != nil {
			return 0, err
		}
		i := start + 1
		if len(n.Content) > 0 {
			if i, err = s.FlowEnd(n.Content[len(n.Content)-1]); err != nil {
				return 0, err
			}
		}
		i = s.skipFlowSpace(i)
		if i < len(s.Data) && s.Data[i] == ',' {
			i = s.skipFlowSpace(i + 1)
		}
		closer := byte('}')
		if s.Data[start] == '[' {
			closer = ']'
		}
		if i >= len(s.Data) || s.Data[i] != closer {
			return 0, NoSplice("line %d: flow collection does not close where expected", n.Line)
		}
		return i + 1, nil
	}
	return 0, NoSplice("line %d: unexpected node", n.Line)
}

// skipFlowSpace skips white space, line breaks and comments.
func (s *Source) skipFlowSpace(i int) int {
	for i < len(s.Data) {
		switch s.Data[i] {
		case ' ', '\t':
			i++
		case '#':
			for i < len(s.Data) && breakLen(s.Data, i) == 0 {
				i++
			}
		default:
			w := breakLen(s.Data, i)
			if w == 0 {
				return i
			}
			i += w
		}
	}
	return i
}

// LastLine returns the last line that holds part of n, a node in block
// context.
func (s *Source) LastLine(n *yaml.Node) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return s.blockScalarEnd(n)
		}
		if n.Value == "" && n.Style == 0 {
			return n.Line, nil
		}
	case yaml.AliasNode:
		return n.Line, nil
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle == 0 {
			if len(n.Content) == 0 {
				return 0, NoSplice("line %d: empty block collection", n.Line)
			}
			return s.LastLine(n.Content[len(n.Content)-1])
		}
	}
	end, err := s.FlowEnd(n)
	if err != nil {
		return 0, err
	}
	return s.LineOf(end - 1), nil
}

// blockScalarEnd returns the last non-blank line of a literal or folded
// scalar: content lines are indented deeper than the header's line, and the
// first of them sets the indentation the others keep.
func (s *Source) blockScalarEnd(n *yaml.Node) (int, error) {
	start, err := s.NodeOffset(n, "|>")
	if err != nil {
		return 0, err
	}
	for i := start + 1; i < s.ends[n.Line-1] && s.Data[i] != ' ' && s.Data[i] != '#'; i++ {
		if c := s.Data[i]; c >= '1' && c <= '9' {
			return 0, NoSplice("line %d: block scalar with an indentation indicator", n.Line)
		}
	}
	header, _, _ := s.Indent(n.Line)
	end, content := n.Line, -1
	for l := n.Line + 1; l <= s.LineCount(); l++ {
		ind, blank, _ := s.Indent(l)
		if blank {
			continue
		}
		if content < 0 {
			if ind <= header {
				break
			}
			content = ind
		}
		if ind < content {
			break
		}
		end = l
	}
	return end, nil
}

// AfterLine returns where text following line goes, and whether a line
// break must come first because line is the last one and has none.
func (s *Source) AfterLine(line int) (int, bool) {
	if line >= s.LineCount() {
		return len(s.Data), true
	}
	return s.starts[line], false
}
