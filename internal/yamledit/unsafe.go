package yamledit

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrTemplate is why a template is not edited.
var ErrTemplate = fmt.Errorf("%w: looks like a Go or Helm template", ErrUnsafe)

// UnsafeFile says why a whole file must not be edited, or returns nil.
//
// A template is rendered by another tool, so the YAML we see is not what is
// applied; {{ anywhere is enough to suspect one, even in a value, because
// such files parse only by accident. A SOPS file carries a MAC over its
// content that any edit would break.
func UnsafeFile(data []byte, docs []*yaml.Node) error {
	if bytes.Contains(data, []byte("{{")) {
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
