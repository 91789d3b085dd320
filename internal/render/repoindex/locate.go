package repoindex

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// podSpecPaths returns where the pod spec of the object in root may be,
// from its kind (package kinds).
func podSpecPaths(root *yaml.Node) [][]string {
	apiVersion, _ := yamledit.ScalarField(root, "apiVersion")
	kind, _ := yamledit.ScalarField(root, "kind")
	return kinds.PodSpecPaths(Group(apiVersion), kind)
}

// FindContainer returns the mapping of the named container in the pod
// template of doc. A native sidecar (an init container with restartPolicy
// Always) is found when no regular container has the name. Every node on the
// way must be safe to edit in place.
func FindContainer(doc *yaml.Node, name string) (*yaml.Node, error) {
	c, _, err := LocateContainer(doc, name)
	return c, err
}

// ContainerPath is where a container sits in a pod template: the keys to
// the pod spec, then containers or initContainers.
type ContainerPath struct {
	Pod   []string
	Field string
}

// LocateContainer is FindContainer, also returning where the container is.
func LocateContainer(doc *yaml.Node, name string) (*yaml.Node, ContainerPath, error) {
	root := yamledit.DocRoot(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, ContainerPath{}, fmt.Errorf("%w: document is not a mapping", ErrContainerNotFound)
	}
	if err := yamledit.UnsafeNode(root, "the document"); err != nil {
		return nil, ContainerPath{}, err
	}
	var pod *yaml.Node
	var at ContainerPath
	paths := podSpecPaths(root)
	for _, p := range paths {
		n, err := MappingAt(root, p)
		if err != nil {
			return nil, ContainerPath{}, err
		}
		if n != nil {
			pod, at.Pod = n, p
			break
		}
	}
	if pod == nil {
		var where []string
		for _, p := range paths {
			where = append(where, strings.Join(p, "."))
		}
		return nil, ContainerPath{}, fmt.Errorf("%w: no pod template (%s)", ErrContainerNotFound, strings.Join(where, " or "))
	}
	where := strings.Join(at.Pod, ".")

	at.Field = "containers"
	c, err := pickContainer(pod, "containers", name, where)
	if c != nil || err != nil {
		return c, at, err
	}
	at.Field = "initContainers"
	c, err = pickContainer(pod, "initContainers", name, where)
	if err != nil {
		return nil, at, err
	}
	if c == nil {
		return nil, at, fmt.Errorf("%w: no container %q in %s", ErrContainerNotFound, name, where)
	}
	if rp, _ := yamledit.ScalarField(c, "restartPolicy"); rp != "Always" {
		return nil, at, fmt.Errorf("%w: %q is an init container of %s, not a native sidecar", ErrContainerNotFound, name, where)
	}
	return c, at, nil
}

// MappingAt follows keys from m. It returns nil when a key is missing or
// null, and an error when a node on the way is unsafe or not a mapping.
func MappingAt(m *yaml.Node, keys []string) (*yaml.Node, error) {
	for i, key := range keys {
		where := strings.Join(keys[:i+1], ".")
		_, v, dup := yamledit.Lookup(m, key)
		if dup {
			return nil, fmt.Errorf("%w: %s is defined twice", ErrUnsafeFile, where)
		}
		if v == nil || (v.Kind == yaml.ScalarNode && yamledit.IsNull(v)) {
			return nil, nil
		}
		if err := yamledit.UnsafeNode(v, where); err != nil {
			return nil, err
		}
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%w: %s is not a mapping (line %d)", ErrContainerNotFound, where, v.Line)
		}
		m = v
	}
	return m, nil
}

// pickContainer finds the item of the list under field whose name is name.
func pickContainer(pod *yaml.Node, field, name, where string) (*yaml.Node, error) {
	where += "." + field
	_, seq, dup := yamledit.Lookup(pod, field)
	if dup {
		return nil, fmt.Errorf("%w: %s is defined twice", ErrUnsafeFile, where)
	}
	if seq == nil || yamledit.IsNull(seq) {
		return nil, nil
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%w: %s is not a list (line %d)", ErrContainerNotFound, where, seq.Line)
	}
	var found []*yaml.Node
	for _, item := range seq.Content {
		c := item
		if c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		if n, _ := yamledit.ScalarField(c, "name"); n == name {
			found = append(found, item)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%w: container %q appears %d times in %s", ErrAmbiguousTarget, name, len(found), where)
	}
	// Checked only now: an anchor on an unrelated sidecar is no concern.
	if err := yamledit.UnsafeNode(seq, where); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("container %q", name)
	if err := yamledit.UnsafeNode(found[0], what); err != nil {
		return nil, err
	}
	return found[0], nil
}
