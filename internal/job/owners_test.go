package job

import (
	"slices"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestReviewersOf checks who reviews a pull request: the run's, the
// CODEOWNERS', the items' own, once each, and nothing that is not a name.
func TestReviewersOf(t *testing.T) {
	items := []plan.Item{
		{Annotations: map[string]string{AnnotationReviewers: "@org/payments, bob"}},
		{Annotations: map[string]string{AnnotationReviewers: "@Alice @evil<script> http://x.example.com a,b,c,d,e,f,g"}},
		{Labels: map[string]string{AnnotationReviewers: "dana"}, NamespaceAnnotations: map[string]string{AnnotationReviewers: "@org/web"},
			NamespaceLabels: map[string]string{AnnotationReviewers: "erin"}},
		{},
	}
	got := reviewersOf([]string{"alice"}, []string{"@org/sre", "@alice"}, items)
	// The second item names five before its cap: two are not names, one
	// is alice again.
	want := []string{"alice", "@org/sre", "@org/payments", "bob", "a", "b", "dana", "@org/web", "erin"}
	if !slices.Equal(got, want) {
		t.Errorf("reviewers %q, want %q", got, want)
	}
	for _, r := range got {
		if strings.ContainsAny(r, "<>:") {
			t.Errorf("reviewer %q is not a name", r)
		}
	}
}
