package report

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestTableOfARunThatRenderedNothing checks that a run whose every value
// failed to render does not say its branch is up to date.
func TestTableOfARunThatRenderedNothing(t *testing.T) {
	v := resource.MustParse("100m")
	rep := plan.Plan{Git: &plan.Git{Branch: "b"}, Items: []plan.Item{{
		Namespace: "shop", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
		Source:     &plan.Source{Error: "target not found: Deployment.apps shop/web under ."},
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: "cpu", Recommended: &v, Request: &v, Changed: true}}}},
	}}}
	var b bytes.Buffer
	if err := Write(&b, &rep, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "nothing rendered: no target's values could be written to the repository") {
		t.Errorf("table does not say nothing was rendered:\n%s", b.String())
	}
	if strings.Contains(b.String(), "up to date") {
		t.Errorf("table says the branch is up to date:\n%s", b.String())
	}
}
