package verify

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// hourly is one point per hour from from to to, of value v.
func hourly(from, to time.Time, v float64) []usage.Point {
	var out []usage.Point
	for t := from.Add(time.Hour); !t.After(to); t = t.Add(time.Hour) {
		out = append(out, usage.Point{Time: t, Value: v})
	}
	return out
}

func TestCheck(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	committed := now.Add(-50 * time.Hour)
	effective := now.Add(-48 * time.Hour)
	memoryCut := gitops.RecordedChange{Item: "shop/web", Container: "app", Resource: corev1.ResourceMemory,
		From: q("512Mi"), To: *q("256Mi"), Commit: "c0ffee", Time: committed}
	cpuCut := gitops.RecordedChange{Item: "shop/web", Container: "app", Resource: corev1.ResourceCPU,
		From: q("1"), To: *q("250m"), Commit: "c0ffee", Time: committed}
	// requests are kube-state-metrics' view: the old value until the
	// change took effect, the new one after.
	requests := func(res corev1.ResourceName, before, after float64) map[corev1.ResourceName][]usage.Point {
		return map[corev1.ResourceName][]usage.Point{res: {{Time: effective.Add(-72 * time.Hour), Value: before}, {Time: effective, Value: after}}}
	}
	memoryRequests := requests(corev1.ResourceMemory, 512<<20, 256<<20)
	cpuRequests := requests(corev1.ResourceCPU, 1, 0.25)
	throttling := func(before, after float64) (throttled, periods []usage.Point) {
		throttled = append(hourly(effective.Add(-72*time.Hour), effective, 36000*before), hourly(effective, now, 36000*after)...)
		return throttled, hourly(effective.Add(-72*time.Hour), now, 36000)
	}
	quietThrottled, quietPeriods := throttling(0.01, 0.01)
	risenThrottled, risenPeriods := throttling(0.01, 0.4)
	alwaysThrottled, alwaysPeriods := throttling(0.3, 0.4)

	for _, tc := range []struct {
		name       string
		change     gitops.RecordedChange
		live       Live
		watched    *usage.Watched
		now        time.Time
		state      string
		correction string
		why        string
	}{
		{name: "not yet what the cluster runs", change: memoryCut, live: Live{Request: q("512Mi")},
			watched: &usage.Watched{Requests: memoryRequests}, now: now, state: plan.WatchPending},
		{name: "changed since by someone else", change: memoryCut, live: Live{Request: q("384Mi")},
			watched: &usage.Watched{Requests: memoryRequests}, now: now, state: plan.WatchSuperseded},
		{name: "request removed since", change: memoryCut, live: Live{},
			watched: &usage.Watched{Requests: memoryRequests}, now: now, state: plan.WatchSuperseded},
		{name: "a request first set, not yet synced", change: gitops.RecordedChange{Item: "shop/web", Container: "app", Resource: corev1.ResourceCPU,
			To: *q("250m"), Commit: "c0ffee", Time: committed}, live: Live{}, now: now, state: plan.WatchPending},
		{name: "no harm within the period", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, MemoryPeaks: hourly(effective, now, 200<<20)}, now: now, state: plan.WatchWatching},
		{name: "no harm past the period", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, MemoryPeaks: hourly(effective, now, 200<<20)}, now: now.Add(30 * time.Hour), state: plan.WatchVerified},
		{name: "OOM kills after a memory cut: back to the value before", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, OOMKills: []time.Time{effective.Add(3 * time.Hour)}, MemoryPeaks: hourly(effective, now, 250<<20)},
			now:     now, state: plan.WatchRegressed, correction: "512Mi", why: "1 OOM kills after, 0 before"},
		{name: "OOM kills above the value before: the peak plus the bump", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, OOMKills: []time.Time{effective.Add(3 * time.Hour)}, MemoryPeaks: hourly(effective, now, 500<<20)},
			now:     now, state: plan.WatchRegressed, correction: "600Mi", why: "1 OOM kills after, 0 before"},
		{name: "as many OOM kills as before: not the change's doing", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, OOMKills: []time.Time{effective.Add(-3 * time.Hour), effective.Add(3 * time.Hour)}},
			now:     now, state: plan.WatchWatching},
		{name: "OOM kills after a memory raise: not the change's doing", live: Live{Request: q("1Gi")},
			change:  gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, From: q("512Mi"), To: *q("1Gi"), Time: committed},
			watched: &usage.Watched{OOMKills: []time.Time{effective.Add(3 * time.Hour)}}, now: now, state: plan.WatchWatching},
		{name: "restarts after a cut", change: memoryCut, live: Live{Request: q("256Mi")},
			watched: &usage.Watched{Requests: memoryRequests, Restarts: hourly(effective, effective.Add(4*time.Hour), 1)},
			now:     now, state: plan.WatchRegressed, correction: "512Mi", why: "4 restarts after, 0 before"},
		{name: "throttling rose after a CPU cut", change: cpuCut, live: Live{Request: q("250m")},
			watched: &usage.Watched{Requests: cpuRequests, Throttled: risenThrottled, Periods: risenPeriods},
			now:     now, state: plan.WatchRegressed, correction: "1", why: "throttled in 40% of CPU periods after, 1% before"},
		{name: "throttling as low as before", change: cpuCut, live: Live{Request: q("250m")},
			watched: &usage.Watched{Requests: cpuRequests, Throttled: quietThrottled, Periods: quietPeriods}, now: now, state: plan.WatchWatching},
		{name: "throttled before the cut already", change: cpuCut, live: Live{Request: q("250m")},
			watched: &usage.Watched{Requests: cpuRequests, Throttled: alwaysThrottled, Periods: alwaysPeriods}, now: now, state: plan.WatchWatching},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Check(tc.change, tc.live, tc.watched, tc.now, Thresholds{Period: DefaultPeriod})
			if w.State != tc.state {
				t.Fatalf("state = %s (%s), want %s", w.State, w.Regression, tc.state)
			}
			if got := ""; w.Correction != nil {
				got = w.Correction.String()
				if got != tc.correction {
					t.Errorf("correction = %s, want %s", got, tc.correction)
				}
			} else if tc.correction != "" {
				t.Errorf("no correction, want %s", tc.correction)
			}
			if w.Regression != tc.why {
				t.Errorf("regression = %q, want %q", w.Regression, tc.why)
			}
			if (tc.state == plan.WatchPending || tc.state == plan.WatchSuperseded) && !sameRequest(w.Live, tc.live.Request) {
				t.Errorf("live = %v, want %v", w.Live, tc.live.Request)
			}
			if tc.state != plan.WatchPending && tc.state != plan.WatchSuperseded && tc.change.Resource == corev1.ResourceMemory && tc.watched.Requests != nil &&
				(w.Effective == nil || !w.Effective.Equal(effective)) {
				t.Errorf("effective = %v, want %v, when a pod first ran with the new request", w.Effective, effective)
			}
		})
	}
}

func TestLatestKeepsTheNewestChangeOfEachRequest(t *testing.T) {
	changes := []gitops.RecordedChange{
		{Item: "shop/web", Container: "app", Resource: corev1.ResourceMemory, To: *q("512Mi"), Commit: "new"},
		{Item: "shop/web", Container: "app", Resource: corev1.ResourceCPU, To: *q("1"), Commit: "new"},
		{Item: "shop/web", Container: "app", Resource: corev1.ResourceMemory, To: *q("256Mi"), Commit: "old"},
		{Item: "shop/api", Container: "app", Resource: corev1.ResourceMemory, To: *q("1Gi"), Commit: "old"},
	}
	got := Latest(changes)
	if len(got) != 3 || got[0].Commit != "new" || got[1].Commit != "new" || got[2].Item != "shop/api" {
		t.Errorf("Latest() = %+v, want web's two newest and api's", got)
	}
}
