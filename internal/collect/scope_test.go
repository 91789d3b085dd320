package collect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShard(t *testing.T) {
	// FNV-1a (32 bit) worked out independently: "shop/web" = 0xeb78a544,
	// "shop/api" = 0xf2abd8b6, "default/a" = 0xca0af726; mod 3 gives 0, 1
	// and 2. These values must never change: a change would move
	// ResourceRecommends between the pods of a running Indexed Job.
	tests := []struct {
		ns, name string
		count    int
		want     int
	}{
		{"shop", "web", 3, 0},
		{"shop", "api", 3, 1},
		{"default", "a", 3, 2},
		{"shop", "api", 2, 0},
		{"shop", "api", 1, 0},
		{"shop", "api", 0, 0},
	}
	for _, tt := range tests {
		if got := Shard(tt.ns, tt.name, tt.count); got != tt.want {
			t.Errorf("Shard(%q, %q, %d) = %d, want %d", tt.ns, tt.name, tt.count, got, tt.want)
		}
	}
}

func TestScope(t *testing.T) {
	tests := []struct {
		name           string
		s              scope
		wantNamespaces []string
		wantSelector   string
		in, out        []string
	}{
		{name: "everything", wantNamespaces: []string{""}, in: []string{"a", "kube-system"}},
		{name: "include, sorted and deduplicated", s: scope{include: []string{"b", "a", "b"}},
			wantNamespaces: []string{"a", "b"}, in: []string{"a", "b"}, out: []string{"c"}},
		{name: "exclude", s: scope{exclude: []string{"kube-system", "x"}}, wantNamespaces: []string{""},
			wantSelector: "metadata.namespace!=kube-system,metadata.namespace!=x", in: []string{"a"}, out: []string{"kube-system", "x"}},
		{name: "exclude wins over include", s: scope{include: []string{"a", "b"}, exclude: []string{"b"}},
			wantNamespaces: []string{"a"}, wantSelector: "metadata.namespace!=b", in: []string{"a"}, out: []string{"b"}},
		{name: "all included are excluded", s: scope{include: []string{"a"}, exclude: []string{"a"}}, out: []string{"a"},
			wantSelector: "metadata.namespace!=a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.wantNamespaces, tt.s.namespaces()); d != "" {
				t.Errorf("namespaces() (-want +got):\n%s", d)
			}
			if got := tt.s.fieldSelector(); got != tt.wantSelector {
				t.Errorf("fieldSelector() = %q, want %q", got, tt.wantSelector)
			}
			for _, ns := range tt.in {
				if !tt.s.contains(ns) {
					t.Errorf("contains(%q) = false, want true", ns)
				}
			}
			for _, ns := range tt.out {
				if tt.s.contains(ns) {
					t.Errorf("contains(%q) = true, want false", ns)
				}
			}
		})
	}
}
