//go:build integration

package job

import (
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	synthetic "github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestRunRefusesForeignSeries runs on a real Prometheus holding two days
// of namespace shop as the kubelet's cAdvisor writes it (job="kubelet"):
// web's containers app (0.1 cores, 200Mi) and sidecar (0.01 cores, 20Mi),
// and api's app (0.3 cores, 200Mi). Another job, evil-exporter, writes
// series under web's app's namespace, pod and container labels, as a
// Prometheus honouring scraped labels keeps them: 1327.45 cores and 1Ti.
// Read from Prometheus or VictoriaMetrics, with the ownership listing (the
// CPU query a rate alone) or without (the CPU query aggregated), web's app
// gets no value, each resource
// naming both sources; web's sidecar and api's app get theirs, as if no
// series were forged. With prometheus-label-filter set to the kubelet's
// job, web's app gets its own values.
func TestRunRefusesForeignSeries(t *testing.T) {
	const mib = 1 << 20
	now := time.Now().UTC().Truncate(time.Minute)
	start := now.Add(-48 * time.Hour)
	webPod := synthetic.Rollouts("web", 1, 1, start, now)[0].Pods[0]
	apiPod := synthetic.Rollouts("api", 1, 1, start, now)[0].Pods[0]
	genuine := []synthetic.Container{
		{Namespace: "shop", Pod: webPod, Container: "app", Start: start, End: now, CPU: synthetic.Constant(0.1), Memory: synthetic.Constant(200 * mib)},
		{Namespace: "shop", Pod: webPod, Container: "sidecar", Start: start, End: now, CPU: synthetic.Constant(0.01), Memory: synthetic.Constant(20 * mib)},
		{Namespace: "shop", Pod: apiPod, Container: "app", Start: start, End: now, CPU: synthetic.Constant(0.3), Memory: synthetic.Constant(200 * mib)},
	}
	series := synthetic.Series(genuine, time.Minute)
	for _, s := range synthetic.Series([]synthetic.Container{{Namespace: "shop", Pod: webPod, Container: "app", Start: start, End: now,
		CPU: synthetic.Constant(1327.45), Memory: synthetic.Constant(1 << 40)}}, time.Minute) {
		s.Labels = maps.Clone(s.Labels)
		s.Labels["job"] = "evil-exporter"
		series = append(series, s)
	}
	promAPI := testbedtest.Prometheus(t, series)

	item := func(name string, containers ...string) collect.Item {
		it := collect.Item{Namespace: "shop", Name: name,
			Target:   v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name}},
		}
		for _, c := range containers {
			it.Workload.Containers = append(it.Workload.Containers, collect.Container{Name: c})
			it.Policies = append(it.Policies, collect.ContainerPolicy{ContainerName: c, Resources: []collect.ResourcePolicy{
				{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}})
		}
		return it
	}
	const refusal = `its usage series come from 2 sources: job="evil-exporter", job="kubelet"; not recommended`
	vm, err := usage.NewClient(testbedtest.VictoriaMetrics(t, series), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		api    usage.RangeQuerier
		owners bool
		// filter is prometheus-label-filter's, which picks one source:
		// web's app then gets its own values.
		filter string
	}{
		{"prometheus, listed", promAPI, true, ""},
		{"prometheus, aggregated", promAPI, false, ""},
		{"victoriametrics, listed", vm, true, ""},
		{"victoriametrics, aggregated", vm, false, ""},
		{"prometheus, the kubelet's alone", promAPI, true, `job="kubelet"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Run(t.Context(), Config{DryRun: true}, itemsCollector{item("web", "app", "sidecar"), item("api", "app")},
				usage.NewReader(c.api, usage.WithOwnership(c.owners), usage.WithLabelFilter(c.filter), usage.WithClock(func() time.Time { return now })), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			got := map[string]plan.Resource{}
			for _, it := range rep.Items {
				for _, c := range it.Containers {
					for _, r := range c.Resources {
						got[it.Name+"/"+c.Name+" "+string(r.Resource)] = r
					}
				}
			}
			want := map[string]string{"web/sidecar cpu": "13m", "web/sidecar memory": "26Mi", "api/app cpu": "390m", "api/app memory": "260Mi"}
			if c.filter != "" {
				want["web/app cpu"], want["web/app memory"] = "130m", "260Mi"
			} else {
				for _, key := range []string{"web/app cpu", "web/app memory"} {
					r := got[key]
					t.Logf("%s: recommended %s, reason %q", key, r.Recommended, r.Reason)
					if r.Recommended != nil || !strings.HasPrefix(r.Reason, refusal) {
						t.Errorf("%s = %s (%q), want no value and the reason %q", key, r.Recommended, r.Reason, refusal)
					}
				}
			}
			// 0.1 cores and 200Mi, 0.01 cores and 20Mi, 0.3 cores and
			// 200Mi, plus 30%.
			for key, want := range want {
				if r := got[key]; r.Recommended == nil || r.Recommended.String() != want || r.Reason != "" {
					t.Errorf("%s = %s (%q), want %s", key, r.Recommended, r.Reason, want)
				}
			}
		})
	}
}
