package plan

import (
	"strings"
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

// TestAllResources checks that an item's resources come in order, each
// the item's own, so that setting one through it sets the item's.
func TestAllResources(t *testing.T) {
	it := Item{Containers: []Container{
		{Name: "app", Resources: []Resource{{Resource: corev1.ResourceCPU}, {Resource: corev1.ResourceMemory}}},
		{Name: "empty"},
		{Name: "sidecar", Resources: []Resource{{Resource: corev1.ResourceCPU}}},
	}}
	var got []string
	for r := range it.AllResources() {
		got = append(got, string(r.Resource))
		r.Reason = "seen"
	}
	if want := "cpu memory cpu"; strings.Join(got, " ") != want {
		t.Errorf("resources %v, want %s", got, want)
	}
	if r := it.Containers[2].Resources[0]; r.Reason != "seen" {
		t.Errorf("sidecar cpu reason %q: set through AllResources, it did not reach the item", r.Reason)
	}
}
