package gitops

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if c, ok := change[i]; ok {
			b.WriteString(c + "\n")
			continue
		}
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestUnified(t *testing.T) {
	tests := []struct {
		name, before, after, want string
	}{
		{name: "equal", before: "a\n", after: "a\n", want: ""},
		{
			// Lines 2 and 18 of 20 change: 15 unchanged lines apart, more
			// than twice the context, so two hunks: lines 1-5 (one line
			// before line 2 exists) and 15-20.
			name: "two hunks", before: numbered(20, nil), after: numbered(20, map[int]string{2: "L2", 18: "L18"}),
			want: "--- a/f.yaml\n+++ b/f.yaml\n" +
				"@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n" +
				"@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n",
		},
		{
			// Lines 4 and 9 are 4 lines apart, within twice the context:
			// one hunk from line 1 to 12.
			name: "one hunk", before: numbered(15, nil), after: numbered(15, map[int]string{4: "L4", 9: "L9"}),
			want: "--- a/f.yaml\n+++ b/f.yaml\n" +
				"@@ -1,12 +1,12 @@\n l1\n l2\n l3\n-l4\n+L4\n l5\n l6\n l7\n l8\n-l9\n+L9\n l10\n l11\n l12\n",
		},
		{
			name: "new file", before: "", after: "a\nb\n",
			want: "--- a/f.yaml\n+++ b/f.yaml\n@@ -0,0 +1,2 @@\n+a\n+b\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unified("f.yaml", tt.before, tt.after); got != tt.want {
				t.Errorf("unified() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
