package job

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

func TestRecommendResource(t *testing.T) {
	container := &collect.Container{
		Name:     "app",
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.13"), corev1.ResourceMemory: resource.MustParse("100Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Mi")},
	}
	day := func(values ...float64) *usage.History {
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		return &usage.History{Values: values, First: start, Last: start.Add(25 * time.Hour)}
	}
	tests := []struct {
		name            string
		policy          collect.ResourcePolicy
		history         *usage.History
		wantRecommended string
		wantChanged     bool
		wantReason      string
	}{
		// 0.1 x 1.3 = 130m, equal to the current 0.13 written differently.
		{name: "same quantity is no change", policy: collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30},
			history: day(0.1), wantRecommended: "130m"},
		// 0.2 x 1.3 = 260m.
		{name: "cpu change", policy: collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30},
			history: day(0.2), wantRecommended: "260m", wantChanged: true},
		// 180Mi x 1.3 = 234Mi, above the 200Mi limit.
		{name: "capped at the limit", policy: collect.ResourcePolicy{Resource: corev1.ResourceMemory, BufferPercent: 30},
			history: day(180 << 20), wantRecommended: "200Mi", wantChanged: true, wantReason: "capped at the limit 200Mi"},
		{name: "no samples", policy: collect.ResourcePolicy{Resource: corev1.ResourceMemory, BufferPercent: 30},
			wantReason: "insufficient data: no samples in the window"},
		{name: "too short a span", policy: collect.ResourcePolicy{Resource: corev1.ResourceCPU, BufferPercent: 30},
			history:    &usage.History{Values: []float64{1, 1, 1}, First: time.Unix(0, 0), Last: time.Unix(120, 0)},
			wantReason: "insufficient data: 3 samples over 2m0s, need 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := recommendResource(tt.policy, container, tt.history, DefaultMinSpan)
			if got.Recommended != tt.wantRecommended || got.Changed != tt.wantChanged || got.Reason != tt.wantReason {
				t.Errorf("recommendResource() = %q changed %v reason %q, want %q changed %v reason %q",
					got.Recommended, got.Changed, got.Reason, tt.wantRecommended, tt.wantChanged, tt.wantReason)
			}
		})
	}
}

type staticCollector []collect.Item

func (s staticCollector) Collect(context.Context) ([]collect.Item, error) { return s, nil }

type failingUsage struct{ calls int }

func (f *failingUsage) Read(context.Context, string, []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	f.calls++
	return nil, errors.New("connection refused")
}

func validItem(ns string) collect.Item {
	return collect.Item{
		Namespace: ns, Name: "web",
		Workload: &collect.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web",
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
		out[w] = usage.Usage{"app": {corev1.ResourceCPU: {Values: []float64{0.2}, First: start, Last: start.Add(48 * time.Hour)}}}
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
	if up := rep.ResourceRecommends[1].Containers[0].Resources[0]; up.Recommended != "260m" {
		t.Errorf("up/web cpu = %+v, want 260m", up)
	}
}

func TestCommitMessage(t *testing.T) {
	web := &report.Entry{Namespace: "shop", Name: "web-rec",
		Containers: []report.Container{
			{Name: "app", Resources: []report.Resource{
				{Resource: "cpu", Current: "500m", Recommended: "390m", Changed: true},
				{Resource: "memory", Current: "128Mi"},
			}},
			{Name: "init", Resources: []report.Resource{{Resource: "cpu", Recommended: "10m", Changed: true}}},
		}}
	target := render.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	landed := []landedChange{
		{Result: render.Result{File: "apps/web.yaml", Changed: true, Change: render.Change{Target: target, Container: "app", Requests: map[string]string{"cpu": "390m"}}}, entry: web},
		{Result: render.Result{File: "apps/web.yaml", Changed: true, Change: render.Change{Target: target, Container: "init", Requests: map[string]string{"cpu": "10m"}}}, entry: web},
	}
	want := "Right-size resource requests\n\n" +
		"shop/web-rec: Deployment web (apps/web.yaml)\n" +
		"  app: cpu 500m -> 390m\n" +
		"  init: cpu none -> 10m\n"
	if got := commitMessage(landed); got != want {
		t.Errorf("commitMessage() =\n%s\nwant\n%s", got, want)
	}
}
