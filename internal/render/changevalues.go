package render

import (
	"cmp"
	"iter"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Values are the requests or the limits a Change sets, one per resource,
// in the order of their names. A change sets one or two: a slice of them
// is about a quarter of a map's size, and a run holds tens of thousands of
// changes at once.
type Values []Value

// Value is the quantity to set for one resource.
type Value struct {
	Resource corev1.ResourceName
	Quantity resource.Quantity
}

// ValuesOf are the values of l.
func ValuesOf(l corev1.ResourceList) Values {
	if len(l) == 0 {
		return nil
	}
	vs := make(Values, 0, len(l))
	for name, q := range l {
		vs = append(vs, Value{Resource: name, Quantity: q})
	}
	slices.SortFunc(vs, func(a, b Value) int { return cmp.Compare(a.Resource, b.Resource) })
	return vs
}

// Get is the quantity of name, and whether vs sets it.
func (vs Values) Get(name corev1.ResourceName) (resource.Quantity, bool) {
	for _, v := range vs {
		if v.Resource == name {
			return v.Quantity, true
		}
	}
	return resource.Quantity{}, false
}

// Set returns vs with name set to q, in order. Like append, it may write
// into vs's array.
func (vs Values) Set(name corev1.ResourceName, q resource.Quantity) Values {
	i, found := slices.BinarySearchFunc(vs, name, func(v Value, name corev1.ResourceName) int { return cmp.Compare(v.Resource, name) })
	if found {
		vs[i].Quantity = q
		return vs
	}
	return slices.Insert(vs, i, Value{Resource: name, Quantity: q})
}

// All yields each resource with its quantity, in the order of their names.
func (vs Values) All() iter.Seq2[corev1.ResourceName, resource.Quantity] {
	return func(yield func(corev1.ResourceName, resource.Quantity) bool) {
		for _, v := range vs {
			if !yield(v.Resource, v.Quantity) {
				return
			}
		}
	}
}

// ordered reports whether vs names each resource once, in order, as
// ValuesOf and Set keep it; a Values made otherwise may not.
func (vs Values) ordered() bool {
	for i := 1; i < len(vs); i++ {
		if vs[i-1].Resource >= vs[i].Resource {
			return false
		}
	}
	return true
}

// List is vs as a ResourceList, for the packages that take one; nil when
// vs is empty.
func (vs Values) List() corev1.ResourceList {
	if len(vs) == 0 {
		return nil
	}
	l := make(corev1.ResourceList, len(vs))
	for _, v := range vs {
		l[v.Resource] = v.Quantity
	}
	return l
}
