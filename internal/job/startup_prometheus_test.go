//go:build integration

package job

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	synthetic "github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestRunFloorsMemoryAtTheStartupPeak runs on a real Prometheus holding a
// week of namespace shop, three Deployments of two pods rolled out three
// times, at 0.1 cores and a steady 200Mi: jvm's pods reach 700Mi in the
// first 2 minutes after each start, batch's reach 900Mi for 10 minutes an
// hour after, web's do neither. jvm's memory is raised to its startup
// peak, with the evidence; web's and batch's stay at 200Mi's p90 plus the
// buffer, their starts at 200Mi, and so does jvm's with the startup window
// off: the hourly peaks hold 700Mi or 900Mi too rarely to move the p90.
// web's p90 is its highest sample, 200Mi (the bucket ends above it): 260Mi;
// batch's and jvm's peaks reach past the bucket's end, 205.79Mi: 268Mi.
func TestRunFloorsMemoryAtTheStartupPeak(t *testing.T) {
	const mib = 1 << 20
	now := time.Now().UTC().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	var containers []synthetic.Container
	for _, name := range []string{"jvm", "web", "batch"} {
		for _, span := range synthetic.Rollouts(name, 2, 3, start, now) {
			for _, pod := range span.Pods {
				c := synthetic.Container{Namespace: "shop", Pod: pod, Container: "app", Start: span.Start, End: span.End,
					CPU: synthetic.Constant(0.1), Memory: synthetic.Constant(200 * mib)}
				switch name {
				case "jvm":
					c = synthetic.WithStartupSpike(c, 700*mib, 2*time.Minute)
				case "batch":
					// The spike of a start an hour later, started now.
					c.Start = span.Start.Add(time.Hour)
					c = synthetic.WithStartupSpike(c, 900*mib, 10*time.Minute)
					c.Start = span.Start
				}
				containers = append(containers, c)
			}
		}
	}
	series := append(synthetic.Series(containers, 30*time.Second), synthetic.StartTimes(containers, 30*time.Second)...)
	promAPI := testbedtest.Prometheus(t, series)

	item := func(name string) collect.Item {
		return collect.Item{Namespace: "shop", Name: name,
			Target: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
				Containers: []collect.Container{{Name: "app"}}},
			Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
				{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}}},
		}
	}
	run := func(opts ...usage.Option) (*plan.Plan, map[string]plan.Resource, int) {
		t.Helper()
		promAPI.Queries, promAPI.Listings = 0, 0
		opts = append(opts, usage.WithClock(func() time.Time { return now }))
		rep, err := Run(t.Context(), Config{DryRun: true}, itemsCollector{item("jvm"), item("web"), item("batch")}, usage.NewReader(promAPI, opts...), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		memory := map[string]plan.Resource{}
		for _, e := range rep.Items {
			memory[e.Name] = e.Containers[0].Resources[1]
		}
		return rep, memory, promAPI.Queries + promAPI.Listings
	}

	rep, memory, requests := run()
	// Ownership (a listing), CPU, memory peaks, OOM kills and the startup
	// peaks: one query more than without them, for all three workloads.
	if requests != 5 {
		t.Errorf("a run made %d requests, want 5", requests)
	}
	jvm := memory["jvm"]
	if jvm.Recommended == nil || jvm.Recommended.Value() < 700*mib || jvm.Evidence == nil ||
		jvm.Evidence.StartupPeak != 700*mib || !jvm.Evidence.StartupFloor {
		t.Errorf("jvm memory = %s, evidence %+v; want at least 700Mi, set by the 700Mi startup peak", quantity(jvm.Recommended), jvm.Evidence)
	}
	t.Logf("memory: jvm %s, web %s, batch %s, in %d requests", quantity(jvm.Recommended), quantity(memory["web"].Recommended), quantity(memory["batch"].Recommended), requests)
	steady := map[string]string{"web": "260Mi", "batch": "268Mi", "jvm": "268Mi"}
	for _, name := range []string{"web", "batch"} {
		r := memory[name]
		if quantity(r.Recommended) != steady[name] || r.Evidence == nil || r.Evidence.StartupFloor || r.Evidence.StartupPeak != 200*mib {
			t.Errorf("%s memory = %s, evidence %+v; want %s, its starts at its steady 200Mi", name, quantity(r.Recommended), r.Evidence, steady[name])
		}
	}
	if body := markdown.PullRequestBody(rep); !strings.Contains(body, "| 0, startup peak 700Mi set the value |") || strings.Count(body, "startup peak") != 2 {
		t.Errorf("the pull request body does not show jvm's startup peak, once in the summary and once in the evidence:\n%s", body)
	}

	// The startup window off: one query fewer, and jvm's memory as web's.
	_, memory, requests = run(usage.WithStartupWindow(0))
	if requests != 4 {
		t.Errorf("a run without the startup window made %d requests, want 4", requests)
	}
	for _, name := range []string{"jvm", "web", "batch"} {
		if r := memory[name]; quantity(r.Recommended) != steady[name] || r.Evidence == nil || r.Evidence.StartupPeak != 0 {
			t.Errorf("%s memory without the startup window = %s, evidence %+v; want %s and no startup peak", name, quantity(r.Recommended), r.Evidence, steady[name])
		}
	}
}

// quantity shows q, or "" for none.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}
