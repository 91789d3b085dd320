package recommend

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

var start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// hourlyHistory is 26 samples of v, an hour apart: 25h of history.
func hourlyHistory(v float64) *usage.History {
	h := &usage.History{First: start, Last: start.Add(25 * time.Hour), Window: 7 * 24 * time.Hour}
	for i := range 26 {
		h.Values = append(h.Values, v)
		h.Times = append(h.Times, start.Add(time.Duration(i)*time.Hour))
	}
	return h
}

// withStartup is h with a startup peak of v, seen an hour before its end.
func withStartup(h *usage.History, v float64) *usage.History {
	h.StartupPeaks = []usage.Point{{Time: h.Last.Add(-time.Hour), Value: v}}
	return h
}

func TestResourceOf(t *testing.T) {
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
		wantCurrent     string
		wantRecommended string
		wantChanged     bool
		wantReason      string
		wantRequest     string
		wantLimit       string
	}{
		// Constant usage is its own percentile (the bucket ends above it):
		// 0.1115 x 1.3 = 0.14495 -> 145m, equal to the current 0.145:
		// written, not a change.
		{name: "same quantity is no change", policy: cpu, history: hourlyHistory(0.1115), wantCurrent: "145m", wantRecommended: "145m", wantRequest: "145m"},
		// 0.2 cores x 1.3 = 260m.
		{name: "cpu change", policy: cpu, history: hourlyHistory(0.2), wantCurrent: "145m", wantRecommended: "260m", wantChanged: true, wantRequest: "260m"},
		// 0.12 cores x 1.3 = 0.156 -> 160m, 10.3% above the current 145m:
		// changed.
		{name: "cpu above threshold", policy: cpu, history: hourlyHistory(0.12), wantCurrent: "145m", wantRecommended: "160m", wantChanged: true, wantRequest: "160m"},
		// 180Mi x 1.3 = 234Mi -> 236Mi, above the 200Mi limit.
		{name: "capped at the limit", policy: mem, history: hourlyHistory(180 << 20), wantCurrent: "100Mi",
			wantRecommended: "200Mi", wantChanged: true, wantReason: "capped at limit 200Mi", wantRequest: "200Mi"},
		// RequestsAndLimits: 200Mi:100Mi is a ratio of 2; 180Mi gives 236Mi
		// and a 472Mi limit.
		{name: "requests and limits", policy: collect.ResourcePolicy{Resource: corev1.ResourceMemory, BufferPercent: 30,
			ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits}, history: hourlyHistory(180 << 20), wantCurrent: "100Mi",
			wantRecommended: "236Mi", wantChanged: true, wantRequest: "236Mi", wantLimit: "472Mi"},
		// LimitsOnly: the limit 1 core keeps its ratio to the request 145m
		// (6.897): 260m x 6.897 = 1.7931 cores -> 1800m (50m steps). Current
		// and recommended are the limit's.
		{name: "limits only", policy: collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30,
			ControlledValues: v1alpha1.ContainerControlledValuesLimitsOnly}, history: hourlyHistory(0.2),
			wantCurrent: "1", wantRecommended: "1800m", wantChanged: true, wantLimit: "1800m"},
		// 95Mi x 1.3 = 123.5Mi, up to the 4Mi step: 124Mi.
		{name: "memory change", policy: mem, history: hourlyHistory(95 << 20), wantCurrent: "100Mi", wantRecommended: "124Mi", wantChanged: true, wantRequest: "124Mi"},
		// The same 95Mi, but the pods reached 150Mi in their first minutes.
		{name: "startup peak floors memory", policy: mem, history: withStartup(hourlyHistory(95<<20), 150<<20), wantCurrent: "100Mi",
			wantRecommended: "152Mi", wantChanged: true, wantRequest: "152Mi"},
		// Past the 200Mi limit, the limit wins, and the reason says so.
		{name: "startup peak capped at the limit", policy: mem, history: withStartup(hourlyHistory(95<<20), 300<<20), wantCurrent: "100Mi",
			wantRecommended: "200Mi", wantChanged: true, wantRequest: "200Mi", wantReason: "capped at limit 200Mi, below the startup peak 300Mi"},
		{name: "no samples", policy: mem, wantCurrent: "100Mi", wantReason: "insufficient data: no samples in the window"},
		{name: "too short a span", policy: cpu, wantCurrent: "145m",
			history:    &usage.History{Values: []float64{1, 1, 1}, First: time.Unix(0, 0), Last: time.Unix(120, 0)},
			wantReason: "insufficient data: 3 samples over 2m0s, need 12 over 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resourceOf(tt.policy, container, tt.history, Options{}.WithDefaults())
			if s(got.Current) != tt.wantCurrent || s(got.Recommended) != tt.wantRecommended || got.Changed != tt.wantChanged || got.Reason != tt.wantReason {
				t.Errorf("resourceOf() = %q -> %q changed %v reason %q, want %q -> %q changed %v reason %q",
					s(got.Current), s(got.Recommended), got.Changed, got.Reason, tt.wantCurrent, tt.wantRecommended, tt.wantChanged, tt.wantReason)
			}
			if s(got.Request) != tt.wantRequest || s(got.Limit) != tt.wantLimit {
				t.Errorf("resourceOf() writes request %q limit %q, want %q %q", s(got.Request), s(got.Limit), tt.wantRequest, tt.wantLimit)
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
	got, err := w.ReadEach(ctx, ns, map[usage.Settings][]usage.WorkloadRef{{}: ws}, nil)
	return got[usage.Settings{}], err
}

func (w *windowUsage) ReadEach(_ context.Context, _ string, groups map[usage.Settings][]usage.WorkloadRef, _ usage.FoldFunc) (map[usage.Settings]map[usage.WorkloadRef]usage.Usage, error) {
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

func TestItem(t *testing.T) {
	item := func(name string, f func(*collect.Item)) collect.Item {
		it := collect.Item{Namespace: "shop", Name: name,
			Annotations: map[string]string{"recommend-job.io/path": "clusters/prod"},
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
	items := []collect.Item{plain, hpa, windowed, peaks}

	reader := &windowUsage{history: hourlyHistory(0.1)}
	h, err := usage.ReadAll(context.Background(), reader, Wants(items), slog.New(slog.DiscardHandler))
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
	of := func(it collect.Item) plan.Item {
		u, err := h.Of(WantOf(it))
		return ForItem(it, u, err, Options{})
	}

	// 0.1 cores -> 130m; the limit keeps 200m:100m, 260m.
	for _, it := range []collect.Item{plain, windowed, peaks} {
		p := of(it)
		r := p.Containers[0].Resources[0]
		if s(r.Request) != "130m" || s(r.Limit) != "260m" || s(r.RecommendedLimit) != "260m" || s(r.CurrentLimit) != "200m" {
			t.Errorf("%s: writes request %s limit %s (%s -> %s), want 130m and 260m (200m -> 260m)", it.Name, s(r.Request), s(r.Limit), s(r.CurrentLimit), s(r.RecommendedLimit))
		}
		if r.Evidence == nil || r.Evidence.Limit != "260m" {
			t.Errorf("%s: evidence %+v, want the limit 260m", it.Name, r.Evidence)
		}
		if p.Object.Name != "web" || p.Annotations["recommend-job.io/path"] != "clusters/prod" || !p.Containers[0].Writes() {
			t.Errorf("%s: object %+v annotations %v, want web's and the item's", it.Name, p.Object, p.Annotations)
		}
	}
	p := of(hpa)
	if r := p.Containers[0].Resources[0]; p.Containers[0].Writes() || r.Reason != "held back: a HorizontalPodAutoscaler scales on cpu" || !r.HeldBack || s(r.Current) != "100m" {
		t.Errorf("hpa: resource %+v, want nothing written, the reason and the current 100m", r)
	}

	// Within the threshold: 130m against 125m is held back and not written.
	close := item("close", func(it *collect.Item) {
		it.Workload.Containers[0].Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("125m")}
	})
	r := of(close).Containers[0].Resources[0]
	if r.Request != nil || r.Limit != nil || r.Changed || s(r.Recommended) != "130m" ||
		r.Reason != "held back: request 130m is 4.0% from the current 125m, below the 10% change threshold" {
		t.Errorf("close: resource %+v, want nothing written, 130m held back", r)
	}
	// A percentile extension of 0.5 changes nothing for constant usage, but
	// shows in the evidence.
	p50 := item("p50", func(it *collect.Item) { it.Extensions.Percentile = 0.5; it.Extensions.HalfLife = 12 * time.Hour })
	if ev := of(p50).Containers[0].Resources[0].Evidence; ev == nil || ev.Percentile != 0.5 || ev.HalfLife != "12h0m0s" {
		t.Errorf("p50: evidence %+v, want percentile 0.5 and half-life 12h", ev)
	}
	// History that could not be read: every resource says why.
	down := ForItem(plain, nil, errors.New("connection refused"), Options{})
	if r := down.Containers[0].Resources[0]; r.Reason != plan.ReasonHistoryUnavailable+"connection refused" || r.Recommended != nil {
		t.Errorf("unreadable history: resource %+v, want the reason", r)
	}
	// An invalid item carries its code and cause, nothing else.
	bad := item("bad", func(it *collect.Item) {
		it.Invalid = &collect.ValidationError{Code: collect.CodeWorkloadMatchError, Message: "workload matched err"}
		it.Cause = errors.New("forbidden")
	})
	if p := ForItem(bad, nil, nil, Options{}); p.Valid || p.Error == nil || p.Error.Cause != "forbidden" || len(p.Containers) != 0 {
		t.Errorf("invalid: %+v, want its code and cause only", p)
	}
}

func TestOptionsFor(t *testing.T) {
	got := OptionsFor(Options{}, collect.Extensions{Percentile: 0.8, MemoryPercentile: 0.99, HalfLife: 12 * time.Hour})
	// percentile sets both; memoryPercentile overrides it for memory.
	if got.CPUPercentile != 0.8 || got.MemoryPercentile != 0.99 || got.HalfLife != 12*time.Hour {
		t.Errorf("OptionsFor() = cpu p%v memory p%v half-life %v, want 0.8, 0.99, 12h", got.CPUPercentile, got.MemoryPercentile, got.HalfLife)
	}
}

func TestObjectOf(t *testing.T) {
	rollout := &collect.Workload{
		ObjectRef: collect.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Namespace: "shop", Name: "web",
			Labels: map[string]string{"app": "rollout"}},
		Source: &collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web-template"},
			PodPrint:    `[["container app",""]]`},
	}
	// The print is the template's, which the source holds.
	want := plan.Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
		Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web-template"},
		PodPrint:    `[["container app",""]]`}
	if d := cmp.Diff(want, objectOf(rollout)); d != "" {
		t.Errorf("objectOf(rollout with workloadRef) (-want +got):\n%s", d)
	}
	plain := &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
		Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}}}
	if got := objectOf(plain); got.Kind != "Deployment" || got.Name != "web" || got.Labels["kustomize.toolkit.fluxcd.io/name"] != "apps" {
		t.Errorf("objectOf(deployment) = %+v, want the workload with its labels", got)
	}
}

// TestItemRefusesAContainerOfSeveralSources makes the plan of a workload
// one of whose containers' usage series came from two sources: each of
// that container's resources has no value, the current request and the
// sources as its reason, held back by an autoscaler or not; its other
// container is recommended as usual.
func TestItemRefusesAContainerOfSeveralSources(t *testing.T) {
	sources := []string{`job="evil-exporter"`, `job="kubelet"`}
	mixed := func(v float64) *usage.History {
		h := hourlyHistory(v)
		h.Sources = sources
		return h
	}
	for _, c := range []struct {
		name     string
		app      *usage.History // CPU and memory of app
		heldBack bool
		// wantApp is app's CPU recommendation, empty for none.
		wantApp string
	}{
		{name: "one source", app: hourlyHistory(0.1), wantApp: "130m"},
		{name: "one source named", app: func() *usage.History { h := hourlyHistory(0.1); h.Sources = sources[1:]; return h }(), wantApp: "130m"},
		{name: "two sources", app: mixed(1327.45)},
		{name: "two sources, held back by an HPA", app: mixed(1327.45), heldBack: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			policy := func(name string) collect.ContainerPolicy {
				return collect.ContainerPolicy{ContainerName: name, Resources: []collect.ResourcePolicy{
					{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}}
			}
			it := collect.Item{Namespace: "shop", Name: "web",
				Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
					Containers: []collect.Container{
						{Name: "app", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
						{Name: "sidecar"}}},
				Policies: []collect.ContainerPolicy{policy("app"), policy("sidecar")},
			}
			if c.heldBack {
				it.HeldBack = map[corev1.ResourceName]string{corev1.ResourceCPU: "a HorizontalPodAutoscaler scales on cpu"}
			}
			u := usage.Usage{
				"app":     {corev1.ResourceCPU: c.app, corev1.ResourceMemory: c.app},
				"sidecar": {corev1.ResourceCPU: hourlyHistory(0.01), corev1.ResourceMemory: hourlyHistory(0.01)},
			}
			p := ForItem(it, u, nil, Options{})
			app, sidecar := p.Containers[0], p.Containers[1]
			if c.wantApp != "" {
				if r := app.Resources[0]; s(r.Recommended) != c.wantApp || r.Reason != "" {
					t.Errorf("app cpu = %s (%q), want %s", s(r.Recommended), r.Reason, c.wantApp)
				}
			} else {
				want := `its usage series come from 2 sources: job="evil-exporter", job="kubelet"; not recommended`
				for i, r := range app.Resources {
					if r.Recommended != nil || r.Request != nil || r.Evidence != nil || r.HeldBack || !strings.HasPrefix(r.Reason, want) {
						t.Errorf("app %s = %s (%q, evidence %v), want none, the reason %q", r.Resource, s(r.Recommended), r.Reason, r.Evidence, want)
					}
					if wantCurrent := []string{"100m", "64Mi"}[i]; s(r.Current) != wantCurrent {
						t.Errorf("app %s current = %s, want %s", r.Resource, s(r.Current), wantCurrent)
					}
				}
				if app.Writes() {
					t.Error("app writes a value")
				}
			}
			// An HPA holds back every container's CPU: memory tells.
			if r := sidecar.Resources[1]; r.Recommended == nil || r.Reason != "" {
				t.Errorf("sidecar memory = %s (%q), want a value", s(r.Recommended), r.Reason)
			}
		})
	}
}
