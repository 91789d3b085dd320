//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndSourceChosenByLiveTemplate runs the job on the bursty
// gateway (envoy:1.31 in the cluster), whose repository has two overlays
// of one base and no hint naming either: only overlay b sets the image the
// cluster runs, so the change lands in b, and the plan says why.
func TestEndToEndSourceChosenByLiveTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	series := history.Series([]history.Container{{Namespace: "edge", Pod: "gateway-7d9f8c6b5-x2k4p", Container: "app",
		Start: start, End: now, CPU: history.Bursts(0.15, 2, 4, 2*time.Minute)}}, time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: series})
	crd := shopObjects(t, true)[0]
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), crd, []byte(gatewayObjects)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	overlay := func(tag string) string {
		return "resources: [../../base]\nimages:\n  - name: envoy\n    newTag: \"" + tag + "\"\n"
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{
		"edge/base/kustomization.yaml":       "resources: [gateway.yaml]\n",
		"edge/base/gateway.yaml":             strings.Replace(gatewayManifest, "envoy:1.31", "envoy:1.30", 1),
		"edge/overlays/a/kustomization.yaml": overlay("1.32"),
		"edge/overlays/b/kustomization.yaml": overlay("1.31"),
	})
	rep := runJSON(t, ctx, append(bedArgs(t, bed, repoURL), "--dry-run"))
	gw := entry(t, rep, "edge", "gateway")
	if gw.Source == nil || !strings.HasPrefix(gw.Source.File, "edge/overlays/b/") || !gw.Source.Changed || gw.Source.Error != "" {
		t.Fatalf("gateway source = %+v, want a change in edge/overlays/b", gw.Source)
	}
	for _, want := range []string{"edge/overlays/a: container app image envoy:1.32, live envoy:1.31", "edge/overlays/b: as live"} {
		if !strings.Contains(gw.Source.Chosen, want) {
			t.Errorf("gateway source chosen %q, want it to say %q", gw.Source.Chosen, want)
		}
	}
}
