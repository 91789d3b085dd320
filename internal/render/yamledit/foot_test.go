package yamledit

import "testing"

// TestReserialiseKeepsFootComment checks the doc's promise that comments
// the parser gave the subtree from lines after its last line stay where
// they are: the parser hangs such a comment on the last key, which
// Reserialise does not clear, so it is written twice and the edit refused.
func TestReserialiseKeepsFootComment(t *testing.T) {
	in := "r:\n  cpu: !!str 1\n  # memory: 1Gi\nx: 1\n"
	got, how, err := edit(in, set{keys: keys("r.cpu"), value: "250m"})
	if want := "r:\n  cpu: 250m\n  # memory: 1Gi\nx: 1\n"; err != nil || got != want || how != "subtree" {
		t.Errorf("edit = %q by %s, %v; want %q by subtree", got, how, err, want)
	}
}
