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

func TestPullRequestBodyFlagsARegression(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	effective := time.Date(2026, 11, 22, 1, 16, 0, 0, time.UTC)
	peak, throttled := float64(240<<20), 0.4
	watch := func(url string) plan.Watch {
		return plan.Watch{Container: "app", Resource: corev1.ResourceMemory, From: q("512Mi"), To: *q("256Mi"),
			Commit: "d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e", CommitURL: url, Effective: &effective, State: plan.WatchRegressed,
			Before:     &plan.Observed{From: effective.Add(-72 * time.Hour), To: effective},
			After:      &plan.Observed{From: effective, To: effective.Add(48 * time.Hour), OOMKills: 2, Restarts: 2, Throttled: &throttled, MemoryPeak: &peak},
			Regression: "2 OOM kills after, 0 before", Correction: q("512Mi")}
	}
	item := func(name string, w plan.Watch) plan.Item {
		return plan.Item{Namespace: "shop", Name: name, Target: plan.Target{Kind: "Deployment", Name: "web"}, Valid: true, Watches: []plan.Watch{w},
			Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: corev1.ResourceMemory, Current: q("256Mi"),
				Recommended: q("512Mi"), Request: q("512Mi"), Changed: true, Correction: true}}}}}
	}
	for _, tc := range []struct {
		name       string
		item       plan.Item
		want, lack []string
	}{
		{name: "linked", item: item("web", watch("https://github.com/acme/gitops/commit/d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e")),
			want: []string{
				"| shop/web | app | memory 512Mi → 256Mi | [`d29e36b61cfb`](https://github.com/acme/gitops/commit/d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e) | 2026-11-22 01:16 UTC | 2 OOM kills after, 0 before | 512Mi |",
				"| shop/web | app | before (3d) | 0 | 0 | - | - |",
				"| shop/web | app | after (2d) | 2 | 2 | 40% | 240Mi |",
			}},
		{name: "a URL that could end the link is not a link", item: item("web", watch("https://x/a) [click](https://evil")),
			want: []string{"| `d29e36b61cfb` |"}, lack: []string{"evil"}},
		{name: "a hostile name stays text", item: item("web|<!-- x -->", watch("")),
			want: []string{"| shop/web\\|&lt;\\!-- x --&gt; | app |"}, lack: []string{"<!-- x -->"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := PullRequestBody(&plan.Plan{Items: []plan.Item{tc.item}})
			if flag, rest := strings.Index(body, "\n## Regression\n"), strings.Index(body, "This pull request sets"); flag < 0 || flag > rest {
				t.Errorf("the body does not open with the regression flag:\n%s", body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(body, l) {
					t.Errorf("body holds %q:\n%s", l, body)
				}
			}
		})
	}
	if body := PullRequestBody(&plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true}}}); strings.Contains(body, "Regression") {
		t.Errorf("a body without regressions is flagged:\n%s", body)
	}
}

// TestPullRequestBodyRegressionsBounded checks that a body with more
// regressions than fit stays under the limit, opens with the flag, and is
// cut after a whole row.
func TestPullRequestBodyRegressionsBounded(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	effective := time.Date(2026, 11, 22, 1, 16, 0, 0, time.UTC)
	var items []plan.Item
	for i := range 400 {
		items = append(items, plan.Item{Namespace: "shop", Name: fmt.Sprintf("web-%03d", i), Target: plan.Target{Kind: "Deployment", Name: "web"}, Valid: true,
			Watches: []plan.Watch{{Container: "app", Resource: corev1.ResourceMemory, From: q("512Mi"), To: *q("256Mi"),
				Commit: "d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e", Effective: &effective, State: plan.WatchRegressed,
				Before:     &plan.Observed{From: effective.Add(-72 * time.Hour), To: effective},
				After:      &plan.Observed{From: effective, To: effective.Add(72 * time.Hour), OOMKills: 3},
				Regression: "3 OOM kills after, 0 before", Correction: q("512Mi")}}})
	}
	for _, limit := range []int{4000, 20000} {
		body := pullRequestBody(&plan.Plan{Items: items}, limit)
		if len(body) > limit {
			t.Errorf("limit %d: body of %d characters", limit, len(body))
		}
		if !strings.Contains(body, "\n## Regression\n") || !strings.HasSuffix(body, truncatedNote) {
			t.Errorf("limit %d: body lacks the flag or the note that it was cut:\n%s", limit, body)
		}
		cut := strings.TrimSuffix(body, truncatedNote)
		if last := cut[strings.LastIndex(strings.TrimSuffix(cut, "\n"), "\n")+1:]; !strings.HasSuffix(last, "|\n") && last != "\n" {
			t.Errorf("limit %d: body cut within a row: %q", limit, last)
		}
	}
}
