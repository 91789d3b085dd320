package node

import (
	"slices"
	"testing"
)

func TestSplitQuoted(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"-N KUBE-FIREWALL", []string{"-N", "KUBE-FIREWALL"}},
		{`-A INPUT -m comment --comment "kubernetes firewall for dropping marked packets" -j KUBE-FIREWALL`,
			[]string{"-A", "INPUT", "-m", "comment", "--comment", "kubernetes firewall for dropping marked packets", "-j", "KUBE-FIREWALL"}},
		{`-A X --comment "a \"quoted\" word"  -j Y`, []string{"-A", "X", "--comment", `a "quoted" word`, "-j", "Y"}},
		{`-A X --comment ""`, []string{"-A", "X", "--comment", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitQuoted(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("splitQuoted(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	tests := map[string]string{
		`/tmp/a\040b`:   "/tmp/a b",
		`/tmp/plain`:    "/tmp/plain",
		`/tmp/tab\011x`: "/tmp/tab\tx",
		`/tmp/odd\04`:   `/tmp/odd\04`,
	}
	for in, want := range tests {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
