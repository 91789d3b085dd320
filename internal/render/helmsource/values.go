package helmsource

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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

// Assignment sets one quantity at a path of a document: a Helm values key
// such as web.resources.requests.cpu, below the mapping that holds the
// values.
type Assignment struct {
	Path     helm.Path
	Quantity resource.Quantity
}

// KeysPath turns plain mapping keys into a path.
func KeysPath(keys ...string) helm.Path {
	p := make(helm.Path, len(keys))
	for i, k := range keys {
		p[i] = helm.Key(k)
	}
	return p
}

// stepGroup is the assignments that go through one step: a quantity when
// the step is their last, else the rest of their paths.
type stepGroup struct {
	Step helm.Step
	Leaf *resource.Quantity
	Rest []Assignment
}

// GroupByStep groups assignments by their first step, in order.
func GroupByStep(as []Assignment) []stepGroup {
	var out []stepGroup
	for _, a := range as {
		if len(a.Path) == 0 {
			continue
		}
		i := 0
		for i < len(out) && out[i].Step != a.Path[0] {
			i++
		}
		if i == len(out) {
			out = append(out, stepGroup{Step: a.Path[0]})
		}
		if len(a.Path) == 1 {
			q := a.Quantity
			out[i].Leaf = &q
			continue
		}
		out[i].Rest = append(out[i].Rest, Assignment{Path: a.Path[1:], Quantity: a.Quantity})
	}
	return out
}

// NewEntry is what a group writes where its key is missing: nested
// mappings down to the quantities.
func NewEntry(g stepGroup, at helm.Path) (yamledit.Entry, error) {
	if g.Leaf != nil {
		return yamledit.Entry{Key: g.Step.Key, Value: g.Leaf.String(), Quantity: *g.Leaf}, nil
	}
	e := yamledit.Entry{Key: g.Step.Key, Children: []yamledit.Entry{}}
	for _, sub := range GroupByStep(g.Rest) {
		if sub.Step.Index >= 0 {
			return yamledit.Entry{}, fmt.Errorf("%w: %s is not set here, and a list is replaced whole, so its items are set where the list is", repoindex.ErrUnsafeFile, at)
		}
		c, err := NewEntry(sub, append(append(helm.Path{}, at...), sub.Step))
		if err != nil {
			return yamledit.Entry{}, err
		}
		e.Children = append(e.Children, c)
	}
	return e, nil
}

// AssignmentEntries is the whole tree of assignments as entries, for a new
// file; it fails on a list step.
func AssignmentEntries(as []Assignment) ([]yamledit.Entry, error) {
	var out []yamledit.Entry
	for _, g := range GroupByStep(as) {
		if g.Step.Index >= 0 {
			return nil, fmt.Errorf("%w: a new patch cannot set item %d of a list, which it would replace whole", repoindex.ErrUnsafeFile, g.Step.Index)
		}
		e, err := NewEntry(g, helm.Path{g.Step})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DigPath returns the value at p in a decoded object, or nil.
func DigPath(v any, p helm.Path) any {
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

// SetPath sets the value at p in a decoded object, creating mappings; it
// reports false when a list item on the way is missing or a step crosses
// a scalar.
func SetPath(obj map[string]any, p helm.Path, value any) bool {
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

// SameQuantityValue reports whether a decoded value holds the quantity q.
func SameQuantityValue(v any, q resource.Quantity) bool {
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

// PathKeys returns p's keys when it has no list step.
func PathKeys(p helm.Path) ([]string, bool) {
	out := make([]string, len(p))
	for i, s := range p {
		if s.Index >= 0 {
			return nil, false
		}
		out[i] = s.Key
	}
	return out, true
}
