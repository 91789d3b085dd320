package history

import (
	"slices"
	"testing"
	"time"
)

func TestStartupSpikeAndStartTimes(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	c := WithStartupSpike(Container{Namespace: "shop", Pod: "jvm-abc-12345", Container: "app",
		Start: start, End: start.Add(4 * time.Minute), Memory: Constant(200)}, 700, 2*time.Minute)
	series := Series([]Container{c}, time.Minute)
	var memory []float64
	for _, s := range series[0].Samples {
		memory = append(memory, s.Value)
	}
	// The first two minutes at the peak, then the steady working set.
	if want := []float64{700, 700, 200, 200, 200}; !slices.Equal(memory, want) {
		t.Errorf("working set = %v, want %v", memory, want)
	}
	starts := StartTimes([]Container{c}, time.Minute)
	if len(starts) != 1 || starts[0].Name != StartTimeMetric || starts[0].Labels["pod"] != "jvm-abc-12345" || len(starts[0].Samples) != 5 {
		t.Fatalf("StartTimes() = %+v, want one series of 5 scrapes of the pod", starts)
	}
	for _, s := range starts[0].Samples {
		if s.Value != float64(start.Unix()) {
			t.Errorf("start time at %v = %v, want %d", s.Time, s.Value, start.Unix())
		}
	}
}
