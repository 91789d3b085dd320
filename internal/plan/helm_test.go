package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValuesKeys checks that a container's values keys are found by the
// request or limit of a resource, and that one never stands for the other.
func TestValuesKeys(t *testing.T) {
	c := Container{Name: "web", ValuesKeys: map[string]string{
		"requests.cpu":    "web.resources.requests.cpu",
		"limits.memory":   "memoryLimit",
		"requests.memory": "memoryRequest",
	}}
	for _, tc := range []struct {
		name        string
		resource    corev1.ResourceName
		limit       bool
		want        string
		withoutHelm bool
	}{
		{name: "request at a path", resource: corev1.ResourceCPU, want: "web.resources.requests.cpu"},
		{name: "no limit key for a request's resource", resource: corev1.ResourceCPU, limit: true, want: ""},
		{name: "request at a scalar", resource: corev1.ResourceMemory, want: "memoryRequest"},
		{name: "limit at a scalar", resource: corev1.ResourceMemory, limit: true, want: "memoryLimit"},
		{name: "resource not written", resource: corev1.ResourceEphemeralStorage, want: ""},
		{name: "container not through Helm", resource: corev1.ResourceCPU, want: "", withoutHelm: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			if tc.withoutHelm {
				c.ValuesKeys = nil
			}
			got := c.RequestKey(tc.resource)
			if tc.limit {
				got = c.LimitKey(tc.resource)
			}
			if got != tc.want {
				t.Errorf("key of %s (limit %v) = %q, want %q", tc.resource, tc.limit, got, tc.want)
			}
		})
	}
}
