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
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/usage"
)

type staticCollector []collect.Item

func (s staticCollector) Collect(context.Context) ([]collect.Item, error) { return s, nil }

func (s staticCollector) WriteStatus(context.Context, plan.Item) error { return nil }

// statusRecorder records what Run hands over for the status.
type statusRecorder struct {
	staticCollector
	recs     map[string][]v1alpha1.ContainerResources
	provided map[string]error
}

func (r *statusRecorder) WriteStatus(_ context.Context, p plan.Item) error {
	r.recs[p.Namespace], r.provided[p.Namespace] = collect.Recommendations(p)
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
	want := rep.Items[0].Containers[0].Resources[0].Recommended
	if q := up[0].Requests.Target[corev1.ResourceCPU]; want == nil || q.Cmp(*want) != 0 {
		t.Errorf("up cpu target = %s, want the reported %v", q.String(), want)
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
	failing := &failingUsage{}
	items := staticCollector{validItem("a"), validItem("b")}
	_, err := Run(context.Background(), Config{DryRun: true}, items, failing, slog.New(slog.DiscardHandler))
	if !errors.Is(err, usage.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Run() error = %v, want usage.ErrUnavailable with the cause", err)
	}
	if failing.calls != 2 {
		t.Errorf("usage read %d times, want once per namespace (2)", failing.calls)
	}
}

func TestRunReportsInvalidItems(t *testing.T) {
	items := staticCollector{{Namespace: "a", Name: "bad", Invalid: &collect.ValidationError{Code: collect.CodeWorkloadNotFound, Message: "workload not found"}}}
	rep, err := Run(context.Background(), Config{DryRun: true}, items, &failingUsage{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := plan.Item{Namespace: "a", Name: "bad", Error: &plan.Error{Code: collect.CodeWorkloadNotFound, Message: "workload not found"}}
	if len(rep.Items) != 1 || rep.Items[0].Valid || *rep.Items[0].Error != *want.Error {
		t.Errorf("Run() items = %+v, want %+v", rep.Items, want)
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
	down := rep.Items[0].Containers[0].Resources[0]
	if down.Recommended != nil || down.Reason != "usage history unavailable: connection refused" {
		t.Errorf("down/web cpu = %+v, want no recommendation and the cause", down)
	}
	// 0.2 cores' histogram bucket ends at 0.215786, above every sample, so
	// the percentile is 0.2; x 1.3 = 260m.
	if up := rep.Items[1].Containers[0].Resources[0]; up.Recommended == nil || up.Recommended.String() != "260m" {
		t.Errorf("up/web cpu = %+v, want 260m", up)
	}
}

// TestRecommendAllLetsItemsGo checks that each item is cleared once its
// plan is made, whether its namespace was read, could not be, or it was
// invalid: a run holds the plans, not every target's objects besides.
func TestRecommendAllLetsItemsGo(t *testing.T) {
	items := []collect.Item{validItem("down"), validItem("up"),
		{Namespace: "a", Name: "bad", Invalid: &collect.ValidationError{Code: collect.CodeWorkloadNotFound, Message: "workload not found"}}}
	p := &plan.Plan{}
	if _, err := recommendAll(t.Context(), p, items, partialUsage{}, Config{DryRun: true}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it.Workload != nil || it.Namespace != "" || it.Invalid != nil {
			t.Errorf("item %d after recommendAll = %+v, want it cleared", i, it)
		}
	}
	if up := p.Items[1]; up.Namespace != "up" || up.Containers[0].Resources[0].Recommended == nil {
		t.Errorf("the plan of up/web = %+v, want its recommendation", up)
	}
	if bad := p.Items[2]; bad.Error == nil || bad.Error.Code != collect.CodeWorkloadNotFound {
		t.Errorf("the plan of a/bad = %+v, want its error", bad)
	}
}

func TestChangesOf(t *testing.T) {
	cpu, mem, limit := resource.MustParse("200m"), resource.MustParse("1Gi"), resource.MustParse("400m")
	p := &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web", Valid: true,
			Annotations: map[string]string{render.AnnotationMode: "patch", render.AnnotationPath: "clusters/prod"},
			Object: plan.Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
				Annotations: map[string]string{render.ArgoTrackingID: "shop:apps/Deployment:shop/web-template"},
				PodPrint:    `[["container app",""],["container app image","nginx:1.26"]]`},
			Containers: []plan.Container{
				{Name: "app", Resources: []plan.Resource{
					{Resource: corev1.ResourceCPU, Recommended: &cpu, Request: &cpu, Limit: &limit},
					{Resource: corev1.ResourceMemory, Recommended: &mem, LimitsOnly: true, Limit: &mem},
				}},
				// Held back: nothing to write, no change.
				{Name: "sidecar", Resources: []plan.Resource{{Resource: corev1.ResourceCPU, Recommended: &cpu, HeldBack: true}}},
			}},
		{Namespace: "shop", Name: "bad", Error: &plan.Error{Code: "WorkloadNotFound"}},
	}}
	want := []render.Change{{
		Target: render.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-template",
			Annotations: map[string]string{render.ArgoTrackingID: "shop:apps/Deployment:shop/web-template"},
			PodPrint:    `[["container app",""],["container app image","nginx:1.26"]]`},
		Container: "app",
		Requests:  render.ValuesOf(corev1.ResourceList{corev1.ResourceCPU: cpu}),
		Limits:    render.ValuesOf(corev1.ResourceList{corev1.ResourceCPU: limit, corev1.ResourceMemory: mem}),
		Mode:      render.ModePatch, Path: "clusters/prod", Owner: "shop/web",
	}}
	if d := cmp.Diff(want, changesOf(p)); d != "" {
		t.Errorf("changesOf() (-want +got):\n%s", d)
	}
	if n := changeCount(p); n != len(want) {
		t.Errorf("changeCount() = %d, want %d", n, len(want))
	}
}

// failingRecord is a record that reads as empty and cannot be written.
type failingRecord struct{ err error }

func (failingRecord) Load(context.Context) ([]gitops.Pushed, error) { return nil, nil }

func (r failingRecord) Update(context.Context, func([]gitops.Pushed) []gitops.Pushed) error {
	return r.err
}

// TestRecordRunFailsTheRun checks that a run whose pushes could not be
// recorded fails (ErrUnrecorded, which cmd/recommend-job maps to exit
// code 1) and says why in the plan, and that a run whose record was
// written keeps its own outcome. Before, the run completed with only
// the plan's unrecorded.
func TestRecordRunFailsTheRun(t *testing.T) {
	refused := errors.New(`ConfigMap "recommend-job-record" is invalid: []: Too long: may not be more than 1048576 bytes`)
	pushFailed := errors.New("pushing: refused")
	tests := []struct {
		name     string
		record   Record
		runErr   error
		wantErrs []error
		wantNil  bool
	}{
		{name: "record refused: the run failed", record: failingRecord{refused}, wantErrs: []error{ErrUnrecorded, refused}},
		{name: "record refused after a failed push: both said", record: failingRecord{refused}, runErr: pushFailed,
			wantErrs: []error{ErrUnrecorded, refused, pushFailed}},
		{name: "recorded: the run's own outcome", record: failingRecord{nil}, wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &run{Config: Config{Record: tt.record}, ledger: &ledger{added: []gitops.Pushed{{Commit: "c1", Branch: "recommend-job/shop",
				Time: time.Now(), Changes: "Recommend-Job-Change: shop/web app cpu 1 500m\n"}}}}
			p := &plan.Plan{}
			err := recordRun(context.Background(), cfg, p, tt.runErr, slog.New(slog.DiscardHandler))
			if tt.wantNil {
				if err != nil || p.Unrecorded != "" {
					t.Fatalf("recordRun() = %v, unrecorded %q; want no error", err, p.Unrecorded)
				}
				return
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("recordRun() = %v, want it to be %v", err, want)
				}
			}
			if !strings.Contains(p.Unrecorded, "Too long") {
				t.Errorf("plan's unrecorded = %q, want the record's error", p.Unrecorded)
			}
		})
	}
}
