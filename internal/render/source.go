package render

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

func noSplice(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNoSplice}, args...)...)
}

var bom = []byte("\ufeff")

// source maps the parser's positions (1-based lines, columns counted in
// characters) onto the bytes of a file.
type source struct {
	data   []byte
	starts []int // byte offset of the first character of each line
	ends   []int // byte offset of each line's break, or len(data)
	bom    bool
}

// newSource indexes the lines of data. The line breaks are those of the YAML
// parser: \r\n, \r, \n, and the Unicode NEL, LS and PS.
func newSource(data []byte) *source {
	s := &source{data: data, starts: []int{0}, bom: bytes.HasPrefix(data, bom)}
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

func (s *source) lineCount() int { return len(s.starts) }

// lineStart returns the offset of the first character of line, after a BOM.
func (s *source) lineStart(line int) int {
	off := s.starts[line-1]
	if line == 1 && s.bom {
		off += len(bom)
	}
	return off
}

// text returns line without its break.
func (s *source) text(line int) []byte { return s.data[s.lineStart(line):s.ends[line-1]] }

// lineBreak returns the break that ends line, "" for a last line without one.
func (s *source) lineBreak(line int) string {
	if line >= s.lineCount() {
		return ""
	}
	return string(s.data[s.ends[line-1]:s.starts[line]])
}

// defaultBreak is the file's first line break, for lines that have none.
func (s *source) defaultBreak() string {
	if len(s.starts) > 1 {
		return s.lineBreak(1)
	}
	return "\n"
}

// offset returns the byte offset of a parser position.
func (s *source) offset(line, col int) (int, error) {
	if line < 1 || line > s.lineCount() || col < 1 {
		return 0, noSplice("position %d:%d outside the file", line, col)
	}
	off, end := s.lineStart(line), s.ends[line-1]
	for range col - 1 {
		if off >= end {
			return 0, noSplice("position %d:%d outside its line", line, col)
		}
		_, w := utf8.DecodeRune(s.data[off:])
		off += w
	}
	return off, nil
}

// nodeOffset returns the byte offset of n, which must start with one of the
// bytes in first; an anchor or tag before the node makes it start elsewhere.
func (s *source) nodeOffset(n *yaml.Node, first string) (int, error) {
	off, err := s.offset(n.Line, n.Column)
	if err != nil {
		return 0, err
	}
	if off >= len(s.data) || bytes.IndexByte([]byte(first), s.data[off]) < 0 {
		return 0, noSplice("line %d: node does not start with %q", n.Line, first)
	}
	return off, nil
}

// lineOf returns the line holding byte offset off.
func (s *source) lineOf(off int) int {
	return sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off })
}

// indent returns the number of leading spaces of line, whether it is blank
// and whether its first character is a comment's #.
func (s *source) indent(line int) (n int, blank, comment bool) {
	t := s.text(line)
	for n < len(t) && t[n] == ' ' {
		n++
	}
	rest := bytes.TrimLeft(t[n:], " \t")
	return n, len(rest) == 0, len(rest) > 0 && rest[0] == '#'
}

// scalarRange returns the byte range of a plain or quoted scalar. A plain
// scalar must be on one line, which holds when its text at the position the
// parser gives is exactly its value.
func (s *source) scalarRange(n *yaml.Node) (int, int, error) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Anchor != "" {
		return 0, 0, noSplice("line %d: value is tagged, anchored or a block scalar", n.Line)
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		start, err := s.nodeOffset(n, `"`)
		if err != nil {
			return 0, 0, err
		}
		for i := start + 1; i < len(s.data); i++ {
			switch s.data[i] {
			case '\\':
				i++
			case '"':
				return start, i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		start, err := s.nodeOffset(n, `'`)
		if err != nil {
			return 0, 0, err
		}
		for i := start + 1; i < len(s.data); i++ {
			if s.data[i] == '\'' {
				if i+1 < len(s.data) && s.data[i+1] == '\'' {
					i++
					continue
				}
				return start, i + 1, nil
			}
		}
	default:
		if n.Value == "" {
			return 0, 0, noSplice("line %d: empty value", n.Line)
		}
		start, err := s.offset(n.Line, n.Column)
		if err != nil {
			return 0, 0, err
		}
		if !bytes.HasPrefix(s.data[start:], []byte(n.Value)) {
			return 0, 0, noSplice("line %d: plain scalar spans lines", n.Line)
		}
		return start, start + len(n.Value), nil
	}
	return 0, 0, noSplice("line %d: unterminated quoted scalar", n.Line)
}

// flowEnd returns the offset just past a node inside or as a flow collection.
// It relies on the parser's positions of the children, so brackets and
// quotes inside scalars are never misread.
func (s *source) flowEnd(n *yaml.Node) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		_, end, err := s.scalarRange(n)
		return end, err
	case yaml.AliasNode:
		start, err := s.nodeOffset(n, "*")
		return start + 1 + len(n.Value), err
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle == 0 || n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
			return 0, noSplice("line %d: not a plain flow collection", n.Line)
		}
		start, err := s.nodeOffset(n, "{[")
		if err != nil {
			return 0, err
		}
		i := start + 1
		if len(n.Content) > 0 {
			if i, err = s.flowEnd(n.Content[len(n.Content)-1]); err != nil {
				return 0, err
			}
		}
		i = s.skipFlowSpace(i)
		if i < len(s.data) && s.data[i] == ',' {
			i = s.skipFlowSpace(i + 1)
		}
		closer := byte('}')
		if s.data[start] == '[' {
			closer = ']'
		}
		if i >= len(s.data) || s.data[i] != closer {
			return 0, noSplice("line %d: flow collection does not close where expected", n.Line)
		}
		return i + 1, nil
	}
	return 0, noSplice("line %d: unexpected node", n.Line)
}

// skipFlowSpace skips white space, line breaks and comments.
func (s *source) skipFlowSpace(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t':
			i++
		case '#':
			for i < len(s.data) && breakLen(s.data, i) == 0 {
				i++
			}
		default:
			w := breakLen(s.data, i)
			if w == 0 {
				return i
			}
			i += w
		}
	}
	return i
}

// lastLine returns the last line that holds part of n, a node in block
// context.
func (s *source) lastLine(n *yaml.Node) (int, error) {
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
				return 0, noSplice("line %d: empty block collection", n.Line)
			}
			return s.lastLine(n.Content[len(n.Content)-1])
		}
	}
	end, err := s.flowEnd(n)
	if err != nil {
		return 0, err
	}
	return s.lineOf(end - 1), nil
}

// blockScalarEnd returns the last non-blank line of a literal or folded
// scalar: content lines are indented deeper than the header's line, and the
// first of them sets the indentation the others keep.
func (s *source) blockScalarEnd(n *yaml.Node) (int, error) {
	start, err := s.nodeOffset(n, "|>")
	if err != nil {
		return 0, err
	}
	for i := start + 1; i < s.ends[n.Line-1] && s.data[i] != ' ' && s.data[i] != '#'; i++ {
		if c := s.data[i]; c >= '1' && c <= '9' {
			return 0, noSplice("line %d: block scalar with an indentation indicator", n.Line)
		}
	}
	header, _, _ := s.indent(n.Line)
	end, content := n.Line, -1
	for l := n.Line + 1; l <= s.lineCount(); l++ {
		ind, blank, _ := s.indent(l)
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

// afterLine returns where text following line goes, and whether a line
// break must come first because line is the last one and has none.
func (s *source) afterLine(line int) (int, bool) {
	if line >= s.lineCount() {
		return len(s.data), true
	}
	return s.starts[line], false
}
