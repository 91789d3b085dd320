package edits

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// ValuesPlacer places assignments below prefix, a path from the
// document's root: mappings missing on the way are created, scalars are
// replaced unless they already hold the quantity, and a list must exist
// with the item the path names, since Helm and strategic-merge patches
// replace lists whole.
func ValuesPlacer(prefix helm.Path, as []helmsource.Assignment) Placer {
	return func(p *yamledit.Planner, doc *yaml.Node) error {
		root := yamledit.DocRoot(doc)
		p.Step = yamledit.IndentStep(root)
		full := make([]helmsource.Assignment, len(as))
		for i, a := range as {
			full[i] = helmsource.Assignment{Path: append(append(helm.Path{}, prefix...), a.Path...), Quantity: a.Quantity}
		}
		p.Scopes = []*yaml.Node{root}
		return helmsource.SetPaths(p, root, nil, full)
	}
}
