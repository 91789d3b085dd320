//go:build integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// gatewayManifest is the edge gateway's Deployment: a core, the request
// its bursts need.
const gatewayManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: gateway
  namespace: edge
spec:
  selector:
    matchLabels:
      app: gateway
  template:
    metadata:
      labels:
        app: gateway
    spec:
      containers:
        - name: app
          image: envoy:1.31
          resources:
            requests:
              cpu: "1"
`

// gatewayObjects are the edge namespace, the gateway and its
// ResourceRecommend for CPU, katalyst's defaults (a 30% buffer).
const gatewayObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: edge
---
` + gatewayManifest + `---
apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata:
  name: gateway
  namespace: edge
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: gateway
  resourcePolicy:
    algorithmPolicy: {}
    containerPolicies:
      - containerName: app
        controlledResourcesPolicies:
          - resourceName: cpu
`

// TestEndToEndBurstyGateway runs the job with its default settings on a
// gateway that idles at 0.15 cores with four 2-minute bursts to 2 cores an
// hour (13% of the time), scraped every 60s for a week: its true p90 is 2
// cores. Read at the resolution of the data (a 2m rate every 1m, the
// scrape interval measured) the percentile lands in the bucket of 2 cores
// and the pull request says where the resolution came from; read at 5m/5m,
// the former defaults, the bursts averaged to 0.63 cores and the job cut
// the request to 815m.
func TestEndToEndBurstyGateway(t *testing.T) {
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
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"edge/gateway.yaml": gatewayManifest})
	args := append(bedArgs(t, bed, repoURL), "--dry-run")

	rep := runJSON(t, ctx, args)
	gw := entry(t, rep, "edge", "gateway")
	if len(gw.Containers) != 1 || len(gw.Containers[0].Resources) != 1 {
		t.Fatalf("gateway = %+v, want one container with cpu", gw)
	}
	cpu := gw.Containers[0].Resources[0]
	ev := cpu.Evidence
	if ev == nil || cpu.Recommended == nil {
		t.Fatalf("cpu = %+v, want a recommendation with its evidence", cpu)
	}
	t.Logf("p90 %.3f cores, usage p90 %v, recommended %s; %s", ev.RawValue, ev.UsageP90, cpu.Recommended, ev.Resolution)
	// A bucket is 5% wide: the p90 lands in the one holding 2 cores.
	if ev.RawValue < 2/1.05 || ev.RawValue > 2*1.05 {
		t.Errorf("p90 = %.3f cores, want within a bucket of the true 2 cores", ev.RawValue)
	}
	if got := cpu.Recommended.MilliValue(); got < 2600 {
		t.Errorf("recommended %s, want at least 2.6 cores: the 2-core bursts with the 30%% buffer", cpu.Recommended)
	}
	const from = "rate over 2m every 1m, from the 1m scrape interval"
	if ev.Resolution != from {
		t.Errorf("evidence resolution %q, want %q", ev.Resolution, from)
	}

	// The pull request's body says it too.
	var stdout, stderr bytes.Buffer
	md := append(bedArgs(t, bed, repoURL, "--output", "markdown"), "--dry-run")
	if code := run(ctx, md, &stdout, &stderr); code != exitOK {
		t.Fatalf("run() = %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), from) {
		t.Errorf("the pull request body does not say %q:\n%s", from, stdout.String())
	}
}
