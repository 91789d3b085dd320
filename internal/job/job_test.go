package job

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

type staticCollector []collect.Item

func (s staticCollector) Collect(context.Context) ([]collect.Item, error) { return s, nil }

func (s staticCollector) WriteStatus(context.Context, collect.Item, []v1alpha1.ContainerResources, error) error {
	return nil
}

// statusRecorder records what Run hands over for the status.
type statusRecorder struct {
	staticCollector
	recs     map[string][]v1alpha1.ContainerResources
	provided map[string]error
}

func (r *statusRecorder) WriteStatus(_ context.Context, item collect.Item, recs []v1alpha1.ContainerResources, provided error) error {
	r.recs[item.Namespace] = recs
	r.provided[item.Namespace] = provided
	return nil
}

func TestRunHandsOverStatus(t *testing.T) {
	held := validItem("held")
	held.HeldBack = map[corev1.ResourceName]string{corev1.ResourceCPU: "a HorizontalPodAutoscaler scales on cpu"}
	rec := &statusRecorder{
		staticCollector: staticCollector{validItem("up"), validItem("down"), held},
		recs:            map[string][]v1alpha1.ContainerResources{},
		provided:        map[string]error{},
	}
	// Not a dry run, so statuses are written; without a git url the run
	// then stops.
	rep, err := Run(context.Background(), Config{}, rec, partialUsage{}, slog.New(slog.DiscardHandler))
	if err == nil || rep == nil {
		t.Fatalf("Run() without a git url = %v, %v; want the report and an error", rep, err)
	}
	up := rec.recs["up"]
	if len(up) != 1 || up[0].ContainerName != "app" || up[0].Requests == nil {
		t.Fatalf("up status = %+v, want app's cpu target", up)
	}
	want := rep.ResourceRecommends[0].Containers[0].Resources[0].Recommended
	if q := up[0].Requests.Target[corev1.ResourceCPU]; want == "" || q.String() != want {
		t.Errorf("up cpu target = %s, want the reported %q", q.String(), want)
	}
	if err := rec.provided["down"]; err == nil || !strings.Contains(err.Error(), "usage history unavailable") {
		t.Errorf("down provided = %v, want the missing history named", err)
	}
	if err := rec.provided["held"]; err != nil || len(rec.recs["held"]) != 0 {
		t.Errorf("held = %+v, %v; want no target and no error: an HPA hold-back is deliberate", rec.recs["held"], err)
	}
}

type failingUsage struct{ calls int }

func (f *failingUsage) Read(context.Context, string, []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	f.calls++
	return nil, errors.New("connection refused")
}

func validItem(ns string) collect.Item {
	return collect.Item{
		Namespace: ns, Name: "web",
		Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			Containers: []collect.Container{{Name: "app"}}},
		Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{{Resource: corev1.ResourceCPU, BufferPercent: 30}}}},
	}
}

func TestRunWithoutUsageHistoryFails(t *testing.T) {
	usage := &failingUsage{}
	items := staticCollector{validItem("a"), validItem("b")}
	_, err := Run(context.Background(), Config{DryRun: true}, items, usage, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrUsageUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Run() error = %v, want ErrUsageUnavailable with the cause", err)
	}
	if usage.calls != 2 {
		t.Errorf("usage read %d times, want once per namespace (2)", usage.calls)
	}
}

func TestRunReportsInvalidItems(t *testing.T) {
	items := staticCollector{{Namespace: "a", Name: "bad", Invalid: &collect.ValidationError{Code: collect.CodeWorkloadNotFound, Message: "workload not found"}}}
	rep, err := Run(context.Background(), Config{DryRun: true}, items, &failingUsage{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := report.Entry{Namespace: "a", Name: "bad", Error: &report.Error{Code: collect.CodeWorkloadNotFound, Message: "workload not found"}}
	if len(rep.ResourceRecommends) != 1 || rep.ResourceRecommends[0].Valid || *rep.ResourceRecommends[0].Error != *want.Error {
		t.Errorf("Run() entries = %+v, want %+v", rep.ResourceRecommends, want)
	}
}

type partialUsage struct{}

func (partialUsage) Read(_ context.Context, ns string, ws []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	if ns == "down" {
		return nil, errors.New("connection refused")
	}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	out := map[usage.WorkloadRef]usage.Usage{}
	for _, w := range ws {
		// 12 samples, the least the algorithm takes, all counted at Last.
		out[w] = usage.Usage{"app": {corev1.ResourceCPU: {Values: slices.Repeat([]float64{0.2}, 12), First: start, Last: start.Add(48 * time.Hour)}}}
	}
	return out, nil
}

func TestRunReportsNamespacesWithoutHistory(t *testing.T) {
	items := staticCollector{validItem("down"), validItem("up")}
	rep, err := Run(context.Background(), Config{DryRun: true}, items, partialUsage{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	down := rep.ResourceRecommends[0].Containers[0].Resources[0]
	if down.Recommended != "" || down.Reason != "usage history unavailable: connection refused" {
		t.Errorf("down/web cpu = %+v, want no recommendation and the cause", down)
	}
	// 0.2 cores' histogram bucket ends at 0.215786; x 1.3 = 0.280522, up to
	// the 5m step: 285m.
	if up := rep.ResourceRecommends[1].Containers[0].Resources[0]; up.Recommended != "285m" {
		t.Errorf("up/web cpu = %+v, want 285m", up)
	}
}

func TestRenderTarget(t *testing.T) {
	rollout := collect.Item{Namespace: "shop", Workload: &collect.Workload{
		ObjectRef: collect.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Namespace: "shop", Name: "web",
			Labels: map[string]string{"app": "rollout"}},
		Source: &collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
			Annotations: map[string]string{render.ArgoTrackingID: "shop:apps/Deployment:shop/web-template"}},
	}}
	got := renderTarget(rollout)
	want := render.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
		Annotations: map[string]string{render.ArgoTrackingID: "shop:apps/Deployment:shop/web-template"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("renderTarget(rollout with workloadRef) (-want +got):\n%s", d)
	}
	plain := collect.Item{Namespace: "shop", Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
		Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}}}}
	if got := renderTarget(plain); got.Kind != "Deployment" || got.Name != "web" || got.Labels["kustomize.toolkit.fluxcd.io/name"] != "apps" {
		t.Errorf("renderTarget(deployment) = %+v, want the workload with its labels", got)
	}
}

func TestStatusOfLimits(t *testing.T) {
	policy := func(cv v1alpha1.ContainerControlledValues) []collect.ContainerPolicy {
		return []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{{Resource: corev1.ResourceCPU, ControlledValues: cv}}}}
	}
	tests := []struct {
		name         string
		cv           v1alpha1.ContainerControlledValues
		res          report.Resource
		wantRequests string
		wantLimits   string
	}{
		{name: "requests only", cv: v1alpha1.ContainerControlledValuesRequestsOnly,
			res: report.Resource{Resource: "cpu", Recommended: "200m"}, wantRequests: "200m"},
		{name: "requests and limits", cv: v1alpha1.ContainerControlledValuesRequestsAndLimits,
			res: report.Resource{Resource: "cpu", Recommended: "200m", RecommendedLimit: "400m"}, wantRequests: "200m", wantLimits: "400m"},
		{name: "limits only", cv: v1alpha1.ContainerControlledValuesLimitsOnly,
			res: report.Resource{Resource: "cpu", Recommended: "400m"}, wantLimits: "400m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := collect.Item{Policies: policy(tt.cv)}
			entry := report.Entry{Containers: []report.Container{{Name: "app", Resources: []report.Resource{tt.res}}}}
			recs, err := statusOf(item, entry)
			if err != nil || len(recs) != 1 {
				t.Fatalf("statusOf() = %+v, %v", recs, err)
			}
			got := func(l *v1alpha1.ContainerResourceList) string {
				if l == nil {
					return ""
				}
				q := l.Target[corev1.ResourceCPU]
				return q.String()
			}
			if got(recs[0].Requests) != tt.wantRequests || got(recs[0].Limits) != tt.wantLimits {
				t.Errorf("status requests %q limits %q, want %q and %q", got(recs[0].Requests), got(recs[0].Limits), tt.wantRequests, tt.wantLimits)
			}
		})
	}
}

func TestMessageDataListsLimits(t *testing.T) {
	entry := &report.Entry{Namespace: "shop", Name: "web", Containers: []report.Container{{Name: "app", Resources: []report.Resource{
		{Resource: "cpu", Current: "500m", Recommended: "200m", CurrentLimit: "1", RecommendedLimit: "400m", Changed: true},
		{Resource: "memory", Current: "1Gi", Recommended: "512Mi", Changed: true}, // LimitsOnly: the limit's values
	}}}}
	target := render.Target{Kind: "Deployment", Namespace: "shop", Name: "web"}
	landed := []landedChange{{Result: render.Result{File: "web.yaml", Changed: true, Change: render.Change{
		Target: target, Container: "app",
		Requests: map[string]string{"cpu": "200m"},
		Limits:   map[string]string{"cpu": "400m", "memory": "512Mi"},
	}}, entry: entry}}
	data := messageData(Config{}, landed)
	var got []string
	for _, r := range data.Workloads[0].Containers[0].Resources {
		got = append(got, r.Resource+" "+r.Current+" -> "+r.Recommended)
	}
	want := []string{"cpu 500m -> 200m", "cpu limit 1 -> 400m", "memory limit 1Gi -> 512Mi"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("message resources (-want +got):\n%s", d)
	}
}

func TestAlgorithmTakesTheExtensions(t *testing.T) {
	item := collect.Item{Extensions: collect.Extensions{Percentile: 0.8, MemoryPercentile: 0.99, HalfLife: 12 * time.Hour}}
	got := algorithm(Config{}, item)
	// percentile sets both; memoryPercentile overrides it for memory.
	if got.CPUPercentile != 0.8 || got.MemoryPercentile != 0.99 || got.HalfLife != 12*time.Hour {
		t.Errorf("algorithm() = cpu p%v memory p%v half-life %v, want 0.8, 0.99, 12h", got.CPUPercentile, got.MemoryPercentile, got.HalfLife)
	}
}
