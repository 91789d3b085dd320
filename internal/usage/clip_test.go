package usage

import (
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

func TestClip(t *testing.T) {
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	m := func(n int) time.Time { return at.Add(time.Duration(n) * time.Minute) }
	rngs := []promv1.Range{{Start: m(0), End: m(9), Step: time.Minute}, {Start: m(10), End: m(19), Step: time.Minute}}
	got := clip(rngs, []Span{{From: m(0), To: m(3).Add(-time.Nanosecond)}, {From: m(15).Add(time.Nanosecond), To: m(19)}})
	want := []promv1.Range{{Start: m(0), End: m(2), Step: time.Minute}, {Start: m(16), End: m(19), Step: time.Minute}}
	if len(got) != len(want) {
		t.Fatalf("clip() = %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Start.Equal(want[i].Start) || !got[i].End.Equal(want[i].End) || got[i].Step != want[i].Step {
			t.Errorf("clip()[%d] = %v, want %v: the grid points within each span", i, got[i], want[i])
		}
	}
}
