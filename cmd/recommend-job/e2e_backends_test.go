//go:build integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndBackends runs the end-to-end history of TestEndToEnd (web's
// week over three rollouts, next to web-api) against each metrics backend
// the test bed serves, in a dry run: each must recommend what Prometheus
// does, a strict one too, and doctor must name it.
func TestEndToEndBackends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	history := webHistory(now)
	bed := testbedtest.Start(t, testbed.Options{History: history})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	args := append(bedArgs(t, bed, repoURL, "--git-path", "clusters"), "--dry-run")

	backends := []struct {
		name string
		url  func(t *testing.T) string
		// doctor are lines doctor must print.
		doctor []string
	}{
		{name: "prometheus", url: func(*testing.T) string { return bed.Prometheus.URL },
			doctor: []string{"ok    backend: Prometheus 2.", "query.max-samples=50000000"}},
		{name: "victoriametrics", url: func(t *testing.T) string { return testbedtest.VictoriaMetrics(t, history) },
			doctor: []string{"ok    backend: VictoriaMetrics\n"}},
		// Every query of the namespace's week is refused whole.
		{name: "victoriametrics with a small sample limit", url: func(t *testing.T) string {
			return testbedtest.VictoriaMetrics(t, history, "-search.maxSamplesPerQuery=30000")
		}, doctor: []string{"ok    backend: VictoriaMetrics, limits search.maxSamplesPerQuery=30000",
			"namespace shop: the cpu query was refused for its size (VictoriaMetrics -search.maxSamplesPerQuery): read again in two pieces by "}},
	}
	want := map[string]string{"app/cpu": "390m", "app/memory": "260Mi", "sidecar/cpu": "26m", "sidecar/memory": "65Mi"}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			backendArgs := append(append([]string(nil), args...), "--prometheus-url", b.url(t))
			rep := runJSON(t, ctx, backendArgs)
			web := entry(t, rep, "shop", "web")
			seen := 0
			for _, c := range web.Containers {
				for _, r := range c.Resources {
					seen++
					key := c.Name + "/" + string(r.Resource)
					if quantity(r.Recommended) != want[key] {
						t.Errorf("%s: recommended %q (%s), want %q as on Prometheus", key, quantity(r.Recommended), r.Reason, want[key])
					}
					minSamples := 6 * 24 * 12
					if r.Resource == "memory" {
						minSamples = 6 * 24
					}
					if r.Evidence == nil || r.Evidence.Samples < minSamples {
						t.Errorf("%s: evidence %+v, want a week of samples across all rollouts", key, r.Evidence)
					}
				}
			}
			if seen != len(want) {
				t.Errorf("shop/web reports %d container resources, want %d", seen, len(want))
			}
			var doc, docErr bytes.Buffer
			if code := run(ctx, append([]string{"doctor"}, backendArgs...), &doc, &docErr); code != exitOK {
				t.Errorf("doctor = %d, want %d; output:\n%s\nstderr:\n%s", code, exitOK, doc.String(), docErr.String())
			}
			for _, line := range b.doctor {
				if !strings.Contains(doc.String(), line) {
					t.Errorf("doctor output lacks %q:\n%s", line, doc.String())
				}
			}
		})
	}
}
