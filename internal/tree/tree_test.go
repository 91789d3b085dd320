package tree

import (
	"reflect"
	"testing"
)

func TestDig(t *testing.T) {
	v := map[string]any{"spec": map[string]any{"values": map[string]any{"cpu": "1"}, "list": []any{1}}}
	tests := []struct {
		name string
		in   any
		keys []string
		want any
	}{
		{"no keys", "x", nil, "x"},
		{"a scalar", v, []string{"spec", "values", "cpu"}, "1"},
		{"a mapping", v, []string{"spec", "values"}, map[string]any{"cpu": "1"}},
		{"a missing key", v, []string{"spec", "none", "cpu"}, nil},
		{"through a list", v, []string{"spec", "list", "0"}, nil},
		{"through a scalar", v, []string{"spec", "values", "cpu", "x"}, nil},
		{"nil", nil, []string{"a"}, nil},
	}
	for _, tt := range tests {
		if got := Dig(tt.in, tt.keys...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Dig = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestItem(t *testing.T) {
	list := []any{"scalar", map[string]any{"name": "app", "n": 1}, map[string]any{"name": "side"}, map[string]any{"name": "app", "n": 2}}
	if got := Item(list, "app"); got == nil || got["n"] != 1 {
		t.Errorf("Item(app) = %v, want the first app", got)
	}
	if got := Item(list, "db"); got != nil {
		t.Errorf("Item(db) = %v, want nil", got)
	}
	if got := Item(map[string]any{"name": "app"}, "app"); got != nil {
		t.Errorf("Item of a mapping = %v, want nil", got)
	}
}

func TestDeepCopy(t *testing.T) {
	orig := map[string]any{"m": map[string]any{"l": []any{map[string]any{"x": 1}}}, "s": "v"}
	cp := DeepCopy(orig).(map[string]any)
	if !reflect.DeepEqual(cp, orig) {
		t.Fatalf("copy %v differs from %v", cp, orig)
	}
	Dig(cp, "m").(map[string]any)["new"] = true
	Dig(cp, "m", "l").([]any)[0].(map[string]any)["x"] = 2
	if _, ok := Dig(orig, "m").(map[string]any)["new"]; ok {
		t.Error("a mapping is shared with the copy")
	}
	if Dig(orig, "m", "l").([]any)[0].(map[string]any)["x"] != 1 {
		t.Error("a list is shared with the copy")
	}
	if DeepCopy(nil) != nil || DeepCopy(3) != 3 {
		t.Error("scalars are not returned as they are")
	}
}
