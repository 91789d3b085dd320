//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndBackends runs the end-to-end history of TestEndToEnd (web's
// week over three rollouts, next to web-api) against each metrics backend
// the test bed serves, in a dry run: each must recommend what Prometheus
// does, a strict one too, and doctor must name it and see no warning.
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
		// A query in front of a sidecar in front of Prometheus, asked
		// with partial_response=false; its one store is up, so an answer
		// carrying a warning would leave web unrecommended.
		{name: "thanos", url: func(t *testing.T) string { return testbedtest.Thanos(t, history).URL },
			doctor: []string{"ok    backend: Thanos"}},
		// Every query of the namespace's week is refused whole.
		{name: "victoriametrics with a small sample limit", url: func(t *testing.T) string {
			return testbedtest.VictoriaMetrics(t, history, "-search.maxSamplesPerQuery=30000")
		}, doctor: []string{"ok    backend: VictoriaMetrics, limits search.maxSamplesPerQuery=30000",
			"namespace shop: the cpu query was refused for its size (VictoriaMetrics -search.maxSamplesPerQuery): read again in two pieces by "}},
	}
	// want is what Prometheus, the first backend, recommends: the values
	// themselves are TestEndToEnd's to check.
	keys := []string{"app/cpu", "app/memory", "sidecar/cpu", "sidecar/memory"}
	want := map[string]string{}
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
					if b.name == "prometheus" && r.Recommended != nil {
						want[key] = quantity(r.Recommended)
					}
					if quantity(r.Recommended) != want[key] || want[key] == "" {
						t.Errorf("%s: recommended %q (%s, evidence %+v), want %q as on Prometheus", key, quantity(r.Recommended), r.Reason, r.Evidence, want[key])
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
			if seen != len(keys) || len(want) != len(keys) {
				t.Errorf("shop/web reports %d container resources, want %d: %v", seen, len(keys), want)
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
			if strings.Contains(doc.String(), "first warning of the backend") {
				t.Errorf("doctor saw a warning of the backend, want none:\n%s", doc.String())
			}
		})
	}
	// Thanos without its one store, asked with partial_response=false,
	// must not pass an empty or partial answer off as the history.
	t.Run("thanos with its store down", func(t *testing.T) {
		th := testbedtest.Thanos(t, history)
		if err := th.StopSidecar(); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(append([]string(nil), args...), "--prometheus-url", th.URL), &stdout, &stderr)
		rep := &plan.Plan{}
		if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
			t.Fatalf("run() = %d; decoding report: %v\nstderr:\n%s", code, err, stderr.String())
		}
		resources := 0
		for _, c := range entry(t, rep, "shop", "web").Containers {
			for _, r := range c.Resources {
				resources++
				if r.Recommended != nil || !strings.HasPrefix(r.Reason, "usage history unavailable: ") {
					t.Errorf("%s/%s: recommended %q, reason %q; want none, and the history unavailable", c.Name, r.Resource, quantity(r.Recommended), r.Reason)
				}
			}
		}
		if resources != len(keys) {
			t.Errorf("shop/web reports %d container resources, want %d, each with its reason", resources, len(keys))
		}
	})
}
