package helmsource

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// Layer is one source of a release's values, in Helm's order.
type Layer struct {
	What   string
	Values map[string]any
	// File is the values file of the repository the layer is, "" for
	// values held in the object.
	File string
	// Prefix is, for values held in the object, the path to them
	// (spec.values, spec.source.helm.valuesObject).
	Prefix helm.Path
	// writable: the layer belongs to this release's environment alone.
	Writable bool
	// Refused says why a layer the job would write to is not writable,
	// for the refusal to name what was tried.
	Refused string
}

// MergeLayers merges the layers' values in order.
func MergeLayers(layers []Layer) map[string]any {
	vals := make([]map[string]any, 0, len(layers))
	for _, l := range layers {
		vals = append(vals, l.Values)
	}
	return helm.Merge(vals...)
}

// ChooseLayer picks the layer the values go to, among those of the
// release's environment alone that no later layer overrides at those
// keys: the one that holds the deepest part of a key (the key itself, or
// the mapping it goes in), else the environment's last values file, else
// the object's own values.
func ChooseLayer(layers []Layer, as []Assignment) (Layer, error) {
	var open []int
	var over string
	for j, l := range layers {
		if !l.Writable {
			continue
		}
		if by := overriddenBy(layers[j+1:], as); by != "" {
			over = by
			continue
		}
		open = append(open, j)
	}
	if len(open) == 0 {
		if over != "" {
			return Layer{}, fmt.Errorf("%s, which no values of the environment alone can override", over)
		}
		msg := "no values of the release belong to its environment alone (a values file only it reads, spec.values, or a helm.valuesObject where no helm.values string is set, which Argo CD would stop reading)"
		var tried []string
		for _, l := range layers {
			if l.Refused != "" {
				tried = append(tried, l.Refused)
			}
		}
		if len(tried) > 0 {
			msg += ": tried " + strings.Join(tried, "; ")
		}
		return Layer{}, errors.New(msg)
	}
	// The layer that holds the deepest part of a key already extends
	// what a person wrote; on a tie the later one wins, as Helm reads it.
	best, depth := -1, 0
	for _, j := range open {
		for _, a := range as {
			if d := heldDepth(layers[j].Values, a.Path); d >= depth && d > 0 {
				best, depth = j, d
			}
		}
	}
	if best >= 0 {
		return layers[best], nil
	}
	for _, j := range slices.Backward(open) {
		if layers[j].File != "" {
			return layers[j], nil
		}
	}
	return layers[open[len(open)-1]], nil
}

// heldDepth is how many steps of p values hold: the whole path when they
// set it, else the depth of the deepest mapping on its way.
func heldDepth(values map[string]any, p helm.Path) int {
	var cur any = values
	for i, s := range p {
		m, ok := cur.(map[string]any)
		if !ok || s.Index >= 0 {
			if l, ok := cur.([]any); ok && s.Index >= 0 && s.Index < len(l) {
				cur = l[s.Index]
				continue
			}
			return i
		}
		next, ok := m[s.Key]
		if !ok {
			return i
		}
		cur = next
	}
	return len(p)
}

// overriddenBy says which of layers sets one of the paths, or "".
func overriddenBy(layers []Layer, as []Assignment) string {
	for _, l := range layers {
		for _, a := range as {
			if setsPath(l.Values, a.Path) {
				return l.What + " sets " + a.Path.String()
			}
		}
	}
	return ""
}

// setsPath reports whether values set p, or cut it short with a scalar
// or a list on the way.
func setsPath(values map[string]any, p helm.Path) bool {
	var cur any = values
	for _, s := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return cur != nil
		}
		if s.Index >= 0 {
			return true
		}
		next, ok := m[s.Key]
		if !ok {
			return false
		}
		cur = next
	}
	return true
}
