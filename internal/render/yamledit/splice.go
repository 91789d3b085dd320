package yamledit

import (
	"bytes"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Splice replaces data[start:end] with text; start == end inserts.
type Splice struct {
	Start, End int
	Text       string
	// depth orders insertions at one offset: the deeper one is written
	// first, so that keys added to a nested mapping stay inside it.
	Depth int
}

// ApplySplices returns data with the splices made, or errNoSplice when two
// of them overlap.
func ApplySplices(data []byte, edits []Splice) ([]byte, error) {
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].Start != edits[j].Start {
			return edits[i].Start < edits[j].Start
		}
		return edits[i].Depth > edits[j].Depth
	})
	size := len(data)
	for i, e := range edits {
		if e.Start > e.End || e.End > len(data) || (i > 0 && e.Start < edits[i-1].End) {
			return nil, NoSplice("overlapping edits")
		}
		size += len(e.Text) - (e.End - e.Start)
	}
	out := make([]byte, 0, size)
	last := 0
	for _, e := range edits {
		out = append(out, data[last:e.Start]...)
		out = append(out, e.Text...)
		last = e.End
	}
	return append(out, data[last:]...), nil
}

// Entry is a key to add, with a scalar value or, when children is not nil,
// a mapping.
type Entry struct {
	Key   string
	Value string
	// quantity is value as a quantity, for comparing with what a file
	// holds however it spells it.
	Quantity resource.Quantity
	Children []Entry
}

// ResourceEntries are a container's requests and limits as entries to
// write, each list's names in order; an empty list is left out.
func ResourceEntries(requests, limits corev1.ResourceList) []Entry {
	var sections []Entry
	for _, s := range []struct {
		name   string
		values corev1.ResourceList
	}{{"requests", requests}, {"limits", limits}} {
		if len(s.values) == 0 {
			continue
		}
		e := Entry{Key: s.name, Children: []Entry{}}
		for _, k := range slices.Sorted(maps.Keys(s.values)) {
			q := s.values[k]
			e.Children = append(e.Children, Entry{Key: string(k), Value: q.String(), Quantity: q})
		}
		sections = append(sections, e)
	}
	return sections
}

// BlockLines renders entries as block mapping lines at indent, nesting by step.
func BlockLines(entries []Entry, indent, step int, lines []string) []string {
	pad := strings.Repeat(" ", indent)
	for _, e := range entries {
		if e.Children == nil {
			lines = append(lines, pad+e.Key+": "+e.Value)
			continue
		}
		lines = append(lines, pad+e.Key+":")
		lines = BlockLines(e.Children, indent+step, step, lines)
	}
	return lines
}

// BlockText joins lines with br; after a last line without a break the
// text starts with one instead of ending with one, so that the file keeps
// its missing final newline.
func BlockText(lines []string, br string, breakFirst bool) string {
	if breakFirst {
		return br + strings.Join(lines, br)
	}
	return strings.Join(lines, br) + br
}

// FlowText renders entries as the inside of a flow mapping, quoting keys
// and values when the mapping is JSON.
func FlowText(entries []Entry, json bool) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(flowScalar(e.Key, json))
		b.WriteString(": ")
		if e.Children == nil {
			b.WriteString(flowScalar(e.Value, json))
			continue
		}
		b.WriteString("{" + FlowText(e.Children, json) + "}")
	}
	return b.String()
}

func flowScalar(s string, json bool) string {
	if json {
		return `"` + s + `"`
	}
	return s
}

// Styled writes value like the scalar it replaces: plain, or in the same
// quotes. Quantities contain no quote or backslash to escape.
func Styled(n *yaml.Node, value string) string {
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return `"` + value + `"`
	case n.Style&yaml.SingleQuotedStyle != 0:
		return "'" + value + "'"
	}
	return value
}

// IsJSONMapping reports whether a flow mapping quotes its keys like JSON.
func IsJSONMapping(m *yaml.Node) bool {
	return len(m.Content) > 0 && m.Content[0].Style&yaml.DoubleQuotedStyle != 0
}

// ColonAfter returns the offset just past the colon that follows key k.
func (s *Source) ColonAfter(k *yaml.Node) (int, error) {
	_, end, err := s.ScalarRange(k)
	if err != nil {
		return 0, err
	}
	for end < len(s.Data) && (s.Data[end] == ' ' || s.Data[end] == '\t') {
		end++
	}
	if end >= len(s.Data) || s.Data[end] != ':' {
		return 0, NoSplice("line %d: no colon after key %q", k.Line, k.Value)
	}
	return end + 1, nil
}

// TrimSpaceBefore moves off back over the blanks before it.
func (s *Source) TrimSpaceBefore(off int) int {
	for off > 0 && (s.Data[off-1] == ' ' || s.Data[off-1] == '\t') {
		off--
	}
	return off
}

// RestIsComment reports whether only blanks and a comment follow off on its line.
func (s *Source) RestIsComment(off int) bool {
	rest := bytes.TrimLeft(s.Data[off:s.ends[s.LineOf(off)-1]], " \t")
	return len(rest) == 0 || rest[0] == '#'
}

// TrailingComments extends the last line of a mapping whose keys are at col
// over the comment lines that follow it directly, indented at least as deep:
// those are usually commented-out entries of that mapping. A blank line ends
// it, since comments after one tend to introduce what follows.
func (s *Source) TrailingComments(line, col int) int {
	for l := line + 1; l <= s.LineCount(); l++ {
		ind, blank, comment := s.Indent(l)
		if blank || !comment || ind+1 < col {
			break
		}
		line = l
	}
	return line
}

// LastCommentedEntry returns the last line of the commented-out list
// entries ("# - x") among the comment and blank lines that directly follow
// line, or line when there are none. Other comments of that block (a note
// between entries) are passed over only when an entry follows them.
func (s *Source) LastCommentedEntry(line int) int {
	last := line
	for l := line + 1; l <= s.LineCount(); l++ {
		_, blank, comment := s.Indent(l)
		if blank {
			continue
		}
		if !comment {
			break
		}
		t := bytes.TrimLeft(s.Text(l), " \t")
		t = bytes.TrimLeft(t[1:], " \t")
		if bytes.HasPrefix(t, []byte("- ")) || bytes.Equal(t, []byte("-")) {
			last = l
		}
	}
	return last
}

// EmptyAfterKey reports whether only blanks and a comment follow key k's
// colon on its line.
func (s *Source) EmptyAfterKey(k *yaml.Node) bool {
	at, err := s.ColonAfter(k)
	return err == nil && s.RestIsComment(at)
}
