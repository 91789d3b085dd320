package helmsource

import (
	"encoding/json"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// DecodeNode turns a parsed document into plain values.
func DecodeNode(doc *yaml.Node) (map[string]any, error) {
	s, err := yaml.String(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := sigsyaml.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Convert decodes plain values into a typed struct through JSON.
func Convert(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// OrDefault returns s, or def when s is empty.
func OrDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// EqualSpec reports whether two objects have the same spec.
func EqualSpec(x, y map[string]any) bool {
	a, _ := json.Marshal(x["spec"])
	b, _ := json.Marshal(y["spec"])
	return string(a) == string(b)
}
