package usage

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Cut returns u as a read with window and memory peaks of peakInterval
// would have returned it, from a read over a longer window with a peak
// interval that divides peakInterval: each History cut with Cut, CPU at
// its own step. Containers and resources with nothing left are dropped.
func (u Usage) Cut(window, peakInterval time.Duration) (Usage, error) {
	out := Usage{}
	for container, resources := range u {
		for res, h := range resources {
			step := h.Step
			if res == corev1.ResourceMemory {
				step = peakInterval
			}
			c, err := h.Cut(window, step)
			if err != nil {
				return nil, fmt.Errorf("container %s %s: %w", container, res, err)
			}
			if c == nil {
				continue
			}
			if out[container] == nil {
				out[container] = map[corev1.ResourceName]*History{}
			}
			out[container][res] = c
		}
	}
	return out, nil
}

// Cut returns the history a read with window at step would have returned:
// the samples from End - window on, merged into the peaks of step (the
// highest sample of each step counted back from End) when step is a
// multiple of h.Step, and the OOM kills and startup peaks seen in the
// window. It is nil when neither a sample nor a kill is left. The window
// must not reach further back than h's, nor need a sample from before it
// to fill its oldest peak.
func (h *History) Cut(window, step time.Duration) (*History, error) {
	if h.Step <= 0 || step <= 0 || step%h.Step != 0 {
		return nil, fmt.Errorf("cannot cut samples %s apart into steps of %s", h.Step, step)
	}
	if need := span(window, step) + step - h.Step; window > h.Window || need > span(h.Window, h.Step) {
		return nil, fmt.Errorf("cannot cut %s at %s from a history of %s", window, step, h.Window)
	}
	c := &History{Window: window, End: h.End, Step: step, Resolution: h.Resolution}
	for _, t := range h.OOMKills {
		if !t.Before(h.End.Add(-window)) {
			c.OOMKills = append(c.OOMKills, t)
		}
	}
	c.OOMKilled = len(c.OOMKills) > 0
	// Startup peaks stand on their own hourly grid from End, as a read of
	// window alone would have them.
	for _, p := range h.StartupPeaks {
		if !p.Time.Before(h.End.Add(-span(window, startupResolution))) {
			c.StartupPeaks = append(c.StartupPeaks, p)
		}
	}
	oldest := h.End.Add(-span(window, step))
	if step == h.Step {
		// CPU keeps a sample per pod and step.
		for i, v := range h.Values {
			if t := h.Time(i); !t.Before(oldest) {
				c.add(t, v)
			}
		}
	} else {
		// A peak of step is the highest of the finer peaks within it: the
		// finer ones end at End - k*h.Step, so each falls in one.
		peaks := map[time.Time]int{}
		for i, v := range h.Values {
			t := h.Time(i)
			t = h.End.Add(-(h.End.Sub(t) / step * step))
			if !t.Before(oldest) {
				c.addPeak(peaks, t, v)
			}
		}
	}
	if len(c.Values) == 0 && !c.OOMKilled {
		return nil, nil
	}
	return c, nil
}

// sortByTime puts the samples in time order, those of one time in the order
// they came in, and the OOM kills too, so that the same samples read in
// other ranges give the same History.
func (h *History) sortByTime() {
	slices.SortFunc(h.OOMKills, time.Time.Compare)
	slices.SortFunc(h.StartupPeaks, func(a, b Point) int { return a.Time.Compare(b.Time) })
	switch {
	case h.Times == nil && len(h.at) == len(h.Values) && !slices.IsSorted(h.at):
		// A later place on the grid is a later time, Step being positive.
		sort.Stable(byPlace{h})
	case len(h.Times) == len(h.Values) && !slices.IsSortedFunc(h.Times, time.Time.Compare):
		sort.Stable(byTime{h})
	}
}

// byPlace and byTime sort a History's samples in place.
type (
	byPlace struct{ h *History }
	byTime  struct{ h *History }
)

func (s byPlace) Len() int           { return len(s.h.Values) }
func (s byPlace) Less(i, j int) bool { return s.h.at[i] < s.h.at[j] }
func (s byPlace) Swap(i, j int) {
	s.h.at[i], s.h.at[j] = s.h.at[j], s.h.at[i]
	s.h.Values[i], s.h.Values[j] = s.h.Values[j], s.h.Values[i]
}

func (s byTime) Len() int           { return len(s.h.Values) }
func (s byTime) Less(i, j int) bool { return s.h.Times[i].Before(s.h.Times[j]) }
func (s byTime) Swap(i, j int) {
	s.h.Times[i], s.h.Times[j] = s.h.Times[j], s.h.Times[i]
	s.h.Values[i], s.h.Values[j] = s.h.Values[j], s.h.Values[i]
}

// span is the longest whole number of steps within window: how far back
// the oldest sample of a read of window at step lies.
func span(window, step time.Duration) time.Duration {
	return window / step * step
}

// gcd is the greatest common divisor of two durations; gcd(0, b) is b.
func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
