package render

import (
	"bytes"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// splice replaces data[start:end] with text; start == end inserts.
type splice struct {
	start, end int
	text       string
	// depth orders insertions at one offset: the deeper one is written
	// first, so that keys added to a nested mapping stay inside it.
	depth int
}

// applySplices returns data with the splices made, or errNoSplice when two
// of them overlap.
func applySplices(data []byte, edits []splice) ([]byte, error) {
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].depth > edits[j].depth
	})
	size := len(data)
	for i, e := range edits {
		if e.start > e.end || e.end > len(data) || (i > 0 && e.start < edits[i-1].end) {
			return nil, noSplice("overlapping edits")
		}
		size += len(e.text) - (e.end - e.start)
	}
	out := make([]byte, 0, size)
	last := 0
	for _, e := range edits {
		out = append(out, data[last:e.start]...)
		out = append(out, e.text...)
		last = e.end
	}
	return append(out, data[last:]...), nil
}

// entry is a key to add, with a scalar value or, when children is not nil,
// a mapping.
type entry struct {
	key   string
	value string
	// quantity is value as a quantity, for comparing with what a file
	// holds however it spells it.
	quantity resource.Quantity
	children []entry
}

// blockLines renders entries as block mapping lines at indent, nesting by step.
func blockLines(entries []entry, indent, step int, lines []string) []string {
	pad := strings.Repeat(" ", indent)
	for _, e := range entries {
		if e.children == nil {
			lines = append(lines, pad+e.key+": "+e.value)
			continue
		}
		lines = append(lines, pad+e.key+":")
		lines = blockLines(e.children, indent+step, step, lines)
	}
	return lines
}

// blockText joins lines with br; after a last line without a break the
// text starts with one instead of ending with one, so that the file keeps
// its missing final newline.
func blockText(lines []string, br string, breakFirst bool) string {
	if breakFirst {
		return br + strings.Join(lines, br)
	}
	return strings.Join(lines, br) + br
}

// flowText renders entries as the inside of a flow mapping, quoting keys
// and values when the mapping is JSON.
func flowText(entries []entry, json bool) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(flowScalar(e.key, json))
		b.WriteString(": ")
		if e.children == nil {
			b.WriteString(flowScalar(e.value, json))
			continue
		}
		b.WriteString("{" + flowText(e.children, json) + "}")
	}
	return b.String()
}

func flowScalar(s string, json bool) string {
	if json {
		return `"` + s + `"`
	}
	return s
}

// styled writes value like the scalar it replaces: plain, or in the same
// quotes. Quantities contain no quote or backslash to escape.
func styled(n *yaml.Node, value string) string {
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return `"` + value + `"`
	case n.Style&yaml.SingleQuotedStyle != 0:
		return "'" + value + "'"
	}
	return value
}

// isJSONMapping reports whether a flow mapping quotes its keys like JSON.
func isJSONMapping(m *yaml.Node) bool {
	return len(m.Content) > 0 && m.Content[0].Style&yaml.DoubleQuotedStyle != 0
}

// colonAfter returns the offset just past the colon that follows key k.
func (s *source) colonAfter(k *yaml.Node) (int, error) {
	_, end, err := s.scalarRange(k)
	if err != nil {
		return 0, err
	}
	for end < len(s.data) && (s.data[end] == ' ' || s.data[end] == '\t') {
		end++
	}
	if end >= len(s.data) || s.data[end] != ':' {
		return 0, noSplice("line %d: no colon after key %q", k.Line, k.Value)
	}
	return end + 1, nil
}

// trimSpaceBefore moves off back over the blanks before it.
func (s *source) trimSpaceBefore(off int) int {
	for off > 0 && (s.data[off-1] == ' ' || s.data[off-1] == '\t') {
		off--
	}
	return off
}

// restIsComment reports whether only blanks and a comment follow off on its line.
func (s *source) restIsComment(off int) bool {
	rest := bytes.TrimLeft(s.data[off:s.ends[s.lineOf(off)-1]], " \t")
	return len(rest) == 0 || rest[0] == '#'
}
