package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestNothingRendered checks that a run whose every value to write failed
// to render is told from one that had nothing to write or wrote something.
func TestNothingRendered(t *testing.T) {
	v := resource.MustParse("100m")
	writes := []Container{{Name: "app", Resources: []Resource{{Resource: "cpu", Request: &v}}}}
	held := []Container{{Name: "app", Resources: []Resource{{Resource: "cpu", HeldBack: true}}}}
	failed := &Source{Error: "target not found"}
	for _, tc := range []struct {
		name  string
		plan  Plan
		wants bool
	}{
		{"nothing to write", Plan{Items: []Item{{Valid: true, Containers: held}}}, false},
		{"every value failed", Plan{Items: []Item{
			{Valid: true, Containers: writes, Source: failed},
			{Valid: true, Containers: writes, Source: &Source{Error: "ambiguous target"}},
			{Valid: false, Error: &Error{Code: "x"}},
			{Valid: true, Containers: held},
		}}, true},
		{"one rendered", Plan{Items: []Item{
			{Valid: true, Containers: writes, Source: failed},
			{Valid: true, Containers: writes, Source: &Source{File: "web.yaml"}},
		}}, false},
		{"already up to date", Plan{Items: []Item{{Valid: true, Containers: writes, Source: &Source{File: "web.yaml"}}}}, false},
		{"cut short", Plan{Interrupted: "run deadline", Items: []Item{{Valid: true, Containers: writes, Source: failed}}}, false},
		{"repository not reached", Plan{Items: []Item{{Valid: true, Containers: writes}}}, false},
	} {
		if got := tc.plan.NothingRendered(); got != tc.wants {
			t.Errorf("%s: NothingRendered = %v, want %v", tc.name, got, tc.wants)
		}
	}
}
