package markdown

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

// TestDashboardWatches checks the sections of the job's merged changes:
// each change under the heading of its state, a regression with the pull
// request that corrects it, and tenants' text escaped.
func TestDashboardWatches(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	effective := time.Date(2026, 11, 22, 1, 16, 0, 0, time.UTC)
	watch := func(state, from, to string) plan.Watch {
		w := plan.Watch{Container: "app", Resource: corev1.ResourceMemory, From: q(from), To: *q(to), State: state,
			Commit: "d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e", CommitURL: "https://forge.example.com/acme/gitops/commit/d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e"}
		if state != plan.WatchPending {
			w.Effective = &effective
		}
		return w
	}
	regressed := watch(plan.WatchRegressed, "512Mi", "256Mi")
	regressed.Regression, regressed.Correction = "2 OOM kills after, 0 before", q("512Mi")
	link := "[`d29e36b61cfb`](https://forge.example.com/acme/gitops/commit/d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e)"
	tests := []struct {
		name   string
		plan   *plan.Plan
		want   []string
		lack   []string
		titled map[string]string // section title to a row it must hold, "" for none
	}{
		{name: "each state under its heading",
			plan: &plan.Plan{Items: []plan.Item{
				{Namespace: "shop", Name: "api", Valid: true, Watches: []plan.Watch{
					watch(plan.WatchWatching, "1Gi", "768Mi"), watch(plan.WatchPending, "2Gi", "1Gi"), watch(plan.WatchVerified, "4Gi", "2Gi"), watch(plan.WatchSuperseded, "8Gi", "4Gi")}},
				{Namespace: "shop", Name: "web", Valid: true, Group: "regression/shop/web", Watches: []plan.Watch{regressed}},
			}, Groups: []plan.Group{{Name: "regression/shop/web", Git: &plan.Git{PullRequest: &plan.PullRequest{Number: 9, URL: "https://forge.example.com/pr/9", Action: plan.PRCreated}}}}},
			titled: map[string]string{
				"Regressed changes": "| shop/web | app | memory 512Mi → 256Mi | " + link + " | 2 OOM kills after, 0 before | 512Mi | [#9](https://forge.example.com/pr/9) (`regression/shop/web`) |",
				"Changes under watch": "| shop/api | app | memory 1Gi → 768Mi | " + link + " | watching | 2026-11-22 01:16 UTC |\n" +
					"| shop/api | app | memory 2Gi → 1Gi | " + link + " | pending | - |",
				"Verified changes": "| shop/api | app | memory 4Gi → 2Gi | " + link + " | 2026-11-22 01:16 UTC |",
			},
			lack: []string{"8Gi", "superseded"}},
		{name: "a regression whose pull request is not open yet names its group",
			plan:   &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true, Group: "regression/shop/web", Watches: []plan.Watch{regressed}}}},
			titled: map[string]string{"Regressed changes": "| 512Mi | `regression/shop/web` |", "Changes under watch": "", "Verified changes": ""}},
		{name: "a tenant's text is escaped",
			plan: &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web|<!-- x -->", Valid: true, Group: "regression/shop/web|<!-- x -->",
				Watches: []plan.Watch{func() plan.Watch {
					w := regressed
					w.Container = "app\n@everyone"
					w.CommitURL = "https://x/a) [click](https://evil"
					return w
				}()}}}},
			want: []string{"| shop/web\\|&lt;\\!-- x --&gt; | app @\u2060everyone | memory 512Mi → 256Mi | `d29e36b61cfb` |"},
			lack: []string{"<!-- x", "evil", "\n@everyone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := DashboardBody(tt.plan, "recommend-job")
			for title, want := range tt.titled {
				at := strings.Index(body, "\n### "+title+"\n")
				if at < 0 {
					t.Errorf("body lacks the section %q:\n%s", title, body)
					continue
				}
				sec := body[at+1:]
				if end := strings.Index(sec[1:], "\n### "); end >= 0 {
					sec = sec[:end+1]
				}
				if want == "" {
					want = "None."
				}
				if !strings.Contains(sec, want) {
					t.Errorf("section %q lacks %q:\n%s", title, want, sec)
				}
			}
			for _, want := range tt.want {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %q:\n%s", want, body)
				}
			}
			for _, lack := range tt.lack {
				if strings.Contains(body, lack) {
					t.Errorf("body holds %q:\n%s", lack, body)
				}
			}
		})
	}
}

// TestDashboardBodyIsBounded fills every section with long tenant text:
// the body stays within MaxBodyLength, each section still shows, and says
// how many rows did not fit.
func TestDashboardBodyIsBounded(t *testing.T) {
	long := strings.Repeat("why <x> ", 400)
	p := &plan.Plan{}
	for i := range 400 {
		p.Groups = append(p.Groups, plan.Group{Name: fmt.Sprintf("namespace/held-%d", i), Held: long})
		p.Items = append(p.Items,
			plan.Item{Namespace: "shop", Name: fmt.Sprintf("bad-%d", i), Target: plan.Target{Kind: "Deployment", Name: "x"}, Error: &plan.Error{Code: "WorkloadNotFound", Message: long}},
			plan.Item{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Target: plan.Target{Kind: "Deployment", Name: "web"}, Valid: true, Source: &plan.Source{Error: long},
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: "memory", Reason: long}}}}})
	}
	body := DashboardBody(p, "recommend-job")
	if len(body) > MaxBodyLength {
		t.Errorf("body is %d bytes, over %d", len(body), MaxBodyLength)
	}
	for _, title := range []string{"### Held by a closed pull request", "### Not rendered", "### Invalid ResourceRecommends", "### Not enough data", "### Verified changes"} {
		if !strings.Contains(body, title) {
			t.Errorf("body lacks the section %q", title)
		}
	}
	if n := strings.Count(body, " more.\n"); n != 4 {
		t.Errorf("%d sections say how many rows did not fit, want 4:\n%s", n, body[len(body)-2000:])
	}
	if strings.Contains(body, strings.Repeat("why &lt;x&gt; ", 80)) {
		t.Error("a reason is shown whole, not cut")
	}
}
