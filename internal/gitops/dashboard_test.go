package gitops

import (
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestDashboardBody checks that the dashboard lists each kind of thing a
// person must act on, under its heading, with tenants' text escaped.
func TestDashboardBody(t *testing.T) {
	p := &plan.Plan{
		Groups: []plan.Group{
			{Name: "namespace/shop", Git: &plan.Git{PullRequest: &plan.PullRequest{Number: 7, URL: "https://forge.example.com/pr/7", Action: plan.PRCreated}}},
			{Name: "namespace/blog", Waiting: "pr-limit 1 reached", Savings: 1.25},
			{Name: "namespace/pay", Held: "#5 closed on 2026-11-20; values within 10%"},
			{Name: "namespace/gone", Git: &plan.Git{PullRequest: &plan.PullRequest{Number: 3, Action: plan.PRClosed}}},
		},
		Items: []plan.Item{
			{Namespace: "shop", Name: "bad", Target: plan.Target{Kind: "Deployment", Name: "x"}, Error: &plan.Error{Code: "WorkloadNotFound", Message: "no <b>such</b> workload\n@everyone"}},
			{Namespace: "shop", Name: "web", Target: plan.Target{Kind: "Deployment", Name: "web"}, Valid: true, Source: &plan.Source{Error: "target not found"},
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: "memory", Reason: "too little history"}}}}},
		},
	}
	body := DashboardBody(p, "recommend-job")
	if !strings.HasPrefix(body, DashboardMarker("recommend-job")+"\n") {
		t.Errorf("body does not start with the marker:\n%s", body)
	}
	for _, want := range []string{
		"### Open pull requests\n\n| group | pull request |\n| --- | --- |\n| namespace/shop | [#7](https://forge.example.com/pr/7) |",
		"| namespace/blog | 1.25 | pr-limit 1 reached |",
		"5 closed on 2026-11-20; values within 10% |",
		"| shop/web | Deployment web | target not found |",
		"`WorkloadNotFound`",
		"| shop/web | app | memory | too little history |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "namespace/gone") {
		t.Errorf("a closed pull request is listed as open:\n%s", body)
	}
	if strings.Contains(body, "<b>") || strings.Contains(body, "\n@everyone") {
		t.Errorf("a tenant's text is not escaped:\n%s", body)
	}
}
