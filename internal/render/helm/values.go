package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// Merge merges values layers in Helm's order for user values, as helm
// merges its -f files: each later layer wins, mappings merge key by key at
// every depth, and lists and scalars are replaced whole. A null in a later
// layer is kept: it removes the key when Render coalesces the values with
// the chart's defaults, as it does in Helm. The layers are not modified,
// and the result shares nothing with them.
func Merge(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, layer := range layers {
		mergeInto(out, layer)
	}
	return out
}

// mergeInto merges src into dst, which it owns, copying what it takes.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = deepCopy(v)
	}
}

// deepCopy copies the mappings and lists of a values tree; scalars are
// immutable and shared.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = deepCopy(e)
	}
	return out
}

// valuesHash identifies a values tree: encoding/json writes mapping keys
// in order, so equal trees give equal hashes. ok is false for values JSON
// cannot hold.
func valuesHash(values map[string]any) (hash string, ok bool) {
	data, err := json.Marshal(values)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), true
}

// child returns p extended by s, sharing nothing with p.
func (p Path) child(s Step) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}

// hasPrefix reports whether q starts with p.
func (p Path) hasPrefix(q Path) bool {
	return len(q) <= len(p) && slices.Equal(p[:len(q)], q)
}

// pathState is what a values tree holds at a path.
type pathState int

const (
	// absent: no value, and mappings all the way down to where it would be.
	absent pathState = iota
	// present: a value, possibly null.
	present
	// blocked: a scalar or a list stands where a mapping would have to be.
	blocked
)

// lookup returns the value at p and whether it is there.
func lookup(values map[string]any, p Path) (any, pathState) {
	var cur any = values
	for _, s := range p {
		switch node := cur.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return nil, blocked
			}
			v, ok := node[s.Key]
			if !ok {
				return nil, absent
			}
			cur = v
		case []any:
			if s.Index < 0 || s.Index >= len(node) {
				return nil, blocked
			}
			cur = node[s.Index]
		default:
			return nil, blocked
		}
	}
	return cur, present
}

// ensureMap returns the mapping at p, creating the missing mappings on
// the way, or nil when a scalar stands in the way, a key is asked of a
// list, or an index is past a list's end.
func ensureMap(values map[string]any, p Path) map[string]any {
	var cur any = values
	for _, s := range p {
		switch node := cur.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return nil
			}
			next, ok := node[s.Key]
			if !ok {
				next = map[string]any{}
				node[s.Key] = next
			}
			cur = next
		case []any:
			if s.Index < 0 || s.Index >= len(node) {
				return nil
			}
			cur = node[s.Index]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// setPath sets the value at p, creating the missing mappings on the way.
// It reports false when a scalar, or a list where a key is wanted, stands
// in the way, or p indexes past the end of a list.
func setPath(values map[string]any, p Path, v any) bool {
	if len(p) == 0 {
		return false
	}
	var cur any = values
	for i, s := range p {
		last := i == len(p)-1
		switch node := cur.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return false
			}
			if last {
				node[s.Key] = v
				return true
			}
			next, ok := node[s.Key]
			if !ok {
				next = map[string]any{}
				node[s.Key] = next
			}
			cur = next
		case []any:
			if s.Index < 0 || s.Index >= len(node) {
				return false
			}
			if last {
				node[s.Index] = v
				return true
			}
			cur = node[s.Index]
		default:
			return false
		}
	}
	return false
}

// mappingPaths lists the path of every mapping in values, the root and
// mappings inside lists included, parents before their children and
// siblings in key order.
func mappingPaths(values map[string]any) []Path {
	var out []Path
	walkValues(values, func(v any, p Path) {
		if _, ok := v.(map[string]any); ok {
			out = append(out, p)
		}
	})
	return out
}

// scalarPaths lists the path of every string and number in values,
// inside lists too, in key order. Booleans and nulls are left out: they
// cannot become a quantity.
func scalarPaths(values map[string]any) []Path {
	var out []Path
	walkValues(values, func(v any, p Path) {
		switch v.(type) {
		case string, int, int64, uint64, float64, json.Number:
			out = append(out, p)
		}
	})
	return out
}

// walkValues visits every value under values with its path, parents
// before their children, mapping keys in order.
func walkValues(values map[string]any, visit func(v any, p Path)) {
	var walk func(v any, p Path)
	walk = func(v any, p Path) {
		visit(v, p)
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], p.child(Key(k)))
			}
		case []any:
			for i, e := range t {
				walk(e, p.child(Index(i)))
			}
		}
	}
	walk(values, Path{})
}
