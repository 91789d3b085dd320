//go:build integration

package main

import (
	"context"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndBackends runs the end-to-end history of TestEndToEnd (web's
// week over three rollouts, next to web-api) against each metrics backend
// the test bed serves, in a dry run: each must recommend what Prometheus
// does.
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
	}{
		{name: "prometheus", url: func(*testing.T) string { return bed.Prometheus.URL }},
		{name: "victoriametrics", url: func(t *testing.T) string { return testbedtest.VictoriaMetrics(t, history) }},
	}
	want := map[string]string{"app/cpu": "400m", "app/memory": "268Mi", "sidecar/cpu": "27m", "sidecar/memory": "69Mi"}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rep := runJSON(t, ctx, append(append([]string(nil), args...), "--prometheus-url", b.url(t)))
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
		})
	}
}
