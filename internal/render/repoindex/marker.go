package repoindex

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// markerKey is the key of a marker comment, as in
//
//	resources: # {"$recommend": "shop/web:app"}
//
// which maps a resources mapping (or the mapping that holds one) to one
// container of one workload, for files no index can map, such as Helm values.
const markerKey = "$recommend"

// MarkerValue is what a marker names: namespace/name:container.
func MarkerValue(namespace, name, container string) string {
	return namespace + "/" + name + ":" + container
}

// ParseMarker returns the value of a marker in comment, if it holds one.
func ParseMarker(comment string) (string, bool) {
	i := strings.Index(comment, markerKey)
	if i < 0 {
		return "", false
	}
	// The object holding the key opens at one of the braces before it:
	// the nearest, unless an object nested before the key opened it.
	// A few tries do; a comment is the repository's, and may be long.
	end := i
	for range maxMarkerBraces {
		open := strings.LastIndex(comment[:end], "{")
		if open < 0 {
			return "", false
		}
		var m map[string]any
		if err := json.NewDecoder(strings.NewReader(comment[open:])).Decode(&m); err == nil {
			if v, ok := m[markerKey].(string); ok {
				return v, v != ""
			}
		}
		end = open
	}
	return "", false
}

// maxMarkerBraces bounds the braces ParseMarker tries as the marker
// object's opening.
const maxMarkerBraces = 8

// markerHit is what one marker marks.
type markerHit struct {
	holder *yaml.Node
	direct bool
	err    error
}

// findMarkers returns the markers of a document by value. A marker on a
// resources key, or on a key whose mapping holds resources, marks that
// container-like mapping; a marker on any other key of a mapping marks that
// mapping as the resources themselves.
func findMarkers(doc *yaml.Node) map[string][]markerHit {
	var out map[string][]markerHit
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 100 {
			return
		}
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if val, ok := ParseMarker(k.LineComment + " " + v.LineComment); ok {
					if out == nil {
						out = map[string][]markerHit{}
					}
					out[val] = append(out[val], markedMapping(n, k, v))
				}
				walk(v, depth+1)
			}
		}
	}
	walk(doc, 0)
	return out
}

func markedMapping(parent, k, v *yaml.Node) (h markerHit) {
	switch {
	case k.Value == "resources":
		h.holder = parent
	case v.Kind == yaml.MappingNode && HasKey(v, "resources"):
		h.holder = v
	case v.Kind == yaml.MappingNode && len(v.Content) > 0:
		h.holder, h.direct = v, true
	default:
		h.err = fmt.Errorf("%w: marker at line %d marks neither a resources mapping nor a mapping that holds one", ErrContainerNotFound, k.Line)
		return h
	}
	h.err = yamledit.UnsafeNode(h.holder, "the marked mapping")
	return h
}

// HasKey reports whether mapping m holds key.
func HasKey(m *yaml.Node, key string) bool {
	k, _, _ := yamledit.Lookup(m, key)
	return k != nil
}

// markerFinder finds the mapping a marker with value marks.
func markerFinder(value string) Finder {
	return func(doc *yaml.Node) (*yaml.Node, bool, error) {
		hits := findMarkers(doc)[value]
		switch len(hits) {
		case 0:
			return nil, false, fmt.Errorf("%w: marker %q is gone", ErrTargetNotFound, value)
		case 1:
			return hits[0].holder, hits[0].direct, hits[0].err
		}
		return nil, false, fmt.Errorf("%w: marker %q appears %d times", ErrAmbiguousTarget, value, len(hits))
	}
}

// markedPath returns the keys from the root of doc to the mapping the
// marker with value marks, and whether that mapping is the resources
// itself. A list on the way is refused: a patch would replace it whole.
func markedPath(doc *yaml.Node, value string) ([]string, bool, error) {
	hits := findMarkers(doc)[value]
	if len(hits) != 1 {
		return nil, false, fmt.Errorf("%w: marker %q appears %d times", ErrAmbiguousTarget, value, len(hits))
	}
	h := hits[0]
	if h.err != nil {
		return nil, false, h.err
	}
	root := yamledit.DocRoot(doc)
	var path []string
	for n := h.holder; n != root; {
		parent, key := yamledit.ParentOf(doc, n)
		if parent == nil || key == nil || parent.Kind != yaml.MappingNode {
			return nil, false, fmt.Errorf("%w: the mapping marker %q marks sits in a list (line %d), which a patch would replace whole", ErrUnsafeFile, value, n.Line)
		}
		path = append([]string{key.Value}, path...)
		n = parent
	}
	return path, h.direct, nil
}

// MarkedObject is where a build of ref's kustomization renders the values
// of the marker with value: the marked object, by its build id, the keys
// from its root to the marked mapping, and whether that mapping is the
// resources itself.
func MarkedObject(doc *yaml.Node, ref DocRef, value string) (string, []string, bool, error) {
	if ref.Key.Kind == "" {
		return "", nil, false, fmt.Errorf("%w: %s: the document holding marker %q is not a Kubernetes object", ErrUnsafeFile, ref.File, value)
	}
	keys, direct, err := markedPath(doc, value)
	if err != nil {
		return "", nil, false, fmt.Errorf("%s: %w", ref.File, err)
	}
	return ref.Key.Group + "/" + ref.Key.Kind + "/" + ref.Namespace + "/" + ref.Key.Name, keys, direct, nil
}
