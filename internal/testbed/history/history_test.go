package history

import (
	"regexp"
	"testing"
	"time"
)

func TestSeriesCounterAccumulatesRate(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	got := Series([]Container{{
		Namespace: "shop", Pod: "web-abc-12345", Container: "app",
		Start: start, End: start.Add(3 * time.Minute),
		CPU: Constant(0.5), Memory: Constant(100),
	}}, time.Minute)
	if len(got) != 2 {
		t.Fatalf("Series() = %d series, want cpu and memory", len(got))
	}
	cpu := got[0]
	if cpu.Name != CPUMetric || cpu.Labels["pod"] != "web-abc-12345" || cpu.Labels["namespace"] != "shop" {
		t.Errorf("cpu series = %s%v", cpu.Name, cpu.Labels)
	}
	// 0.5 cores for 60 s adds 30 core-seconds per minute: 0, 30, 60, 90.
	want := []float64{0, 30, 60, 90}
	if len(cpu.Samples) != len(want) {
		t.Fatalf("cpu samples = %v, want %v", cpu.Samples, want)
	}
	for i, w := range want {
		if cpu.Samples[i].Value != w || !cpu.Samples[i].Time.Equal(start.Add(time.Duration(i)*time.Minute)) {
			t.Errorf("cpu sample %d = %v, want %v at +%dm", i, cpu.Samples[i], w, i)
		}
	}
	if mem := got[1]; mem.Name != MemoryMetric || len(mem.Samples) != 4 || mem.Samples[3].Value != 100 {
		t.Errorf("memory series = %+v", mem)
	}
}

func TestRollouts(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	spans := Rollouts("web", 2, 3, start, start.Add(9*time.Hour))
	if len(spans) != 3 {
		t.Fatalf("Rollouts() = %d spans, want 3", len(spans))
	}
	deploymentPod := regexp.MustCompile(`^web-[a-z0-9]+-[a-z0-9]{5}$`)
	seen := map[string]bool{}
	hashes := map[string]bool{}
	for i, s := range spans {
		if want := start.Add(time.Duration(i) * 3 * time.Hour); !s.Start.Equal(want) {
			t.Errorf("span %d starts at %v, want %v", i, s.Start, want)
		}
		if len(s.Pods) != 2 {
			t.Errorf("span %d has %d pods, want 2", i, len(s.Pods))
		}
		for _, p := range s.Pods {
			if !deploymentPod.MatchString(p) {
				t.Errorf("pod name %q is not a Deployment pod name", p)
			}
			if seen[p] {
				t.Errorf("pod name %q repeats", p)
			}
			seen[p] = true
			hashes[p[:len("web-")+9]] = true
		}
	}
	if len(hashes) != 3 {
		t.Errorf("pod-template hashes = %v, want one per rollout", hashes)
	}
	if again := Rollouts("web", 2, 3, start, start.Add(9*time.Hour)); again[1].Pods[0] != spans[1].Pods[0] {
		t.Errorf("Rollouts() is not deterministic: %s then %s", spans[1].Pods[0], again[1].Pods[0])
	}
}
