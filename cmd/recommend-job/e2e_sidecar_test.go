//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// meshManifest is a Deployment with a native sidecar, proxy (an init
// container with restartPolicy Always), next to a one-off init container,
// migrate, that no ResourceRecommend sizes.
const meshManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: mesh
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: mesh
  template:
    metadata:
      labels:
        app: mesh
    spec:
      initContainers:
      - name: migrate
        image: migrate:1
        resources:
          requests:
            cpu: 200m
            memory: 256Mi
      - name: proxy
        image: envoy:1.31
        restartPolicy: Always   # native sidecar
        resources:
          requests:
            cpu: 100m
            memory: 128Mi
      containers:
      - name: app
        image: app:1
        resources:
          requests:
            cpu: 500m
            memory: 512Mi
`

// meshHistory is a week of mesh's usage over three rollouts of two pods,
// with each container's start times:
//   - app at 0.1 cores and 200Mi, but 700Mi in its first 2 minutes (a JVM
//     warming up): 130m, and memory at its startup peak, 700Mi;
//   - proxy at 0.02 cores and 50Mi, from its first minute: 26m and 65Mi,
//     its own history's, its startup peak 50Mi setting nothing;
//   - migrate ran to completion before the window: no history.
func meshHistory(end time.Time) []testbed.Series {
	var containers []history.Container
	for _, span := range history.Rollouts("mesh", 2, 3, end.Add(-7*24*time.Hour), end) {
		for _, pod := range span.Pods {
			app := history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: span.Start, End: span.End,
				CPU: history.Constant(0.1), Memory: history.Constant(200 * mib)}
			containers = append(containers, history.WithStartupSpike(app, 700*mib, 2*time.Minute),
				history.Container{Namespace: "shop", Pod: pod, Container: "proxy", Start: span.Start, End: span.End,
					CPU: history.Constant(0.02), Memory: history.Constant(50 * mib)})
		}
	}
	return append(history.Series(containers, 30*time.Second), history.StartTimes(containers, 30*time.Second)...)
}

// TestEndToEndSizesNativeSidecar runs the job on a Deployment whose native
// sidecar has a history of its own: the sidecar gets values from its own
// usage, written into its initContainers entry, the app container its own
// (memory at its startup peak), and the one-off init container stays as
// it was.
func TestEndToEndSizesNativeSidecar(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: meshHistory(now)})

	cluster := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n" + meshManifest + "---\n" + layoutsRecommend("shop", "mesh")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(cluster)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "mesh", map[string]string{"clusters/prod/mesh.yaml": meshManifest})
	rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--git-path", "clusters"))

	mesh := entry(t, rep, "shop", "mesh")
	if !mesh.Valid {
		t.Fatalf("shop/mesh invalid: %+v", mesh.Error)
	}
	want := map[string]string{"app/cpu": "130m", "app/memory": "700Mi", "proxy/cpu": "26m", "proxy/memory": "65Mi"}
	current := map[string]string{"app/cpu": "500m", "app/memory": "512Mi", "proxy/cpu": "100m", "proxy/memory": "128Mi"}
	// The highest usage each container's evidence saw: its own.
	usageMax := map[string]float64{"app/cpu": 0.1, "app/memory": 700 * mib, "proxy/cpu": 0.02, "proxy/memory": 50 * mib}
	seen := 0
	for _, c := range mesh.Containers {
		for _, r := range c.Resources {
			seen++
			key := c.Name + "/" + string(r.Resource)
			if quantity(r.Recommended) != want[key] || quantity(r.Current) != current[key] || !r.Changed {
				t.Errorf("%s: current %q recommended %q changed %v, want %q -> %q", key, quantity(r.Current), quantity(r.Recommended), r.Changed, current[key], want[key])
			}
			if ev := r.Evidence; ev == nil || ev.UsageMax == nil || *ev.UsageMax < usageMax[key]*0.99 || *ev.UsageMax > usageMax[key]*1.01 {
				t.Errorf("%s: evidence %+v, want its own usage, at most %v", key, ev, usageMax[key])
			}
		}
	}
	if seen != len(want) {
		t.Errorf("shop/mesh reports %d container resources, want %d: app's and proxy's, not migrate's", seen, len(want))
	}
	if ev := resourceOf(mesh, "app", "memory").Evidence; ev == nil || !ev.StartupFloor || ev.StartupPeak != 700*mib {
		t.Errorf("app memory evidence = %+v, want the 700Mi startup peak to set it", ev)
	}
	if ev := resourceOf(mesh, "proxy", "memory").Evidence; ev == nil || ev.StartupFloor || ev.StartupPeak != 50*mib {
		t.Errorf("proxy memory evidence = %+v, want its own 50Mi startup, setting nothing", ev)
	}

	// The sidecar's values land in its initContainers entry; migrate's and
	// every other line stay as they were.
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	pushed, _ := fileAt(t, repoURL, auth, "recommend-job/main", "clusters/prod/mesh.yaml")
	wantFile := strings.NewReplacer(
		"cpu: 100m", "cpu: 26m",
		"memory: 128Mi", "memory: 65Mi",
		"cpu: 500m", "cpu: 130m",
		"memory: 512Mi", "memory: 700Mi",
	).Replace(meshManifest)
	if pushed != wantFile {
		t.Errorf("pushed file differs from the original beyond the four values:\n--- got\n%s\n--- want\n%s", pushed, wantFile)
	}
	node, err := yaml.Parse(pushed)
	if err != nil {
		t.Fatal(err)
	}
	for path, value := range map[string]string{
		"initContainers/proxy/cpu": "26m", "initContainers/proxy/memory": "65Mi",
		"initContainers/migrate/cpu": "200m", "initContainers/migrate/memory": "256Mi",
		"containers/app/cpu": "130m", "containers/app/memory": "700Mi",
	} {
		parts := strings.Split(path, "/")
		got, err := node.Pipe(yaml.Lookup("spec", "template", "spec", parts[0], "[name="+parts[1]+"]", "resources", "requests", parts[2]))
		if err != nil || got == nil || yaml.GetValue(got) != value {
			t.Errorf("%s = %v (%v), want %s", path, got, err, value)
		}
	}
}
