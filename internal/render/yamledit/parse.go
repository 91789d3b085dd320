package yamledit

import (
	"bytes"
	"errors"
	"io"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ParseDocuments decodes every document of a YAML stream into nodes whose
// Line and Column are relative to the whole stream.
func ParseDocuments(data []byte) ([]*yaml.Node, error) {
	// The parser also reads UTF-16; positions are only mapped back onto
	// UTF-8 bytes, so anything else is not ours to edit.
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		n := new(yaml.Node)
		if err := dec.Decode(n); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		docs = append(docs, n)
	}
}

// DocRoot returns the top-level node of a document, or nil.
func DocRoot(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	return doc.Content[0]
}

// Lookup returns the key and value nodes of key in mapping m, resolving
// neither aliases nor merge keys; dup reports that the key occurs twice.
func Lookup(m *yaml.Node, key string) (k, v *yaml.Node, dup bool) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil, false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn := m.Content[i]
		if kn.Kind != yaml.ScalarNode || kn.Value != key {
			continue
		}
		if k != nil {
			return k, v, true
		}
		k, v = kn, m.Content[i+1]
	}
	return k, v, false
}

// ScalarField returns the string value of key in m, following an alias, for
// reading identities where aliases are harmless.
func ScalarField(m *yaml.Node, key string) (string, bool) {
	_, v, dup := Lookup(m, key)
	if v == nil || dup {
		return "", false
	}
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return "", false
	}
	return v.Value, true
}

// hasMergeKey reports whether m pulls keys in with <<.
func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].ShortTag() == yaml.MergeTag {
			return true
		}
	}
	return false
}

// IsNull reports whether n is an empty value: null, ~, nothing, or {}.
func IsNull(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.ShortTag() == "!!null"
	case yaml.MappingNode:
		return len(n.Content) == 0
	}
	return false
}
