package helm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name   string
		layers []map[string]any
		want   map[string]any
	}{
		{
			name:   "no layers",
			layers: nil,
			want:   map[string]any{},
		},
		{
			name: "mappings merge at every depth, the later layer wins",
			layers: []map[string]any{
				{"web": map[string]any{"replicas": 2.0, "resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}}},
				{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}}},
			},
			want: map[string]any{"web": map[string]any{"replicas": 2.0, "resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "128Mi"}}}},
		},
		{
			name: "lists are replaced whole",
			layers: []map[string]any{
				{"sidecars": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}},
				{"sidecars": []any{map[string]any{"image": "x"}}},
			},
			want: map[string]any{"sidecars": []any{map[string]any{"image": "x"}}},
		},
		{
			name: "a scalar replaces a mapping and a mapping a scalar",
			layers: []map[string]any{
				{"a": map[string]any{"b": 1.0}, "c": "text"},
				{"a": "flat", "c": map[string]any{"d": true}},
			},
			want: map[string]any{"a": "flat", "c": map[string]any{"d": true}},
		},
		{
			name: "null is kept for the chart's coalescing to remove the key",
			layers: []map[string]any{
				{"resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
				{"resources": map[string]any{"limits": nil}},
			},
			want: map[string]any{"resources": map[string]any{"limits": nil}},
		},
		{
			name: "three layers",
			layers: []map[string]any{
				{"a": 1.0, "b": 1.0, "c": 1.0},
				{"b": 2.0, "c": 2.0},
				{"c": 3.0},
			},
			want: map[string]any{"a": 1.0, "b": 2.0, "c": 3.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []map[string]any
			for _, l := range tt.layers {
				before = append(before, deepCopyMap(l))
			}
			got := Merge(tt.layers...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.layers); diff != "" {
				t.Errorf("Merge modified its layers (-before +after):\n%s", diff)
			}
		})
	}
}

// TestMergeSharesNothing changes every mapping and list of the result and
// checks that the layers do not see it.
func TestMergeSharesNothing(t *testing.T) {
	a := map[string]any{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}, "list": []any{map[string]any{"x": 1.0}}}
	b := map[string]any{"only": map[string]any{"k": "v"}, "items": []any{"a"}}
	before := []map[string]any{deepCopyMap(a), deepCopyMap(b)}
	got := Merge(a, b)
	got["web"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = "9"
	got["list"].([]any)[0].(map[string]any)["x"] = 9.0
	got["only"].(map[string]any)["k"] = "changed"
	got["items"].([]any)[0] = "changed"
	if diff := cmp.Diff(before, []map[string]any{a, b}); diff != "" {
		t.Errorf("changing Merge's result changed its layers (-before +after):\n%s", diff)
	}
}

func TestPathString(t *testing.T) {
	tests := []struct {
		path Path
		want string
	}{
		{Path{Key("web"), Key("resources")}, "web.resources"},
		{Path{Key("sidecars"), Index(0), Key("resources")}, "sidecars[0].resources"},
		{Path{Key("annotations"), Key("example.com/x")}, `annotations["example.com/x"]`},
		{Path{Index(2)}, "[2]"},
	}
	for _, tt := range tests {
		if got := tt.path.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestFindCandidates(t *testing.T) {
	values := map[string]any{
		"image":    map[string]any{"tag": "1.0", "pullSecrets": []any{"a"}},
		"replicas": 2.0,
		"enabled":  true,
		"sidecars": []any{map[string]any{"name": "s", "resources": map[string]any{}}},
		"flat":     "x",
	}
	reads := []Path{
		{Key("web"), Key("resources"), Key("limits")}, // unset, with its unset prefixes
		{Key("image"), Key("tag")},                    // set
		{Key("image"), Key("digest")},                 // unset under a set mapping
		{Key("flat"), Key("below")},                   // under a scalar: not a candidate
		{Key("web")},                                  // a prefix of another read
	}
	c := findCandidates(values, reads)
	strs := func(ps []Path) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	wantMappings := []string{"", "image", "sidecars[0]", "sidecars[0].resources"}
	if diff := cmp.Diff(wantMappings, strs(c.mappings)); diff != "" {
		t.Errorf("mappings (-want +got):\n%s", diff)
	}
	wantUnsetMappings := []string{"web", "web.resources", "web.resources.limits", "image.digest"}
	if diff := cmp.Diff(wantUnsetMappings, strs(c.unsetMappings)); diff != "" {
		t.Errorf("unset mappings (-want +got):\n%s", diff)
	}
	wantScalars := []string{"flat", "image.pullSecrets[0]", "image.tag", "replicas", "sidecars[0].name"}
	if diff := cmp.Diff(wantScalars, strs(c.scalars)); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	wantUnset := []string{"web.resources.limits", "image.digest"}
	if diff := cmp.Diff(wantUnset, strs(c.unsetReads)); diff != "" {
		t.Errorf("unset reads (-want +got):\n%s", diff)
	}
}

func TestProbeNumber(t *testing.T) {
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{"7000000003m", 7000000003, true},
		{"7000000003Mi", 7000000003, true},
		{" 7000000003 ", 7000000003, true},
		{7000000003.0, 7000000003, true},
		{"7000000003mMi", 0, false}, // a unit after the template's own: not a quantity
		{"700000000m", 0, false},    // nine digits
		{"100m", 0, false},
		{"7000000003.5", 0, false},
		{true, 0, false},
	}
	for _, tt := range tests {
		got, ok := probeNumber(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("probeNumber(%#v) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
