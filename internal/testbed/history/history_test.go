package history

import (
	"fmt"
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

func TestOOMKill(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at, end := start.Add(2*time.Minute), start.Add(4*time.Minute)
	got := OOMKill("shop", "web-x", "app", start, at, end, time.Minute)
	if len(got) != 2 {
		t.Fatalf("OOMKill() = %d series, want the reason and the restart counter", len(got))
	}
	reason, restarts := got[0], got[1]
	// Minutes 0..4: the reason exists from minute 2, the counter is 0, 0, 1, 1, 1.
	if reason.Name != LastTerminatedMetric || reason.Labels["reason"] != "OOMKilled" || len(reason.Samples) != 3 || !reason.Samples[0].Time.Equal(at) {
		t.Errorf("reason series = %+v, want 3 samples of OOMKilled from %v", reason, at)
	}
	var counts []float64
	for _, s := range restarts.Samples {
		counts = append(counts, s.Value)
	}
	if restarts.Name != RestartsMetric || fmt.Sprint(counts) != "[0 0 1 1 1]" {
		t.Errorf("restarts = %s %v, want [0 0 1 1 1]", restarts.Name, counts)
	}
	if _, ok := restarts.Labels["reason"]; ok {
		t.Error("the restart counter has a reason label")
	}
}

func TestStep(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f := Step(1, 0.2, at)
	if f(at.Add(-time.Nanosecond)) != 1 || f(at) != 0.2 {
		t.Errorf("Step(1, 0.2) = %v before and %v at the step, want 1 and 0.2", f(at.Add(-time.Nanosecond)), f(at))
	}
}

func TestBursts(t *testing.T) {
	cpu := Bursts(0.15, 2, 4, 2*time.Minute)
	hour := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	busy := 0
	for m := range 60 {
		if v := cpu(hour.Add(time.Duration(m)*time.Minute + 7*time.Second)); v == 2 {
			busy++
		} else if v != 0.15 {
			t.Fatalf("minute %d: %v, want 0.15 or 2", m, v)
		}
	}
	if busy != 8 {
		t.Errorf("%d busy minutes an hour, want 8 (four bursts of two)", busy)
	}
}
