// Package verify checks the job's merged changes in production: for each
// request a commit of the job's changed on the base branch, when a pod of
// the target first ran with it, and how the container did in a watch
// period after that against as long a period before (OOM kills, restarts,
// CPU throttling, memory working set); and, when it did worse, the request
// that undoes the change.
package verify

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// Defaults of the thresholds; the settings (verify-period, verify-oom-kills,
// ...) take theirs from here.
const (
	DefaultPeriod          = 72 * time.Hour
	DefaultOOMKills        = 1
	DefaultRestarts        = 3
	DefaultThrottledAfter  = 0.20
	DefaultThrottledBefore = 0.05
)

// OOM bump of a corrected memory request, the algorithm's: at least 100Mi
// or 20% above the peak seen after the change.
const (
	oomMinBump   = 100 << 20
	oomBumpRatio = 1.2
)

// Off is the Period that turns verification off, as verify-period 0 does:
// no merged change is read, watched or corrected.
const Off time.Duration = 0

// Thresholds say when a change regressed; zero fields but Period take the
// defaults.
type Thresholds struct {
	// Period is how long a change is watched after it took effect, and how
	// far before it the container is compared against; Off (zero) turns
	// verification off, it never stands for DefaultPeriod.
	Period time.Duration
	// OOMKills is the least number of OOM kills after a memory cut, more
	// than before, that makes it a regression.
	OOMKills int
	// Restarts is how many more restarts after a cut than before make it a
	// regression.
	Restarts int
	// ThrottledAfter and ThrottledBefore: a CPU cut regressed when the
	// share of throttled periods rose above ThrottledAfter from below
	// ThrottledBefore.
	ThrottledAfter, ThrottledBefore float64
}

// Enabled reports whether merged changes are verified: a Period other
// than Off.
func (t Thresholds) Enabled() bool { return t.Period > Off }

// WithDefaults fills the zero fields but Period with the defaults.
func (t Thresholds) WithDefaults() Thresholds {
	if t.OOMKills == 0 {
		t.OOMKills = DefaultOOMKills
	}
	if t.Restarts == 0 {
		t.Restarts = DefaultRestarts
	}
	if t.ThrottledAfter == 0 {
		t.ThrottledAfter = DefaultThrottledAfter
	}
	if t.ThrottledBefore == 0 {
		t.ThrottledBefore = DefaultThrottledBefore
	}
	return t
}

// Latest keeps, of changes ordered newest first, the newest of each
// ResourceRecommend's container and resource: an older one was replaced.
func Latest(changes []gitops.RecordedChange) []gitops.RecordedChange {
	seen := map[string]bool{}
	var out []gitops.RecordedChange
	for _, c := range changes {
		key := c.Item + "/" + c.Container + "/" + string(c.Resource)
		if !seen[key] {
			seen[key] = true
			out = append(out, c)
		}
	}
	return out
}

// Live is what the cluster runs now of a container's resource.
type Live struct {
	Request, Limit *resource.Quantity
}

// Check watches one change: live is the container's resource in the live
// pod template, watched what its pods did since the change was committed
// (nil when nothing was read), now the time of the run. th is Enabled: a
// change is checked only when verification is on.
func Check(ch gitops.RecordedChange, live Live, watched *usage.Watched, now time.Time, th Thresholds) plan.Watch {
	th = th.WithDefaults()
	w := plan.Watch{Container: ch.Container, Resource: ch.Resource, From: ch.From, To: ch.To,
		Commit: ch.Commit, CommitURL: ch.URL, Committed: ch.Time, Corrective: ch.Correction, State: plan.WatchPending}
	if live.Request == nil || live.Request.Cmp(ch.To) != 0 {
		// Not what the cluster runs: not yet, or no longer.
		w.Live = live.Request
		if !sameRequest(live.Request, ch.From) {
			w.State = plan.WatchSuperseded
		}
		return w
	}
	effective := ch.Time
	if watched != nil {
		if t, ok := watched.FirstRan(ch.Resource, ch.To.AsApproximateFloat64(), ch.Time.Add(-time.Hour)); ok {
			effective = t
		}
	}
	w.Effective = &effective
	if watched == nil {
		w.State = plan.WatchWatching
		if now.Sub(effective) >= th.Period {
			w.State = plan.WatchVerified
		}
		return w
	}
	end := effective.Add(th.Period)
	if now.Before(end) {
		end = now
	}
	w.Before = observe(watched, effective.Add(-th.Period), effective)
	w.After = observe(watched, effective, end)

	var why []string
	cut := ch.From != nil && ch.To.Cmp(*ch.From) < 0
	if cut && ch.Resource == corev1.ResourceMemory && w.After.OOMKills >= th.OOMKills && w.After.OOMKills > w.Before.OOMKills {
		why = append(why, fmt.Sprintf("%d OOM kills after, %d before", w.After.OOMKills, w.Before.OOMKills))
	}
	if cut && w.After.Restarts-w.Before.Restarts >= th.Restarts {
		why = append(why, fmt.Sprintf("%d restarts after, %d before", w.After.Restarts, w.Before.Restarts))
	}
	if cut && ch.Resource == corev1.ResourceCPU && w.After.Throttled != nil && *w.After.Throttled > th.ThrottledAfter &&
		(w.Before.Throttled == nil || *w.Before.Throttled < th.ThrottledBefore) {
		before := "none"
		if w.Before.Throttled != nil {
			before = percent(*w.Before.Throttled)
		}
		why = append(why, fmt.Sprintf("throttled in %s of CPU periods after, %s before", percent(*w.After.Throttled), before))
	}
	switch {
	case len(why) > 0:
		w.State = plan.WatchRegressed
		w.Regression = strings.Join(why, "; ")
		c := correction(ch, w.After)
		w.Correction = &c
	case now.Sub(effective) >= th.Period:
		w.State = plan.WatchVerified
	default:
		w.State = plan.WatchWatching
	}
	return w
}

// correction is the request that undoes a regressed cut: CPU back to the
// request before; memory back to at least the request before, and above
// the peak seen after the change plus the OOM bump.
func correction(ch gitops.RecordedChange, after *plan.Observed) resource.Quantity {
	back := *ch.From
	if ch.Resource != corev1.ResourceMemory || after.MemoryPeak == nil {
		return back
	}
	peak := *after.MemoryPeak
	bumped, _ := recommend.Round(corev1.ResourceMemory, math.Max(peak+oomMinBump, peak*oomBumpRatio))
	if bumped.Cmp(back) > 0 {
		return bumped
	}
	return back
}

// observe sums and takes what watched holds in (from, to]: each hourly
// point covers the hour that ends at its time.
func observe(w *usage.Watched, from, to time.Time) *plan.Observed {
	o := &plan.Observed{From: from, To: to}
	in := func(t time.Time) bool { return t.After(from) && !t.After(to) }
	for _, t := range w.OOMKills {
		if in(t) {
			o.OOMKills++
		}
	}
	var restarts, throttled, periods float64
	for _, p := range w.Restarts {
		if in(p.Time) {
			restarts += p.Value
		}
	}
	o.Restarts = int(math.Round(restarts))
	for _, p := range w.Throttled {
		if in(p.Time) {
			throttled += p.Value
		}
	}
	for _, p := range w.Periods {
		if in(p.Time) {
			periods += p.Value
		}
	}
	if periods > 0 {
		share := throttled / periods
		o.Throttled = &share
	}
	for _, p := range w.MemoryPeaks {
		if in(p.Time) && (o.MemoryPeak == nil || p.Value > *o.MemoryPeak) {
			v := p.Value
			o.MemoryPeak = &v
		}
	}
	return o
}

// percent shows a share as a whole percentage.
func percent(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }

// sameRequest reports whether two requests are equal, nil being unset.
func sameRequest(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(*b) == 0
}
