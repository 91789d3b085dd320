package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestValues checks that a change's values stay one per resource, in the
// order of their names, however they are set, and read back as set.
func TestValues(t *testing.T) {
	type set struct{ name, quantity string }
	for _, tc := range []struct {
		name string
		sets []set
		want string
	}{
		{name: "none", want: ""},
		{name: "in order", sets: []set{{"cpu", "250m"}, {"memory", "1Gi"}}, want: "cpu=250m memory=1Gi"},
		{name: "out of order", sets: []set{{"memory", "1Gi"}, {"ephemeral-storage", "2Gi"}, {"cpu", "1"}},
			want: "cpu=1 ephemeral-storage=2Gi memory=1Gi"},
		{name: "set again", sets: []set{{"cpu", "1"}, {"memory", "1Gi"}, {"cpu", "2"}}, want: "cpu=2 memory=1Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vs Values
			l := corev1.ResourceList{}
			for _, s := range tc.sets {
				q := resource.MustParse(s.quantity)
				vs = vs.Set(corev1.ResourceName(s.name), q)
				l[corev1.ResourceName(s.name)] = q
			}
			if got := valuesString(vs); got != tc.want {
				t.Errorf("set one by one: %q, want %q", got, tc.want)
			}
			if got := valuesString(ValuesOf(l)); got != tc.want {
				t.Errorf("ValuesOf: %q, want %q", got, tc.want)
			}
			back := vs.List()
			if len(back) != len(l) {
				t.Errorf("List() = %v, want %v", back, l)
			}
			for name, q := range l {
				if got, ok := vs.Get(name); !ok || got.Cmp(q) != 0 {
					t.Errorf("Get(%s) = %s, %v, want %s", name, got.String(), ok, q.String())
				}
				if got := back[name]; got.Cmp(q) != 0 {
					t.Errorf("List()[%s] = %s, want %s", name, got.String(), q.String())
				}
			}
			if _, ok := vs.Get("nvidia.com/gpu"); ok {
				t.Error("Get found a resource never set")
			}
		})
	}
}

// valuesString is vs as "name=quantity ...", in vs's order.
func valuesString(vs Values) string {
	s := ""
	for name, q := range vs.All() {
		if s != "" {
			s += " "
		}
		s += string(name) + "=" + q.String()
	}
	return s
}
