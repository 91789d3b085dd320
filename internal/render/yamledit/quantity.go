package yamledit

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// SameQuantity reports whether scalar n already holds the quantity want,
// however it is spelled.
func SameQuantity(n *yaml.Node, want resource.Quantity) bool {
	if n.ShortTag() == "!!null" {
		return false
	}
	have, err := resource.ParseQuantity(strings.TrimSpace(n.Value))
	if err != nil {
		return false
	}
	return have.Cmp(want) == 0
}
