package testbed

import (
	"slices"
	"testing"
)

func TestKubernetesVersionFlags(t *testing.T) {
	tests := []struct {
		version string
		want    []string // flags that must be among those returned; nil: none returned
	}{
		{"v1.34.4", []string{"k8s.io/component-base/version.gitVersion=v1.34.4", "k8s.io/component-base/version.gitMajor=1",
			"k8s.io/component-base/version.gitMinor=34", "k8s.io/client-go/pkg/version.gitVersion=v1.34.4"}},
		{"v1.34", nil},
		{"1.34.4", nil},
		{"v1.34.4-rc.1", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := kubernetesVersionFlags(tt.version)
		if tt.want == nil {
			if got != nil {
				t.Errorf("kubernetesVersionFlags(%q) = %q, want nil", tt.version, got)
			}
			continue
		}
		for _, w := range tt.want {
			i := slices.Index(got, w)
			if i < 1 || got[i-1] != "-X" {
				t.Errorf("kubernetesVersionFlags(%q) = %q, want -X %s among them", tt.version, got, w)
			}
		}
	}
}
