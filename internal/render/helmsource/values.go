package helmsource

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// SetPaths plans the assignments, whose paths are relative to n, the node
// at path at.
func SetPaths(p *yamledit.Planner, n *yaml.Node, at helm.Path, as []Assignment) error {
	var missing []yamledit.Entry
	for _, g := range GroupByStep(as) {
		here := append(append(helm.Path{}, at...), g.Step)
		where := here.String()
		if g.Step.Index >= 0 {
			if n.Kind != yaml.SequenceNode {
				return fmt.Errorf("%w: %s is not a list (line %d)", repoindex.ErrUnsafeFile, at, n.Line)
			}
			if g.Step.Index >= len(n.Content) {
				return fmt.Errorf("%w: %s has no item %d: a list is replaced whole, so its items are set where the list is", repoindex.ErrUnsafeFile, at, g.Step.Index)
			}
			item := n.Content[g.Step.Index]
			if err := yamledit.UnsafeNode(item, where); err != nil {
				return err
			}
			if g.Leaf != nil || item.Kind != yaml.MappingNode {
				return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, where, item.Line)
			}
			if err := SetPaths(p, item, here, g.Rest); err != nil {
				return err
			}
			continue
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, at, n.Line)
		}
		k, v, dup := yamledit.Lookup(n, g.Step.Key)
		if dup {
			return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, where)
		}
		if k == nil {
			e, err := NewEntry(g, here)
			if err != nil {
				return err
			}
			missing = append(missing, e)
			continue
		}
		if err := yamledit.UnsafeNode(v, where); err != nil {
			return err
		}
		switch {
		case g.Leaf != nil && v.Kind == yaml.ScalarNode:
			if !yamledit.SameQuantity(v, *g.Leaf) {
				p.Replace(k, v, g.Leaf.String())
			}
		case g.Leaf != nil:
			return fmt.Errorf("%w: %s is not a quantity (line %d)", repoindex.ErrUnsafeFile, where, v.Line)
		case yamledit.IsNull(v):
			e, err := NewEntry(g, here)
			if err != nil {
				return err
			}
			p.Fill(n, k, v, e.Children)
		case v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode:
			if err := SetPaths(p, v, here, g.Rest); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, where, v.Line)
		}
	}
	if len(missing) > 0 {
		p.Insert(n, missing)
	}
	return nil
}
