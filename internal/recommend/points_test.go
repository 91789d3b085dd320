package recommend

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// pointSample is a sample of the points tests.
type pointSample struct {
	t time.Time
	v float64
}

// bursty is a sample a minute from from to to: about 0.2 cores, 1 core
// two minutes in every fifteen, and burst at burstAt.
func bursty(from, to, burstAt time.Time, burst float64) []pointSample {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []pointSample
	for at := from; !at.After(to); at = at.Add(time.Minute) {
		v := 0.2 * (1 + 0.1*rng.NormFloat64())
		if at.Minute()%15 < 2 {
			v = 1
		}
		if at.Equal(burstAt) {
			v = burst
		}
		out = append(out, pointSample{at, v})
	}
	return out
}

// TestPoints holds the usage points of a window to what they must be,
// whichever way its samples were folded: by the stateless fold (FoldFor),
// cold into slots, and warm, from a checkpoint's slots of an earlier
// window whose first slot was dropped and read again with what is new.
func TestPoints(t *testing.T) {
	for _, tt := range []struct {
		name   string
		window time.Duration
		// previous is how long before end the checkpoint's run ended.
		previous time.Duration
		period   time.Duration
		points   int
	}{
		{"a week: per day, a day after the checkpoint", 7 * 24 * time.Hour, 24 * time.Hour, DaySlot, 8},
		{"a week: per day, a minute after the checkpoint", 7 * 24 * time.Hour, time.Minute, DaySlot, 8},
		{"two days: per hour", 2 * 24 * time.Hour, 90 * time.Minute, time.Hour, 49},
		{"three days: per day", 3 * 24 * time.Hour, time.Hour, DaySlot, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			end := time.Date(2026, 11, 21, 14, 37, 0, 0, time.UTC)
			start := end.Add(-tt.window)
			burstAt := start.Add(tt.window / 2).Truncate(time.Minute)
			samples := bursty(end.Add(-tt.window-tt.previous), end, burstAt, 3.5)
			length := PeriodOf(tt.window)
			if length != tt.period {
				t.Fatalf("PeriodOf(%s) = %s, want %s", tt.window, length, tt.period)
			}

			h := &usage.History{Window: tt.window, End: end}
			stateless := FoldFor(Options{}, collect.Item{}, h)
			cold := NewSlots(corev1.ResourceCPU, time.Hour, length, AnchorOf(end, length))
			// The checkpoint of the run before: its own window, its own
			// anchor; then what a warm run reads.
			before := end.Add(-tt.previous)
			warm := NewSlots(corev1.ResourceCPU, time.Hour, length, AnchorOf(before, length))
			for _, s := range samples {
				if !s.t.Before(before.Add(-tt.window)) && !s.t.After(before) {
					warm.Add(s.t, s.v)
				}
			}
			boundary := warm.Anchor
			for boundary.Before(start) {
				boundary = boundary.Add(length)
			}
			warm.DropBefore(start)
			for _, s := range samples {
				if s.t.Before(start) {
					continue
				}
				stateless.Add(s.t, s.v)
				cold.Add(s.t, s.v)
				if s.t.Before(boundary) || s.t.After(before) {
					warm.Add(s.t, s.v)
				}
			}

			want, wantLength := stateless.Points()
			if len(want) != tt.points {
				t.Fatalf("%d points, want %d: %v", len(want), tt.points, want)
			}
			warmFold, warmLength := warm.Fold(start, start).Points()
			if wantLength != length || warmLength != length {
				t.Errorf("periods of %s and %s, want %s", wantLength, warmLength, length)
			}
			for name, got := range map[string][]plan.UsagePoint{
				"cold slots": cold.Points(start), "warm slots": warm.Points(start), "warm fold": warmFold,
			} {
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: points\n%v\nwant the stateless fold's\n%v", name, got, want)
				}
			}
			for i, p := range want {
				if i > 0 && !p.Start.Equal(want[i-1].Start.Add(length)) {
					t.Errorf("point %d starts at %s, %s after the one before", i, p.Start, p.Start.Sub(want[i-1].Start))
				}
				if p.Start.Truncate(length) != p.Start {
					t.Errorf("point %d starts at %s, not at a whole %s", i, p.Start, length)
				}
				inBurst := !burstAt.Before(p.Start) && burstAt.Before(p.Start.Add(length))
				switch {
				case inBurst && p.Max != 3.5:
					t.Errorf("the burst's period %s: max %v, want 3.5", p.Start, p.Max)
				case !inBurst && p.Max != 1:
					t.Errorf("period %s: max %v, want 1", p.Start, p.Max)
				}
				// Two minutes in fifteen at 1 core: a day's p90 is in 1's
				// bucket, the burst aside.
				if length == DaySlot && (p.P90 < 1 || p.P90 > min(p.Max, 1.05)) {
					t.Errorf("period %s: p90 %v, want in 1 core's bucket and at most the max %v", p.Start, p.P90, p.Max)
				}
			}
			if first := want[0].Start; first.After(start) || !first.Add(length).After(start) {
				t.Errorf("the first point starts at %s, want the period holding the window's start %s", first, start)
			}
		})
	}
}

// TestPointsP90 holds each point's p90 to what Fold.Observed gives for
// the same samples, and memory's points, from its peaks per interval, to
// theirs.
func TestPointsP90(t *testing.T) {
	end := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		res    corev1.ResourceName
		scale  float64
		values []float64
	}{
		{"cpu, a spread", corev1.ResourceCPU, 1, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{"cpu, one sample", corev1.ResourceCPU, 1, []float64{0.25}},
		{"cpu, a trace", corev1.ResourceCPU, 1, []float64{0, 0, 0.001}},
		{"cpu, past the last bucket", corev1.ResourceCPU, 1, []float64{0.1, 5000, 6000}},
		{"memory peaks", corev1.ResourceMemory, 1 << 20, []float64{100, 120, 110, 400, 130, 125, 118, 122, 119, 121, 117}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &usage.History{Window: 7 * 24 * time.Hour, End: end}
			fold := NewFold(tt.res, 0, time.Time{})
			day := end.Add(-3 * DaySlot)
			for i, v := range tt.values {
				at := day.Add(time.Duration(i+1) * time.Hour)
				h.Values = append(h.Values, v*tt.scale)
				h.Times = append(h.Times, at)
				fold.Add(at, v*tt.scale)
			}
			got, _ := pointsOf(tt.res, h)
			want := []plan.UsagePoint{{Start: day, P90: fold.Observed(0.9), Max: fold.Peak()}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("points %v, want %v", got, want)
			}
		})
	}
}

// TestWithPoints checks that a recommendation's evidence carries its
// points and their period.
func TestWithPoints(t *testing.T) {
	end := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		window time.Duration
		period string
	}{
		{7 * 24 * time.Hour, "day"},
		{36 * time.Hour, "hour"},
	} {
		h := &usage.History{Window: tt.window, End: end}
		for at := end.Add(-tt.window); at.Before(end); at = at.Add(time.Hour) {
			h.Values = append(h.Values, 1<<30)
			h.Times = append(h.Times, at)
		}
		var ev plan.Evidence
		withPoints(&ev, corev1.ResourceMemory, h)
		if ev.UsagePeriod != tt.period || len(ev.Usage) == 0 {
			t.Errorf("window %s: %d points per %q, want some per %q", tt.window, len(ev.Usage), ev.UsagePeriod, tt.period)
		}
	}
	// A window of an item's own, shorter than its namespace's, folded in
	// the namespace's day slots: its points are days.
	s := NewSlots(corev1.ResourceCPU, time.Hour, DaySlot, end)
	for at := end.Add(-36 * time.Hour); at.Before(end); at = at.Add(time.Minute) {
		s.Add(at, 0.5)
	}
	h := &usage.History{Window: 36 * time.Hour, End: end, Fold: s.Fold(end.Add(-36*time.Hour), end.Add(-36*time.Hour))}
	var ev plan.Evidence
	withPoints(&ev, corev1.ResourceCPU, h)
	if ev.UsagePeriod != "day" || len(ev.Usage) != 2 {
		t.Errorf("a window of its own in day slots: %d points per %q, want 2 per day", len(ev.Usage), ev.UsagePeriod)
	}
}
