package corrections

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// item is a container that recommends lowering its memory to 300Mi and
// its cpu to 100m.
func item() *plan.Item {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	return &plan.Item{Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
		{Resource: corev1.ResourceMemory, Current: q("400Mi"), Recommended: q("300Mi"), Request: q("300Mi"), Changed: true},
		{Resource: corev1.ResourceCPU, Current: q("200m"), Recommended: q("100m"), Request: q("100m"), Changed: true},
	}}}}
}

func TestUnwatched(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		change   gitops.RecordedChange
		wantHeld bool
	}{
		{name: "a correction within Stay keeps the request up", wantHeld: true,
			change: gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, To: resource.MustParse("500Mi"), Correction: true, Commit: "0123456789abcdef", Time: now.Add(-10 * 24 * time.Hour)}},
		{name: "a correction older than Stay keeps nothing",
			change: gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, To: resource.MustParse("500Mi"), Correction: true, Time: now.Add(-Stay - time.Hour)}},
		{name: "a change that corrects nothing keeps nothing",
			change: gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, To: resource.MustParse("500Mi"), Time: now.Add(-24 * time.Hour)}},
		{name: "a correction below the recommendation keeps nothing",
			change: gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, To: resource.MustParse("200Mi"), Correction: true, Time: now.Add(-24 * time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := item()
			r := Resource(it, "app", corev1.ResourceMemory)
			Unwatched(r, tt.change, now)
			if held := r.HeldBack && r.Request == nil && !r.Changed; held != tt.wantHeld {
				t.Fatalf("held = %v (%+v), want %v", held, r, tt.wantHeld)
			}
			if tt.wantHeld && !strings.Contains(r.Reason, "0123456789ab set 500Mi") || tt.wantHeld && !strings.Contains(r.Reason, "30 days") {
				t.Errorf("reason = %q, want the commit, the correction and 30 days", r.Reason)
			}
		})
	}
}

func TestWatched(t *testing.T) {
	correction := resource.MustParse("600Mi")
	change := gitops.RecordedChange{Container: "app", Resource: corev1.ResourceMemory, To: resource.MustParse("350Mi"), Commit: "feedface"}
	t.Run("a regression puts its correction in place and holds the container's other changes", func(t *testing.T) {
		it := item()
		r := Resource(it, "app", corev1.ResourceMemory)
		Watched(it, change, r, plan.Watch{State: plan.WatchRegressed, Correction: &correction, Regression: "2 OOM kills after, none before"})
		if !r.Correction || r.Request == nil || r.Request.Cmp(correction) != 0 || !r.Changed || r.Reason != "correction of commit feedface: 2 OOM kills after, none before" {
			t.Errorf("memory = %+v, want the correction 600Mi", r)
		}
		if cpu := Resource(it, "app", corev1.ResourceCPU); !cpu.HeldBack || cpu.Request != nil || !strings.Contains(cpu.Reason, "waits to be merged") {
			t.Errorf("cpu = %+v, want held until the correction is merged", cpu)
		}
	})
	t.Run("a pending correction keeps nothing", func(t *testing.T) {
		it := item()
		r := Resource(it, "app", corev1.ResourceMemory)
		corrective := change
		corrective.Correction, corrective.To = true, correction
		Watched(it, corrective, r, plan.Watch{State: plan.WatchPending})
		if r.HeldBack || r.Request == nil {
			t.Errorf("memory = %+v, want the recommendation as it was", r)
		}
		Watched(it, corrective, r, plan.Watch{State: plan.WatchVerified})
		if !r.HeldBack || r.Request != nil {
			t.Errorf("memory = %+v, want it held at or above the running correction", r)
		}
	})
}
