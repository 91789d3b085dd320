package job

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	synthetic "github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestWarmEqualsCold runs the job's history stage on the same samples
// three times: cold at t1, saving its checkpoint; warm at t2, 27 hours
// later, from that checkpoint; and cold at t2 with no checkpoint. The warm
// plan is the cold one at t2, every value and every figure of the
// evidence (samples, span, usage, OOM kills, startup peak), for CPU and
// memory alike, while the warm run reads a fraction of memory's points.
// Both runs are off the hour, so memory's peaks (on the hour, or on 7
// hours) start before CPU's window.
func TestWarmEqualsCold(t *testing.T) {
	t1 := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	t2 := t1.Add(27*time.Hour + 11*time.Minute)
	start := t1.Add(-9 * 24 * time.Hour)
	const mib = 1 << 20
	memory := func(t time.Time) float64 { return float64(300*mib + 40*mib*(t.Hour()%5) + mib*(t.Minute()%7)) }

	for _, tc := range []struct {
		name string
		// rollouts of web over the samples, peakInterval memory's.
		rollouts     int
		peakInterval time.Duration
		// more adds to the containers and series; check tells the case
		// is in the plans (cold at t1, cold at t2).
		more  func(cs []synthetic.Container) ([]synthetic.Container, []testbed.Series)
		check func(t *testing.T, cold1, cold2 plan.Item)
	}{{
		name: "a day leaving the window", rollouts: 1, peakInterval: time.Hour,
		more: func(cs []synthetic.Container) ([]synthetic.Container, []testbed.Series) {
			at := t1.Add(-6*24*time.Hour - 12*time.Hour)
			for i := range cs {
				steadyCPU, steadyMemory := cs[i].CPU, cs[i].Memory
				cs[i].CPU = func(t time.Time) float64 {
					if !t.Before(at) && t.Before(at.Add(2*time.Hour)) {
						return 3
					}
					return steadyCPU(t)
				}
				cs[i].Memory = func(t time.Time) float64 {
					if !t.Before(at) && t.Before(at.Add(2*time.Hour)) {
						return 2048 * mib
					}
					return steadyMemory(t)
				}
			}
			return cs, nil
		},
		check: func(t *testing.T, cold1, cold2 plan.Item) {
			if got := *evidence(t, cold1, corev1.ResourceMemory).UsageMax; got < 2048*mib {
				t.Errorf("cold at t1: memory max %v, want the spike of the day that leaves", got)
			}
			if got := *evidence(t, cold2, corev1.ResourceMemory).UsageMax; got >= 2048*mib {
				t.Errorf("cold at t2: memory max %v, want the spike gone", got)
			}
		},
	}, {
		name: "an OOM kill in the kept part", rollouts: 1, peakInterval: time.Hour,
		more: func(cs []synthetic.Container) ([]synthetic.Container, []testbed.Series) {
			return cs, synthetic.OOMKill("shop", cs[0].Pod, "app", start, t1.Add(-3*24*time.Hour+17*time.Minute), t2, time.Minute)
		},
		check: func(t *testing.T, cold1, cold2 plan.Item) {
			for _, it := range []plan.Item{cold1, cold2} {
				if ev := evidence(t, it, corev1.ResourceMemory); ev.OOMKills == 0 {
					t.Errorf("cold: no OOM kill in the evidence %+v", ev)
				}
			}
		},
	}, {
		name: "OOM kills of both pods in one hour", rollouts: 1, peakInterval: time.Hour,
		more: func(cs []synthetic.Container) ([]synthetic.Container, []testbed.Series) {
			at := t1.Add(-2*24*time.Hour + 33*time.Minute) // 11:10, both kills in the hour to noon
			return cs, append(synthetic.OOMKill("shop", cs[0].Pod, "app", start, at, t2, time.Minute),
				synthetic.OOMKill("shop", cs[1].Pod, "app", start, at.Add(9*time.Minute), t2, time.Minute)...)
		},
		check: func(t *testing.T, cold1, cold2 plan.Item) {
			for _, it := range []plan.Item{cold1, cold2} {
				if ev := evidence(t, it, corev1.ResourceMemory); ev.OOMKills != 2 {
					t.Errorf("cold: %d OOM kills in the evidence, want both pods'", ev.OOMKills)
				}
			}
		},
	}, {
		name: "a startup peak in the kept part", rollouts: 3, peakInterval: time.Hour,
		more: func(cs []synthetic.Container) ([]synthetic.Container, []testbed.Series) {
			for i := range cs {
				cs[i] = synthetic.WithStartupSpike(cs[i], 1500*mib, 3*time.Minute)
			}
			return cs, nil
		},
		check: func(t *testing.T, cold1, cold2 plan.Item) {
			// The rollouts start 9, 6 and 3 days before t1: the last is in
			// both windows.
			for _, it := range []plan.Item{cold1, cold2} {
				if ev := evidence(t, it, corev1.ResourceMemory); ev.StartupPeak < 1500*mib {
					t.Errorf("cold: startup peak %v, want the rollout's", ev.StartupPeak)
				}
			}
		},
	}, {
		name: "memory peaks of 7h, read from further back than CPU", rollouts: 1, peakInterval: 7 * time.Hour,
		check: func(t *testing.T, cold1, cold2 plan.Item) {
			// 168h / 7h steps back from the last whole 7h.
			if ev := evidence(t, cold2, corev1.ResourceMemory); ev.Samples != 25 {
				t.Errorf("cold at t2: %d memory peaks, want 25 of 7h", ev.Samples)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var cs []synthetic.Container
			for _, span := range synthetic.Rollouts("web", 2, tc.rollouts, start, t2) {
				for _, pod := range span.Pods {
					cs = append(cs, synthetic.Container{Namespace: "shop", Pod: pod, Container: "app", Start: span.Start, End: span.End,
						CPU: synthetic.DailyPeak(0.1, 0.4, 9, 12), Memory: memory})
				}
			}
			var more []testbed.Series
			if tc.more != nil {
				cs, more = tc.more(cs)
			}
			series := append(synthetic.Series(cs, time.Minute), synthetic.StartTimes(cs, time.Minute)...)
			prom := newEnginePrometheus(t, append(series, more...))

			run := func(store Checkpoints, at time.Time) (plan.Item, map[string]int64) {
				t.Helper()
				reader := usage.NewReader(prom, usage.WithClock(func() time.Time { return at }), usage.WithPeakInterval(tc.peakInterval))
				p := &plan.Plan{}
				if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, Config{Checkpoints: store}, slog.New(slog.DiscardHandler)); err != nil {
					t.Fatal(err)
				}
				return p.Items[0], prom.read()
			}
			kept := checkpoint.New(fake.NewClientset().CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0)
			cold1, _ := run(kept, t1)
			// Again at once: nothing is new, all comes from the checkpoint.
			again, _ := run(kept, t1)
			if diff := cmp.Diff(withoutHistory(cold1), withoutHistory(again), quantities); diff != "" {
				t.Errorf("a run at the checkpoint's end differs from the cold one (-cold +again):\n%s", diff)
			}
			warm, warmPoints := run(kept, t2)
			cold2, coldPoints := run(checkpoint.New(fake.NewClientset().CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0), t2)
			tc.check(t, cold1, cold2)

			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if h := evidence(t, warm, res).History; !strings.Contains(h, "from checkpoint") {
					t.Errorf("warm %s history %q, want from the checkpoint", res, h)
				}
				if h := evidence(t, cold2, res).History; !strings.Contains(h, "read: no checkpoint") {
					t.Errorf("cold %s history %q, want read whole", res, h)
				}
			}
			// The history says where it came from; everything else is the
			// same.
			if diff := cmp.Diff(withoutHistory(cold2), withoutHistory(warm), quantities); diff != "" {
				t.Errorf("warm plan differs from the cold one at the same moment (-cold +warm):\n%s", diff)
			}
			for _, kind := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "kube_pod_container_status_last_terminated_reason", "container_start_time_seconds"} {
				t.Logf("%s: warm read %d points, cold %d", kind, warmPoints[kind], coldPoints[kind])
			}
			if w, c := warmPoints["container_memory_working_set_bytes"], coldPoints["container_memory_working_set_bytes"]; c == 0 || w*3 > c {
				t.Errorf("memory peaks: the warm run read %d points, the cold one %d: want at most a third", w, c)
			}
		})
	}
}

// quantities compares quantities by value.
var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// withoutHistory is it without what its evidence says of the history's
// origin, which a warm and a cold run tell apart.
func withoutHistory(it plan.Item) plan.Item {
	out := it
	out.Containers = nil
	for _, c := range it.Containers {
		c.Resources = slices.Clone(c.Resources)
		for i, r := range c.Resources {
			if r.Evidence != nil {
				ev := *r.Evidence
				ev.History = ""
				c.Resources[i].Evidence = &ev
			}
		}
		out.Containers = append(out.Containers, c)
	}
	return out
}

// webItem is shop's Deployment web, whose container app's CPU and memory
// are recommended.
func webItem() collect.Item {
	return collect.Item{Namespace: "shop", Name: "web",
		Target: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "uid-web"},
			Containers: []collect.Container{{Name: "app"}}},
		Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
			{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}}},
	}
}

// evidence is the evidence of res of it's first container.
func evidence(t *testing.T, it plan.Item, res corev1.ResourceName) *plan.Evidence {
	t.Helper()
	for _, c := range it.Containers {
		for _, r := range c.Resources {
			if r.Resource == res && r.Evidence != nil {
				return r.Evidence
			}
		}
	}
	t.Fatalf("no %s evidence in %+v", res, it)
	return nil
}

// steadyWeb is eight days of shop/web's app until now, at 0.2 cores and
// 300Mi, on Prometheus' engine, and an empty checkpoint store.
func steadyWeb(t *testing.T, now time.Time) (*enginePrometheus, *checkpoint.Store) {
	t.Helper()
	start := now.Add(-8 * 24 * time.Hour)
	var cs []synthetic.Container
	for _, pod := range synthetic.Rollouts("web", 1, 1, start, now)[0].Pods {
		cs = append(cs, synthetic.Container{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: now,
			CPU: synthetic.Constant(0.2), Memory: synthetic.Constant(300 << 20)})
	}
	return newEnginePrometheus(t, synthetic.Series(cs, time.Minute)),
		checkpoint.New(fake.NewClientset().CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0)
}

// TestOlderCheckpointReadCold checks that a checkpoint of the first
// encoding of slots, which held CPU alone, is read cold and says why.
func TestOlderCheckpointReadCold(t *testing.T) {
	now := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	prom, store := steadyWeb(t, now)
	old := checkpoint.Entry{Namespace: "shop", Kind: "Deployment", Name: "web", UID: "uid-web", End: now.Add(-time.Hour),
		Containers: []string{"app"}, Folds: map[string][]byte{"app/cpu": {1, 3, 'c', 'p', 'u'}}}
	packed, err := checkpoint.Pack(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(t.Context(), []checkpoint.Packed{packed}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	reader := usage.NewReader(prom, usage.WithClock(func() time.Time { return now }))
	p := &plan.Plan{}
	if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, Config{Checkpoints: store}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if h := evidence(t, p.Items[0], res).History; h != "7d read: checkpoint of an older format" {
			t.Errorf("%s history %q, want read cold for the older format", res, h)
		}
	}
}

// TestCheckpointPastItsEndReadCold checks that a checkpoint whose slots
// hold samples after its entry's end, which the next run would read and
// count again, is read cold.
func TestCheckpointPastItsEndReadCold(t *testing.T) {
	now := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	prom, store := steadyWeb(t, now)
	run := func(at time.Time) plan.Item {
		t.Helper()
		reader := usage.NewReader(prom, usage.WithClock(func() time.Time { return at }))
		p := &plan.Plan{}
		if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, Config{Checkpoints: store}, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		return p.Items[0]
	}
	run(now.Add(-time.Hour))
	cp, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var tampered []checkpoint.Packed
	for _, p := range cp.Entries {
		e, err := p.Entry()
		if err != nil {
			t.Fatal(err)
		}
		e.End = e.End.Add(-2 * time.Hour)
		if p, err = checkpoint.Pack(e); err != nil {
			t.Fatal(err)
		}
		tampered = append(tampered, p)
	}
	if len(tampered) != 1 {
		t.Fatalf("%d checkpoint entries after the first run, want web's", len(tampered))
	}
	if _, err := store.Save(t.Context(), tampered, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	warm := run(now)
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if h := evidence(t, warm, res).History; h != "7d read: checkpoint unreadable" {
			t.Errorf("%s history %q, want read cold for slots past the entry's end", res, h)
		}
	}
}

// TestOtherLabelFilterReadCold checks that a checkpoint folded from the
// series of another prometheus-label-filter is not taken for this one's:
// the target is read cold and says why, then warm under the new filter.
func TestOtherLabelFilterReadCold(t *testing.T) {
	now := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	prom, store := steadyWeb(t, now)
	run := func(at time.Time, filter string) plan.Item {
		t.Helper()
		reader := usage.NewReader(prom, usage.WithClock(func() time.Time { return at }), usage.WithLabelFilter(filter))
		p := &plan.Plan{}
		if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, Config{Checkpoints: store}, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		return p.Items[0]
	}
	run(now.Add(-2*time.Hour), `namespace="shop"`)
	for i, want := range []string{"7d read: checkpoint of other settings", "7d: 6d"} {
		it := run(now.Add(time.Duration(i-1)*time.Hour), `namespace=~"shop"`)
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if h := evidence(t, it, res).History; !strings.HasPrefix(h, want) {
				t.Errorf("run %d: %s history %q, want %q", i+2, res, h, want)
			}
		}
	}
}

// TestForeignSeriesNeverCheckpointed runs the history stage with
// checkpoints on shop/web's app at 0.2 cores and 300Mi, beside which
// another job (evil-exporter) wrote 1327.45 cores and 1Ti under the same
// labels: the container is refused and no checkpoint entry keeps what was
// folded of it. An hour later, with the foreign series gone, web is read
// cold and recommended from its own series alone.
func TestForeignSeriesNeverCheckpointed(t *testing.T) {
	now := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	start := now.Add(-8 * 24 * time.Hour)
	pod := synthetic.Rollouts("web", 1, 1, start, now)[0].Pods[0]
	genuine := synthetic.Series([]synthetic.Container{{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: now,
		CPU: synthetic.Constant(0.2), Memory: synthetic.Constant(300 << 20)}}, time.Minute)
	forged := slices.Clone(genuine)
	for _, s := range synthetic.Series([]synthetic.Container{{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: now,
		CPU: synthetic.Constant(1327.45), Memory: synthetic.Constant(1 << 40)}}, time.Minute) {
		s.Labels = maps.Clone(s.Labels)
		s.Labels["job"] = "evil-exporter"
		forged = append(forged, s)
	}
	store := checkpoint.New(fake.NewClientset().CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0)
	run := func(series []testbed.Series, at time.Time) plan.Item {
		t.Helper()
		reader := usage.NewReader(newEnginePrometheus(t, series), usage.WithClock(func() time.Time { return at }))
		p := &plan.Plan{}
		if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, Config{Checkpoints: store}, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		return p.Items[0]
	}
	for _, r := range run(forged, now.Add(-time.Hour)).Containers[0].Resources {
		if r.Recommended != nil || !strings.HasPrefix(r.Reason, "its usage series come from 2 sources") {
			t.Errorf("with the foreign series: %s = %s (%q), want refused", r.Resource, r.Recommended, r.Reason)
		}
	}
	cp, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Entries) != 0 {
		t.Errorf("checkpoint entries %v after the refused read, want none", slices.Collect(maps.Keys(cp.Entries)))
	}
	// 0.2 cores and 300Mi (up to its bucket's end), plus 30%.
	for i, r := range run(genuine, now).Containers[0].Resources {
		if want := []string{"260m", "392Mi"}[i]; r.Recommended == nil || r.Recommended.String() != want || r.Reason != "" {
			t.Errorf("without them: %s = %s (%q), want %s", r.Resource, r.Recommended, r.Reason, want)
		}
		if r.Evidence != nil && !strings.Contains(r.Evidence.History, "no checkpoint") {
			t.Errorf("without them: %s history %q, want read cold", r.Resource, r.Evidence.History)
		}
	}
}
