package render

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// reencode replaces the text of document i with a serialisation of its
// (edited) model, for the edits that cannot be spliced. The rest of the file,
// separators included, is untouched; the document keeps its sequence
// indentation style, mapping indentation and line breaks, but loses its blank
// lines and may see comments move.
func reencode(src *source, docs []*yaml.Node, i, step int) ([]byte, error) {
	root := docRoot(docs[i])
	if root == nil {
		return nil, fmt.Errorf("document %d is empty", i+1)
	}
	var c chunk
	found := false
	for _, ch := range src.chunks() {
		if ch.first <= root.Line && root.Line <= ch.last {
			c, found = ch, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("document %d starts on its --- line", i+1)
	}
	if c.start == 0 && src.bom {
		c.start = len(bom)
	}
	if i == 0 && c.first > 1 {
		// The parser hands comments above the first --- to the document;
		// they stay where they are, outside the rewritten text.
		var pre []string
		for l := 1; l < c.first-1; l++ {
			if t := strings.TrimSpace(string(src.text(l))); t != "" {
				pre = append(pre, t)
			}
		}
		fields := []*string{&docs[i].HeadComment, &root.HeadComment}
		if root.Kind == yaml.MappingNode && len(root.Content) > 0 {
			fields = append(fields, &root.Content[0].HeadComment)
		}
		for _, f := range fields {
			pre = dropLeading(f, pre)
		}
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(step)
	if yaml.DeriveSeqIndentStyle(string(src.data[c.start:c.end])) == string(yaml.WideSequenceStyle) {
		enc.DefaultSeqIndent()
	} else {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(docs[i]); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	text := buf.Bytes()
	br := src.defaultBreak()
	if c.first <= c.last {
		if b := src.lineBreak(c.first); b != "" {
			br = b
		}
	}
	if br != "\n" {
		text = bytes.ReplaceAll(text, []byte("\n"), []byte(br))
	}
	if c.end == len(src.data) && len(src.text(src.lineCount())) > 0 {
		// The file did not end with a line break; neither does it now.
		text = bytes.TrimSuffix(text, []byte(br))
	}
	out := make([]byte, 0, len(src.data)+len(text))
	out = append(out, src.data[:c.start]...)
	out = append(out, text...)
	return append(out, src.data[c.end:]...), nil
}

// chunk is the text between document markers: bytes [start, end), lines
// first to last (last < first when empty).
type chunk struct{ start, end, first, last int }

// chunks splits the file at its --- and ... lines. A marker at the start of a
// line always ends a document in YAML, even inside block or quoted scalars,
// so lines are enough to find them.
func (s *source) chunks() []chunk {
	var out []chunk
	cur := chunk{first: 1}
	for l := 1; l <= s.lineCount(); l++ {
		if !isMarker(s.text(l)) {
			continue
		}
		cur.end, cur.last = s.starts[l-1], l-1
		out = append(out, cur)
		cur = chunk{start: len(s.data), first: l + 1}
		if l < s.lineCount() {
			cur.start = s.starts[l]
		}
	}
	cur.end, cur.last = len(s.data), s.lineCount()
	return append(out, cur)
}

func isMarker(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) && !bytes.HasPrefix(line, []byte("...")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t'
}

// dropLeading removes the comment lines pre from the start of comment *f,
// with the blank lines among them, and returns those it did not find.
func dropLeading(f *string, pre []string) []string {
	if len(pre) == 0 || *f == "" {
		return pre
	}
	lines := strings.Split(*f, "\n")
	n := 0
	for n < len(lines) {
		t := strings.TrimSpace(lines[n])
		switch {
		case t == "":
		case len(pre) > 0 && t == pre[0]:
			pre = pre[1:]
		default:
			*f = strings.Join(lines[n:], "\n")
			return pre
		}
		n++
		if len(pre) == 0 {
			break
		}
	}
	*f = strings.TrimLeft(strings.Join(lines[n:], "\n"), "\n")
	return pre
}
