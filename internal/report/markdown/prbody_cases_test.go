package markdown

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// oneWorkload is a plan of shop/web, a Deployment in apps/web.yaml, with
// the given containers.
func oneWorkload(containers ...plan.Container) *plan.Plan {
	return &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true,
		Target:     plan.Target{Kind: "Deployment", Name: "web"},
		Source:     &plan.Source{File: "apps/web.yaml", Changed: true},
		Containers: containers}}}
}

// weekOf is a week of evidence with usage p50, p90 and max.
func weekOf(samples int, p50, p90, max float64) *plan.Evidence {
	ev := &plan.Evidence{Window: "168h0m0s", WindowDays: 7, Samples: samples, Span: "167h55m0s", SpanDays: 7, Percentile: 0.9, HalfLife: "24h0m0s"}
	ev.UsageP50, ev.UsageP90, ev.UsageMax = usageOf(p50, p90, max)
	return ev
}

// TestPullRequestBodyCases checks what a reviewer reads of each kind of
// change: the lines it must hold, and those it must not.
func TestPullRequestBodyCases(t *testing.T) {
	// Memory raised to the OOM floor: three kills at a peak of 498Mi put
	// it at 598Mi, above the 500.5Mi the percentile and buffer give.
	oomFloor := weekOf(168, 380*mib, 452*mib, 498*mib)
	oomFloor.RawValue, oomFloor.BufferPercent, oomFloor.BufferedValue = 455*mib, 10, 500.5*mib
	oomFloor.OOMKilled, oomFloor.OOMKills, oomFloor.OOMFloor, oomFloor.RoundingStep = true, 3, 598*mib, "4Mi"
	// A kill whose floor (178Mi) stays below the buffered 300Mi: the kill
	// is counted, the floor set nothing.
	oomBelow := weekOf(168, 200*mib, 240*mib, 78*mib)
	oomBelow.RawValue, oomBelow.BufferPercent, oomBelow.BufferedValue = 250*mib, 20, 300*mib
	oomBelow.OOMKilled, oomBelow.OOMKills, oomBelow.OOMFloor, oomBelow.RoundingStep = true, 1, 178*mib, "4Mi"
	hpa := "HorizontalPodAutoscaler shop/web scales on cpu utilization (70%)"
	hpaEvidence := weekOf(6048, 0.41, 0.72, 1.8)
	hpaEvidence.HPA = hpa
	// change is a request of res to write, from current ("" for none).
	change := func(res corev1.ResourceName, current, proposed string) plan.Resource {
		r := plan.Resource{Resource: res, Recommended: q(proposed), Changed: true}
		if current != "" {
			r.Current = q(current)
		}
		return r
	}
	tests := []struct {
		name    string
		plan    *plan.Plan
		want    []string
		notWant []string
	}{
		{
			name: "oom kill set the value",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "memory", Current: q("512Mi"), Recommended: q("600Mi"), Changed: true, LiveLimit: q("1Gi"), Evidence: oomFloor},
			}}),
			want: []string{
				"| app | memory | 512Mi | 600Mi | +17.2% | 1Gi, unchanged | 380Mi / 452Mi / 498Mi | 7d: 168 samples over 7d | 3, floor 598Mi set the value |\n",
				"| app | memory | p90, half-life 24h0m0s, 168 samples over 167h55m0s of 168h0m0s | 455Mi | +10% | 501Mi | 598Mi | 4Mi | - |\n",
				"memory +88Mi (512Mi → 600Mi over 1 request)",
			},
		},
		{
			name: "oom kill below the buffered value",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "memory", Current: q("512Mi"), Recommended: q("300Mi"), Changed: true, Evidence: oomBelow},
			}}),
			want:    []string{"| 7d: 168 samples over 7d | 1 |\n", "| 250Mi | +20% | 300Mi | 178Mi | 4Mi | - |\n"},
			notWant: []string{"set the value"},
		},
		{
			name: "hpa holds the cpu request",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), LiveLimit: q("2"), HeldBack: true, Reason: "held back: " + hpa, Evidence: hpaEvidence},
				{Resource: "memory", Current: q("1Gi"), Recommended: q("768Mi"), Changed: true, Evidence: weekOf(168, 590*mib, 640*mib, 702*mib)},
			}}),
			want: []string{
				// Beside the memory it changes, the cpu the HPA holds, with
				// the usage the HPA works with.
				"| app | cpu | 1 | 1 | held back: HPA | 2, unchanged | 410m / 720m / 1800m | 7d: 6048 samples over 7d | - |\n",
				"| app | memory | 1Gi | 768Mi | -25.0% | none |",
				"| shop/web | app | cpu request | 1 | - | HorizontalPodAutoscaler shop/web scales on cpu utilization \\(70%\\) |\n",
				// Only memory counts: the held cpu request stays.
				"per replica:** memory -256Mi (1Gi → 768Mi over 1 request):",
			},
			notWant: []string{"cpu +", "cpu -"},
		},
		{
			name: "cpu up in one container, down in another",
			plan: oneWorkload(
				plan.Container{Name: "app", Resources: []plan.Resource{change(corev1.ResourceCPU, "1", "700m")}},
				plan.Container{Name: "worker", Resources: []plan.Resource{change(corev1.ResourceCPU, "500m", "700m")}},
			),
			want: []string{
				"| app | cpu | 1 | 700m | -30.0% |", "| worker | cpu | 500m | 700m | +40.0% |",
				"**Change in total requests, per replica:** cpu -100m (1500m → 1400m over 2 requests): the proposed minus the current requests, summed over the containers.\n",
			},
			notWant: []string{"memory -", "memory +", "counts from zero"},
		},
		{
			name: "ups and downs that cancel",
			plan: oneWorkload(
				plan.Container{Name: "app", Resources: []plan.Resource{change(corev1.ResourceMemory, "1Gi", "768Mi")}},
				plan.Container{Name: "worker", Resources: []plan.Resource{change(corev1.ResourceMemory, "256Mi", "512Mi"), change(corev1.ResourceCPU, "", "250m")}},
			),
			want: []string{"cpu +250m (none → 250m over 1 request), memory ±0 (1280Mi → 1280Mi over 2 requests)", "A container without a request counts from zero."},
		},
		{
			name:    "a memory request where there was none",
			plan:    oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{change(corev1.ResourceMemory, "", "54Mi"), change(corev1.ResourceCPU, "100m", "72m")}}),
			want:    []string{"cpu -28m (100m → 72m over 1 request), memory +54Mi (none → 54Mi over 1 request)"},
			notWant: []string{"0Gi", "(0 →"},
		},
		{
			name: "a request where only a limit was counts from the limit",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{func() plan.Resource {
				r := change(corev1.ResourceMemory, "", "1Gi")
				limit := resource.MustParse("4Gi")
				r.LiveLimit = &limit
				return r
			}()}}),
			want:    []string{"memory -3Gi (4Gi → 1Gi over 1 request)", "A container with a limit and no request counts from its limit, which Kubernetes requests for it."},
			notWant: []string{"none →", "counts from zero"},
		},
		{
			name: "requests with and without a current value",
			plan: oneWorkload(
				plan.Container{Name: "app", Resources: []plan.Resource{change(corev1.ResourceMemory, "", "54Mi")}},
				plan.Container{Name: "worker", Resources: []plan.Resource{change(corev1.ResourceMemory, "64Mi", "128Mi")}},
			),
			want: []string{"memory +118Mi (64Mi → 182Mi over 2 requests)", "A container without a request counts from zero."},
		},
		{
			name: "a limit that moves with its request",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, LiveLimit: q("1"), CurrentLimit: q("1"), RecommendedLimit: q("500m")},
			}}),
			want: []string{"| app | cpu | 500m | 250m | -50.0% | 1 → 500m (-50.0%, ratio kept) | - | - | - |\n"},
		},
		{
			name: "a limit equal to its request keeps it",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("1"), Changed: true, LiveLimit: q("1"), CurrentLimit: q("1"), RecommendedLimit: q("1")},
			}}),
			want: []string{"| app | cpu | 500m | 1 | +100.0% | 1, unchanged |"},
		},
		{
			name: "limits only",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("2"), Recommended: q("1"), Changed: true, LimitsOnly: true, LiveLimit: q("2")},
			}}),
			want: []string{"| app | cpu limit | 2 | 1 | -50.0% | this row; the request stays |", "per replica:** none, only limits change.\n"},
		},
		{
			name: "a value written as it is",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				change(corev1.ResourceCPU, "500m", "250m"),
				{Resource: "memory", Current: q("256Mi"), Recommended: q("256Mi")},
			}}),
			want: []string{"| app | memory | 256Mi | 256Mi | unchanged | none |"},
		},
		{
			name: "nothing changes",
			plan: oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Reason: "insufficient data: no samples in the window"},
			}}),
			want:    []string{"\nNo request changes.\n", "<details><summary>1 value without a recommendation</summary>\n"},
			notWant: []string{"per replica", "Usage is", "### shop/web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := PullRequestBody(tt.plan)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("body holds %q:\n%s", w, body)
				}
			}
			checkBody(t, body)
		})
	}
}

func TestChangeSetHashFollowsLimits(t *testing.T) {
	limit := func(l string) *plan.Plan {
		return oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
			{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q(l)},
		}})
	}
	if ChangeSetHash(limit("500m")) == ChangeSetHash(limit("600m")) {
		t.Error("the change-set hash does not follow the limit")
	}
}

// TestPullRequestBodyTenantCannotLeaveFoldedSections cuts a body whose
// names a tenant chose to close the folded section and the table they
// stand in, at every length: the job's own lines alone open and close
// sections and tables, wherever the cut falls.
func TestPullRequestBodyTenantCannotLeaveFoldedSections(t *testing.T) {
	breakout := "x |\n\n</details>\n\n# Approved\n\n<details><summary>y</summary>\n\n| a |\n|---|\n"
	rep := manyWorkloads(2)
	for i := range rep.Items {
		it := &rep.Items[i]
		it.Name += breakout
		it.Containers = append([]plan.Container(nil), it.Containers...)
		for j := range it.Containers {
			c := &it.Containers[j]
			c.Name += breakout
			c.Resources = append([]plan.Resource(nil), c.Resources...)
			for k := range c.Resources {
				if r := &c.Resources[k]; r.Evidence != nil {
					ev := *r.Evidence
					ev.Capped = []string{breakout}
					r.Evidence = &ev
				} else {
					r.Reason = breakout
				}
			}
		}
	}
	whole := PullRequestBody(rep)
	if n := strings.Count(whole, "</details>"); n != strings.Count(whole, "\n</details>\n") || n != strings.Count(whole, "<details>") {
		t.Fatalf("a tenant's name opened or closed a folded section:\n%s", whole)
	}
	for limit := 400; limit <= len(whole); limit += 7 {
		body := pullRequestBody(rep, limit)
		checkBody(t, body)
		if t.Failed() {
			t.Fatalf("limit %d: body\n%s", limit, body)
		}
	}
}
