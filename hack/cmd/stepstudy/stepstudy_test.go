package main

import (
	"math"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

func TestRewrite(t *testing.T) {
	q := `max by (pod, container) (rate(container_cpu_usage_seconds_total{container!="",namespace="a",pod=~"web-[a-z0-9]+-[a-z0-9]{5}"}[1m]))`
	got, err := candidate{step: 5 * time.Minute, rate: time.Minute, over: "max_over_time(", label: "max"}.rewrite(q)
	if err != nil {
		t.Fatal(err)
	}
	want := `max by (pod, container) (max_over_time(rate(container_cpu_usage_seconds_total{container!="",namespace="a",pod=~"web-[a-z0-9]+-[a-z0-9]{5}"}[1m])[5m:1m]))`
	if got != want {
		t.Errorf("rewrite() = %s, want %s", got, want)
	}
	if got, err := reference.rewrite(q); err != nil || got != q {
		t.Errorf("rewrite() of the reference = %s, %v, want the query as it is", got, err)
	}
	if _, err := (candidate{over: "max_over_time("}).rewrite(`sum(container_memory_working_set_bytes{a="b"})`); err == nil {
		t.Error("rewrite() of a query without rate() succeeded")
	}
}

func TestCandidates(t *testing.T) {
	for _, scrape := range []time.Duration{15 * time.Second, time.Minute} {
		cs := candidatesFor(scrape)
		if cs[0] != reference {
			t.Errorf("candidatesFor(%s)[0] = %s, want the reference", scrape, cs[0].name())
		}
		for _, c := range cs {
			if c != auto && c.rate < 2*scrape {
				t.Errorf("candidatesFor(%s) has %s, whose rate window holds fewer than two scrapes", scrape, c.name())
			}
		}
	}
}

func TestTruthInput(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 7, 0, time.UTC)
	end := start.Add(2*time.Hour - 7*time.Second)
	series := history.Series([]history.Container{{
		Namespace: "a", Pod: "web-abc-12345", Container: "app", Start: start, End: end,
		CPU: history.DailyPeak(0.5, 1.5, 0, 1),
	}}, 15*time.Second)
	in, err := truthInput(series, end, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The last half hour: 120 intervals of 15s, all off peak (hour 1 UTC).
	if len(in.Samples) != 120 {
		t.Fatalf("truthInput() = %d samples, want 120", len(in.Samples))
	}
	for _, s := range in.Samples {
		if math.Abs(s.Value-0.5) > 1e-9 || !s.Time.After(end.Add(-30*time.Minute)) || s.Time.After(end) {
			t.Fatalf("truthInput() sample %v, want 0.5 cores within the last half hour", s)
		}
	}
	if n := stored(series, end, 30*time.Minute); n != 120 {
		t.Errorf("stored() = %d, want 120", n)
	}
}

func TestBucket(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	p90 := func(v float64) float64 {
		h := recommend.NewHistogram(recommend.CPUHistogram, 0)
		h.Add(v, 1, at)
		return h.Percentile(0.9)
	}
	// A bucket's width is 0.01 core x 1.05^b, about 6% of the values in
	// it at 1 core and 5.5% at 2.
	if d := bucket(p90(1.06)) - bucket(p90(1)); d != 1 {
		t.Errorf("the buckets of 1 and 1.06 cores are %d apart, want 1", d)
	}
	if d := bucket(p90(2)) - bucket(p90(1)); d != 13 {
		t.Errorf("the buckets of 1 and 2 cores are %d apart, want 13 (36.7 and 49.2 round down to 36 and 49)", d)
	}
}

func TestShapesAreDeterministic(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 7, 0, time.UTC)
	end := start.Add(6 * time.Hour)
	for _, s := range shapes {
		a := newWorkload(s, "a", 15*time.Second, 1, 1, start, end, 1)
		b := newWorkload(s, "a", 15*time.Second, 1, 1, start, end, 1)
		for at := start; at.Before(end); at = at.Add(time.Minute) {
			va, vb := a.containers[0].CPU(at), b.containers[0].CPU(at)
			if va != vb || va < 0 || math.IsNaN(va) {
				t.Fatalf("%s: cpu at %s = %v and %v, want the same non-negative value", s.name, at, va, vb)
			}
		}
	}
}

func TestSpans(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := func(a, b int) span {
		return span{at.Add(time.Duration(a) * time.Minute), at.Add(time.Duration(b) * time.Minute)}
	}
	s := merged(spans{m(0, 2), m(1, 3), m(5, 6)})
	if len(s) != 2 || s[0] != m(0, 3) {
		t.Fatalf("merged() = %v, want [0, 3) and [5, 6)", s)
	}
	for minute, want := range map[int]bool{-1: false, 0: true, 2: true, 3: false, 5: true, 6: false} {
		if got := s.holds(at.Add(time.Duration(minute) * time.Minute)); got != want {
			t.Errorf("holds(minute %d) = %v, want %v", minute, got, want)
		}
	}
}
