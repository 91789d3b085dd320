//go:build integration

package job

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/testbed"
	synthetic "github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestRunQueriesPerNamespaceWhateverTheWindows runs on a real Prometheus
// holding 11 days of namespace shop: web and queue at constant usage, and
// worker and batch alike, 1 core until 4 days ago and 0.2 since, killed for
// memory 5 days ago.
func TestRunQueriesPerNamespaceWhateverTheWindows(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Minute)
	start := now.Add(-11 * 24 * time.Hour)
	var containers []synthetic.Container
	var series []testbed.Series
	for _, w := range []struct {
		name string
		cpu  func(time.Time) float64
		oom  bool
	}{
		{name: "web", cpu: synthetic.Constant(0.1)},
		{name: "queue", cpu: synthetic.Constant(0.3)},
		{name: "worker", cpu: synthetic.Step(1, 0.2, now.Add(-4*24*time.Hour)), oom: true},
		{name: "batch", cpu: synthetic.Step(1, 0.2, now.Add(-4*24*time.Hour)), oom: true},
	} {
		pod := synthetic.Rollouts(w.name, 1, 1, start, now)[0].Pods[0]
		containers = append(containers, synthetic.Container{Namespace: "shop", Pod: pod, Container: "app",
			Start: start, End: now, CPU: w.cpu, Memory: synthetic.Constant(200 << 20)})
		if w.oom {
			series = append(series, synthetic.OOMKill("shop", pod, "app", start, now.Add(-5*24*time.Hour), now, time.Minute)...)
		}
	}
	series = append(series, synthetic.Series(containers, time.Minute)...)
	promAPI := testbedtest.Prometheus(t, series)
	clock := usage.WithClock(func() time.Time { return now })

	item := func(name, extensions string) collect.Item {
		it := collect.Item{Namespace: "shop", Name: name,
			Target: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
				Containers: []collect.Container{{Name: "app"}}},
			Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
				{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}}},
		}
		// As the collector does: an invalid extension makes the item
		// invalid.
		it.Extensions, it.Invalid = collect.ParseExtensions(&runtime.RawExtension{Raw: []byte(extensions)})
		return it
	}
	web := item("web", `{}`)
	queue := item("queue", `{"window": "48h"}`)
	worker := item("worker", `{"window": "72h"}`)
	batch := item("batch", `{"window": "240h"}`)
	// The longest time.Duration, which once made 14,214 queries.
	huge := item("huge", `{"window": "2562047h"}`)

	// run runs a dry run of items and returns its entries by name and the
	// queries it made.
	run := func(items ...collect.Item) (map[string]plan.Item, int) {
		t.Helper()
		promAPI.Queries, promAPI.Listings = 0, 0
		rep, err := Run(t.Context(), Config{DryRun: true}, itemsCollector(items), usage.NewReader(promAPI, clock), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		entries := map[string]plan.Item{}
		for _, e := range rep.Items {
			entries[e.Name] = e
		}
		return entries, promAPI.Queries + promAPI.Listings
	}

	// (a) One item on the run's week: ownership (a series listing), CPU
	// (2,017 points), memory peaks, OOM kills, startup peaks.
	_, one := run(web)
	if one != 5 {
		t.Errorf("a run of one ResourceRecommend made %d requests (queries and series listings), want 5", one)
	}

	// (b) Four windows in one namespace cost one read of the longest.
	entries, four := run(web, queue, worker, batch)
	promAPI.Queries, promAPI.Listings = 0, 0
	refs := []usage.WorkloadRef{recommend.WantOf(web).Ref, recommend.WantOf(queue).Ref, recommend.WantOf(worker).Ref, recommend.WantOf(batch).Ref}
	if _, err := usage.NewReader(promAPI, clock, usage.WithWindow(240*time.Hour)).Read(t.Context(), "shop", refs); err != nil {
		t.Fatal(err)
	}
	// 10 days at 5m are 2,881 points: one CPU range.
	if longest := promAPI.Queries + promAPI.Listings; four != longest || four != 5 {
		t.Errorf("a run of windows 7d, 2d, 3d and 10d made %d requests, want 5, those of one read of 10 days (%d)", four, longest)
	}

	// Each item gets what it would have got alone: worker's 3 days are cut
	// from batch's 10, and web's week, on the run's own window, too.
	for _, it := range []collect.Item{web, queue, worker, batch} {
		alone, _ := run(it)
		if diff := cmp.Diff(alone[it.Name], entries[it.Name], cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("%s read with others differs from %s read alone (-alone +with others):\n%s", it.Name, it.Name, diff)
		}
	}
	// What the cut changes: 3 days hold neither the core nor the kill. 0.2
	// cores x 1.3 -> 260m; 200Mi x 1.3 -> 260Mi (their buckets end above
	// every sample). Over 10 days the core weighs enough to set p90, its
	// bucket ending above the 1 core sampled: x 1.3 -> 1300m, and the kill
	// raises memory to 200Mi + 100Mi.
	for name, want := range map[string][2]string{"worker": {"260m", "260Mi"}, "batch": {"1300m", "300Mi"}} {
		res := entries[name].Containers[0].Resources
		if res[0].Recommended.String() != want[0] || res[1].Recommended.String() != want[1] {
			t.Errorf("%s = cpu %s memory %s, want %s %s", name, res[0].Recommended, res[1].Recommended, want[0], want[1])
		}
	}
	if ev := entries["worker"].Containers[0].Resources[1].Evidence; ev == nil || ev.OOMKilled || ev.Window != "72h0m0s" {
		t.Errorf("worker memory evidence = %+v, want 72h without the kill of 5 days ago", ev)
	}

	// (c) A window of the longest duration is invalid and costs nothing.
	entries, withHuge := run(web, huge)
	if e := entries["huge"].Error; e == nil || e.Code != collect.CodeExtensionsInvalid {
		t.Errorf("huge window: error %+v, want %s", e, collect.CodeExtensionsInvalid)
	}
	if withHuge != one {
		t.Errorf("a run with a window of 2562047h made %d queries, want %d as without it", withHuge, one)
	}
}
