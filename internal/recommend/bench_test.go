package recommend

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A container's week of CPU at one minute, as a run folds it: 10,081
// samples, with and without a checkpoint's day slots.
func BenchmarkFoldWeek(b *testing.B) {
	end := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const window = 7 * 24 * time.Hour
	samples := int(window/time.Minute) + 1
	value := func(i int) float64 { return 0.05 + float64(i%97)/50 }
	b.Run("fold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := NewFold(corev1.ResourceCPU, 24*time.Hour, end.Add(-window))
			f.periods = newPeriods(corev1.ResourceCPU, DaySlot, AnchorOf(end, DaySlot))
			for i := range samples {
				f.Add(end.Add(-window+time.Duration(i)*time.Minute), value(i))
			}
			if f.Samples() != samples {
				b.Fatalf("%d samples folded, want %d", f.Samples(), samples)
			}
		}
	})
	b.Run("slots", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := NewSlots(corev1.ResourceCPU, 24*time.Hour, DaySlot, AnchorOf(end, DaySlot))
			for i := range samples {
				s.Add(end.Add(-window+time.Duration(i)*time.Minute), value(i))
			}
			if len(s.slots) != 8 {
				b.Fatalf("%d day slots, want 8", len(s.slots))
			}
		}
	})
}
