package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/yamledit"
)

// assignment sets one quantity at a path of a document: a Helm values key
// such as web.resources.requests.cpu, below the mapping that holds the
// values.
type assignment struct {
	path helm.Path
	q    resource.Quantity
}

// keysPath turns plain mapping keys into a path.
func keysPath(keys ...string) helm.Path {
	p := make(helm.Path, len(keys))
	for i, k := range keys {
		p[i] = helm.Key(k)
	}
	return p
}

// valuesPlacer places assignments below prefix, a path from the
// document's root: mappings missing on the way are created, scalars are
// replaced unless they already hold the quantity, and a list must exist
// with the item the path names, since Helm and strategic-merge patches
// replace lists whole.
func valuesPlacer(prefix helm.Path, as []assignment) placer {
	return func(p *planner, doc *yaml.Node, _ Change) error {
		root := yamledit.DocRoot(doc)
		p.step = indentStep(root)
		full := make([]assignment, len(as))
		for i, a := range as {
			full[i] = assignment{path: append(append(helm.Path{}, prefix...), a.path...), q: a.q}
		}
		p.scopes = []*yaml.Node{root}
		return p.setPaths(root, nil, full)
	}
}

// setPaths plans the assignments, whose paths are relative to n, the node
// at path at.
func (p *planner) setPaths(n *yaml.Node, at helm.Path, as []assignment) error {
	var missing []yamledit.Entry
	for _, g := range groupByStep(as) {
		here := append(append(helm.Path{}, at...), g.step)
		where := here.String()
		if g.step.Index >= 0 {
			if n.Kind != yaml.SequenceNode {
				return fmt.Errorf("%w: %s is not a list (line %d)", repoindex.ErrUnsafeFile, at, n.Line)
			}
			if g.step.Index >= len(n.Content) {
				return fmt.Errorf("%w: %s has no item %d: a list is replaced whole, so its items are set where the list is", repoindex.ErrUnsafeFile, at, g.step.Index)
			}
			item := n.Content[g.step.Index]
			if err := yamledit.UnsafeNode(item, where); err != nil {
				return err
			}
			if g.leaf != nil || item.Kind != yaml.MappingNode {
				return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, where, item.Line)
			}
			if err := p.setPaths(item, here, g.rest); err != nil {
				return err
			}
			continue
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, at, n.Line)
		}
		k, v, dup := yamledit.Lookup(n, g.step.Key)
		if dup {
			return fmt.Errorf("%w: %s is defined twice", repoindex.ErrUnsafeFile, where)
		}
		if k == nil {
			e, err := newEntry(g, here)
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
		case g.leaf != nil && v.Kind == yaml.ScalarNode:
			if !sameQuantity(v, *g.leaf) {
				p.replace(k, v, g.leaf.String())
			}
		case g.leaf != nil:
			return fmt.Errorf("%w: %s is not a quantity (line %d)", repoindex.ErrUnsafeFile, where, v.Line)
		case yamledit.IsNull(v):
			e, err := newEntry(g, here)
			if err != nil {
				return err
			}
			p.fill(n, k, v, e.Children)
		case v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode:
			if err := p.setPaths(v, here, g.rest); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s is not a mapping (line %d)", repoindex.ErrUnsafeFile, where, v.Line)
		}
	}
	if len(missing) > 0 {
		p.insert(n, missing)
	}
	return nil
}

// stepGroup is the assignments that go through one step: a quantity when
// the step is their last, else the rest of their paths.
type stepGroup struct {
	step helm.Step
	leaf *resource.Quantity
	rest []assignment
}

// groupByStep groups assignments by their first step, in order.
func groupByStep(as []assignment) []stepGroup {
	var out []stepGroup
	for _, a := range as {
		if len(a.path) == 0 {
			continue
		}
		i := 0
		for i < len(out) && out[i].step != a.path[0] {
			i++
		}
		if i == len(out) {
			out = append(out, stepGroup{step: a.path[0]})
		}
		if len(a.path) == 1 {
			q := a.q
			out[i].leaf = &q
			continue
		}
		out[i].rest = append(out[i].rest, assignment{path: a.path[1:], q: a.q})
	}
	return out
}

// newEntry is what a group writes where its key is missing: nested
// mappings down to the quantities.
func newEntry(g stepGroup, at helm.Path) (yamledit.Entry, error) {
	if g.leaf != nil {
		return yamledit.Entry{Key: g.step.Key, Value: g.leaf.String(), Quantity: *g.leaf}, nil
	}
	e := yamledit.Entry{Key: g.step.Key, Children: []yamledit.Entry{}}
	for _, sub := range groupByStep(g.rest) {
		if sub.step.Index >= 0 {
			return yamledit.Entry{}, fmt.Errorf("%w: %s is not set here, and a list is replaced whole, so its items are set where the list is", repoindex.ErrUnsafeFile, at)
		}
		c, err := newEntry(sub, append(append(helm.Path{}, at...), sub.step))
		if err != nil {
			return yamledit.Entry{}, err
		}
		e.Children = append(e.Children, c)
	}
	return e, nil
}

// assignmentEntries is the whole tree of assignments as entries, for a new
// file; it fails on a list step.
func assignmentEntries(as []assignment) ([]yamledit.Entry, error) {
	var out []yamledit.Entry
	for _, g := range groupByStep(as) {
		if g.step.Index >= 0 {
			return nil, fmt.Errorf("%w: a new patch cannot set item %d of a list, which it would replace whole", repoindex.ErrUnsafeFile, g.step.Index)
		}
		e, err := newEntry(g, helm.Path{g.step})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// digPath returns the value at p in a decoded object, or nil.
func digPath(v any, p helm.Path) any {
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return nil
			}
			v = x[s.Key]
		case []any:
			if s.Index < 0 || s.Index >= len(x) {
				return nil
			}
			v = x[s.Index]
		default:
			return nil
		}
	}
	return v
}

// setPath sets the value at p in a decoded object, creating mappings; it
// reports false when a list item on the way is missing or a step crosses
// a scalar.
func setPath(obj map[string]any, p helm.Path, value any) bool {
	var cur any = obj
	for i, s := range p {
		last := i == len(p)-1
		switch x := cur.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return false
			}
			if last {
				x[s.Key] = value
				return true
			}
			next := x[s.Key]
			if next == nil {
				if p[i+1].Index >= 0 {
					return false
				}
				next = map[string]any{}
				x[s.Key] = next
			}
			cur = next
		case []any:
			if s.Index < 0 || s.Index >= len(x) {
				return false
			}
			if last {
				x[s.Index] = value
				return true
			}
			cur = x[s.Index]
		default:
			return false
		}
	}
	return false
}

// sameQuantityValue reports whether a decoded value holds the quantity q.
func sameQuantityValue(v any, q resource.Quantity) bool {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int, int64, float64:
		s = fmt.Sprint(x)
	default:
		return false
	}
	have, err := resource.ParseQuantity(strings.TrimSpace(s))
	return err == nil && have.Cmp(q) == 0
}

// pathKeys returns p's keys when it has no list step.
func pathKeys(p helm.Path) ([]string, bool) {
	out := make([]string, len(p))
	for i, s := range p {
		if s.Index >= 0 {
			return nil, false
		}
		out[i] = s.Key
	}
	return out, true
}
