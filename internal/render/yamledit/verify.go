package yamledit

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Verify parses an edited file and checks that it means exactly the model:
// the same documents, keys, values and tags, whatever the style. When
// comments is not nil, the file must also hold the same comment lines, which
// catches a re-serialisation that drops or duplicates them. It returns the
// parsed documents for the next edit.
func Verify(data []byte, model []*yaml.Node, comments []string) ([]*yaml.Node, error) {
	docs, err := ParseDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("edited file does not parse: %w", err)
	}
	if len(docs) != len(model) {
		return nil, fmt.Errorf("edited file has %d documents instead of %d", len(docs), len(model))
	}
	for i := range docs {
		if !SameNode(model[i], docs[i]) {
			return nil, fmt.Errorf("document %d does not parse back to the intended edit", i+1)
		}
	}
	if comments != nil && !slices.Equal(comments, CollectComments(docs)) {
		return nil, fmt.Errorf("comments would be lost or duplicated")
	}
	return docs, nil
}

// SameNode compares what two trees mean, ignoring style, comments and position.
func SameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Anchor != b.Anchor || len(a.Content) != len(b.Content) {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		if a.Value != b.Value || a.ShortTag() != b.ShortTag() {
			return false
		}
	case yaml.AliasNode:
		return a.Value == b.Value
	case yaml.MappingNode, yaml.SequenceNode:
		if a.ShortTag() != b.ShortTag() {
			return false
		}
	}
	for i := range a.Content {
		if !SameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// CollectComments returns every comment line the parser attached to the
// documents, sorted.
func CollectComments(docs []*yaml.Node) []string {
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, l := range strings.Split(c, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					out = append(out, l)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
