package yamledit

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrTemplate is why a template is not edited.
var ErrTemplate = fmt.Errorf("%w: looks like a Go or Helm template", ErrUnsafe)

// UnsafeFile says why a whole file must not be edited, or returns nil.
//
// A template is a file whose structure another tool renders: {{ in a key,
// on a line of its own or in flow that only parses by accident. {{ inside a
// scalar value is data to Flux, Argo CD and kustomize (app-template passes
// such strings through tpl itself), so it does not make a template. A SOPS
// file carries a MAC over its content that any edit would break.
func UnsafeFile(data []byte, docs []*yaml.Node) error {
	if bytes.Contains(data, templateOpen) && !templatesOnlyInValues(data, docs) {
		return ErrTemplate
	}
	for _, d := range docs {
		root := DocRoot(d)
		if root == nil {
			continue
		}
		if _, sops, _ := Lookup(root, "sops"); sops != nil {
			if _, mac, _ := Lookup(sops, "mac"); mac != nil {
				return fmt.Errorf("%w: encrypted with SOPS", ErrUnsafe)
			}
		}
	}
	return nil
}

// templateOpen opens a Go template action.
var templateOpen = []byte("{{")

// templatesOnlyInValues reports whether every {{ of data lies inside a
// scalar that is a value (not a key) of docs. Where a scalar's bytes cannot
// be told (a plain scalar over several lines, an anchored or tagged one),
// its {{ counts as outside: in doubt, a template.
func templatesOnlyInValues(data []byte, docs []*yaml.Node) bool {
	src := NewSource(data)
	var spans [][2]int
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yaml.MappingNode:
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i])
			}
		case yaml.ScalarNode:
			if !strings.Contains(n.Value, "{{") {
				return
			}
			if start, end, err := valueRange(src, n); err == nil {
				spans = append(spans, [2]int{start, end})
			}
		}
	}
	for _, d := range docs {
		walk(d)
	}
	for off := 0; ; {
		i := bytes.Index(data[off:], templateOpen)
		if i < 0 {
			return true
		}
		at := off + i
		if !slices.ContainsFunc(spans, func(s [2]int) bool { return s[0] <= at && at+len(templateOpen) <= s[1] }) {
			return false
		}
		off = at + len(templateOpen)
	}
}

// valueRange returns the bytes of a scalar value: ScalarRange's, or a block
// scalar's header to the end of its last line.
func valueRange(src *Source, n *yaml.Node) (int, int, error) {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		return src.ScalarRange(n)
	}
	if n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		return 0, 0, NoSplice("line %d: block scalar is anchored or tagged", n.Line)
	}
	start, err := src.NodeOffset(n, "|>")
	if err != nil {
		return 0, 0, err
	}
	last, err := src.blockScalarEnd(n)
	if err != nil {
		return 0, 0, err
	}
	return start, src.ends[last-1], nil
}

// UnsafeNode refuses nodes an edit could not change on their own: an anchor
// may be aliased elsewhere, an alias is shared with its anchor, and a merge
// key makes the effective mapping differ from the written one.
func UnsafeNode(n *yaml.Node, what string) error {
	switch {
	case n.Kind == yaml.AliasNode:
		return fmt.Errorf("%w: %s is an alias (*%s) at line %d", ErrUnsafe, what, n.Value, n.Line)
	case n.Anchor != "":
		return fmt.Errorf("%w: %s has an anchor (&%s) at line %d", ErrUnsafe, what, n.Anchor, n.Line)
	case n.Kind == yaml.MappingNode && hasMergeKey(n):
		return fmt.Errorf("%w: %s uses a merge key (<<) at line %d", ErrUnsafe, what, n.Line)
	}
	return nil
}

// UnsafeTree applies UnsafeNode to n and everything below it.
func UnsafeTree(n *yaml.Node, what string) error {
	if err := UnsafeNode(n, what); err != nil {
		return err
	}
	for _, c := range n.Content {
		if err := UnsafeTree(c, what); err != nil {
			return err
		}
	}
	return nil
}
