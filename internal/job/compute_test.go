package job

import (
	"context"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/usage"
)

var start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// hourly is 26 samples of v, an hour apart: 25h of history.
func hourly(v float64) *usage.History {
	h := &usage.History{First: start, Last: start.Add(25 * time.Hour), Window: 7 * 24 * time.Hour}
	for i := range 26 {
		h.Values = append(h.Values, v)
		h.Times = append(h.Times, start.Add(time.Duration(i)*time.Hour))
	}
	return h
}

func TestRecommendResource(t *testing.T) {
	container := &collect.Container{
		Name:     "app",
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.145"), corev1.ResourceMemory: resource.MustParse("100Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Mi"), corev1.ResourceCPU: resource.MustParse("1")},
	}
	cpu := collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30}
	mem := collect.ResourcePolicy{Resource: corev1.ResourceMemory, BufferPercent: 30}
	tests := []struct {
		name            string
		policy          collect.ResourcePolicy
		history         *usage.History
		wantRecommended string
		wantChanged     bool
		wantReason      string
		wantRequest     string
		wantLimit       string
	}{
		// 0.1 cores: bucket end 0.110266 x 1.3 = 0.143346 -> 145m, equal to
		// the current 0.145: written, not a change.
		{name: "same quantity is no change", policy: cpu, history: hourly(0.1), wantRecommended: "145m", wantRequest: "145m"},
		// 0.2 cores: 0.215786 x 1.3 = 0.280522 -> 285m.
		{name: "cpu change", policy: cpu, history: hourly(0.2), wantRecommended: "285m", wantChanged: true, wantRequest: "285m"},
		// 0.12 cores: bucket 9 (log 1.6 / log 1.05 = 9.63), ends at
		// 0.2 x (1.05^10 - 1) = 0.125779, x 1.3 = 0.163513 -> 165m, 13.8%
		// above the current 145m: changed.
		{name: "cpu above threshold", policy: cpu, history: hourly(0.12), wantRecommended: "165m", wantChanged: true, wantRequest: "165m"},
		// 180Mi: bucket 13, ends at 186.91Mi, x 1.3 = 242.98Mi -> 244Mi, above
		// the 200Mi limit.
		{name: "capped at the limit", policy: mem, history: hourly(180 << 20),
			wantRecommended: "200Mi", wantChanged: true, wantReason: "capped at limit 200Mi", wantRequest: "200Mi"},
		// RequestsAndLimits: 200Mi:100Mi is a ratio of 2; 180Mi gives 244Mi
		// and a 488Mi limit.
		{name: "requests and limits", policy: collect.ResourcePolicy{Resource: corev1.ResourceMemory, BufferPercent: 30,
			ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits}, history: hourly(180 << 20),
			wantRecommended: "244Mi", wantChanged: true, wantRequest: "244Mi", wantLimit: "488Mi"},
		// LimitsOnly: the limit 1 core keeps its ratio to the request 145m
		// (6.897): 285m x 6.897 = 1.9655 cores -> 2 (50m steps).
		{name: "limits only", policy: collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30,
			ControlledValues: v1alpha1.ContainerControlledValuesLimitsOnly}, history: hourly(0.2),
			wantRecommended: "2", wantChanged: true, wantLimit: "2"},
		// 95Mi: bucket 8, ends at 105.16Mi, x 1.3 = 136.70Mi, up to the 4Mi
		// step: 140Mi.
		{name: "memory change", policy: mem, history: hourly(95 << 20), wantRecommended: "140Mi", wantChanged: true, wantRequest: "140Mi"},
		{name: "no samples", policy: mem, wantReason: "insufficient data: no samples in the window"},
		{name: "too short a span", policy: cpu,
			history:    &usage.History{Values: []float64{1, 1, 1}, First: time.Unix(0, 0), Last: time.Unix(120, 0)},
			wantReason: "insufficient data: 3 samples over 2m0s, need 12 over 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, req, lim := recommendResource(tt.policy, container, tt.history, recommend.Options{}.WithDefaults())
			if got.Recommended != tt.wantRecommended || got.Changed != tt.wantChanged || got.Reason != tt.wantReason {
				t.Errorf("recommendResource() = %q changed %v reason %q, want %q changed %v reason %q",
					got.Recommended, got.Changed, got.Reason, tt.wantRecommended, tt.wantChanged, tt.wantReason)
			}
			if s(req) != tt.wantRequest || s(lim) != tt.wantLimit {
				t.Errorf("recommendResource() writes request %q limit %q, want %q %q", s(req), s(lim), tt.wantRequest, tt.wantLimit)
			}
		})
	}
}

func s(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

// windowUsage answers every workload with the same history and records the
// reads and the settings of their groups.
type windowUsage struct {
	history *usage.History
	reads   [][]usage.Settings
}

func (w *windowUsage) Read(ctx context.Context, ns string, ws []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	got, err := w.ReadEach(ctx, ns, map[usage.Settings][]usage.WorkloadRef{{}: ws})
	return got[usage.Settings{}], err
}

func (w *windowUsage) ReadEach(_ context.Context, _ string, groups map[usage.Settings][]usage.WorkloadRef) (map[usage.Settings]map[usage.WorkloadRef]usage.Usage, error) {
	var settings []usage.Settings
	out := map[usage.Settings]map[usage.WorkloadRef]usage.Usage{}
	for s, ws := range groups {
		settings = append(settings, s)
		out[s] = map[usage.WorkloadRef]usage.Usage{}
		for _, ref := range ws {
			out[s][ref] = usage.Usage{"app": {corev1.ResourceCPU: w.history, corev1.ResourceMemory: w.history}}
		}
	}
	sort.Slice(settings, func(i, j int) bool {
		a, b := settings[i], settings[j]
		return a.Window < b.Window || a.Window == b.Window && a.PeakInterval < b.PeakInterval
	})
	w.reads = append(w.reads, settings)
	return out, nil
}

func TestRecommendItem(t *testing.T) {
	item := func(name string, f func(*collect.Item)) collect.Item {
		it := collect.Item{Namespace: "shop", Name: name,
			Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
				Containers: []collect.Container{{Name: "app",
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}},
			Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
				{Resource: corev1.ResourceCPU, BufferPercent: 30, ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits}}}},
		}
		f(&it)
		return it
	}
	plain := item("plain", func(*collect.Item) {})
	// An HPA scales web on CPU: its request stays.
	hpa := item("hpa", func(it *collect.Item) {
		it.HeldBack = map[corev1.ResourceName]string{corev1.ResourceCPU: "a HorizontalPodAutoscaler scales on cpu"}
	})
	// Its own window, and its own peak interval: read with the others.
	windowed := item("windowed", func(it *collect.Item) { it.Extensions.Window = 14 * 24 * time.Hour })
	peaks := item("peaks", func(it *collect.Item) { it.Extensions.PeakInterval = 10 * time.Minute })

	reader := &windowUsage{history: hourly(0.1)}
	h, err := readUsage(context.Background(), []collect.Item{plain, hpa, windowed, peaks}, reader, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// One read for the namespace, of three groups: the run's settings, 14
	// days, and 10-minute peaks; the two items on the run's settings share
	// one.
	wantReads := [][]usage.Settings{{{}, {PeakInterval: 10 * time.Minute}, {Window: 14 * 24 * time.Hour}}}
	if diff := cmp.Diff(wantReads, reader.reads); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}

	// 0.1 cores -> 145m; the limit keeps 200m:100m, 290m.
	want := []render.Change{{
		Target:    render.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Container: "app", Requests: map[string]string{"cpu": "145m"}, Limits: map[string]string{"cpu": "290m"},
	}}
	for _, it := range []collect.Item{plain, windowed, peaks} {
		entry, changes := recommendItem(it, h, Config{})
		if diff := cmp.Diff(want, changes); diff != "" {
			t.Errorf("%s: changes differ (-want +got):\n%s", it.Name, diff)
		}
		if ev := entry.Containers[0].Resources[0].Evidence; ev == nil || ev.Limit != "290m" {
			t.Errorf("%s: evidence %+v, want the limit 290m", it.Name, ev)
		}
	}
	entry, changes := recommendItem(hpa, h, Config{})
	if res := entry.Containers[0].Resources[0]; len(changes) != 0 || res.Reason != "held back: a HorizontalPodAutoscaler scales on cpu" || !res.HeldBack {
		t.Errorf("hpa: changes %+v, resource %+v, want none and the reason", changes, entry.Containers[0].Resources[0])
	}

	// Within the threshold: 145m against 140m is held back and not written.
	close := item("close", func(it *collect.Item) {
		it.Workload.Containers[0].Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("140m")}
	})
	entry, changes = recommendItem(close, h, Config{})
	res := entry.Containers[0].Resources[0]
	if len(changes) != 0 || res.Changed || res.Recommended != "145m" ||
		res.Reason != "held back: request 145m is 3.6% from the current 140m, below the 10% change threshold" {
		t.Errorf("close: changes %+v, resource %+v, want none, 145m held back", changes, res)
	}
	// A percentile extension of 0.5 changes nothing for constant usage, but
	// shows in the evidence.
	p50 := item("p50", func(it *collect.Item) { it.Extensions.Percentile = 0.5; it.Extensions.HalfLife = 12 * time.Hour })
	entry, _ = recommendItem(p50, h, Config{})
	if ev := entry.Containers[0].Resources[0].Evidence; ev == nil || ev.Percentile != 0.5 || ev.HalfLife != "12h0m0s" {
		t.Errorf("p50: evidence %+v, want percentile 0.5 and half-life 12h", ev)
	}
}
