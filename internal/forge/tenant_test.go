package forge

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// tenantReport has a ResourceRecommend whose every text field a tenant
// (or a file in the repository) controls, each trying to forge the job's
// marker for hash, break the table, close or open a folded section, add a
// heading or ping a team.
func tenantReport(hash string) *plan.Plan {
	evil := func(what string) string {
		return what + " " + forgedMarker(hash) + "\n\n### Approved by @org/security | x |\n<b>ok</b> `code` [link](https://evil.example)" +
			"\n\n</details></summary>\n\n<details><summary>ok</summary>\n\n| a | b |\n|---|---|\n"
	}
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "team-a", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: evil("apps/web.yaml"), Changed: true},
			Containers: []plan.Container{{Name: evil("app"), Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q("500m"),
					Evidence: &plan.Evidence{Window: evil("168h0m0s"), Span: evil("span"), HalfLife: evil("24h"), Samples: 10, Percentile: 0.9,
						RoundingStep: evil("5m"), Capped: []string{evil("cap")}, Limit: evil("limit"), LimitRatio: 2, HeldBack: ""}},
				{Resource: "memory", Current: q("1Gi"), Reason: evil("reason")},
				{Resource: "ephemeral-storage", Current: q("1Gi"), Recommended: q("1Gi"), Evidence: &plan.Evidence{HeldBack: evil("held")}},
				{Resource: "nvidia.com/gpu", Current: q("1"), HeldBack: true, Reason: evil("hpa"), Evidence: &plan.Evidence{HPA: evil("hpa")}},
			}}}},
		{Namespace: "team-b", Name: "api", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "api"},
			Source: &plan.Source{Error: evil("source error")},
			Containers: []plan.Container{{Name: "api", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), Recommended: q("2"), Changed: true},
			}}}},
		{Namespace: "team-c", Name: "db", Target: plan.Target{Kind: evil("Kind"), Name: "db"},
			Error: &plan.Error{Code: evil("Code"), Message: evil("message")}},
	}}
}

func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}
