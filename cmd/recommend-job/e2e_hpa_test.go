//go:build integration

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// hpaDeployment is a Deployment of the autoscaled shop, as the base
// writes it: no namespace, 500m of CPU.
func hpaDeployment(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      containers:
        - name: app
          image: app:1
          resources:
            requests:
              cpu: 500m
              memory: 256Mi
`
}

// hpaAutoscaler is an HPA that scales name on its pods' CPU utilization.
func hpaAutoscaler(name string, percent string) string {
	return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: ` + name + `
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: ` + name + `
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: ` + percent + ` # of the request
`
}

// hpaRecommend is a ResourceRecommend of name whose CPU is never below
// 250m: the request halves from 500m, whatever the history's rounding.
func hpaRecommend(name string) string {
	return strings.Replace(layoutsRecommend("shop", name), "- resourceName: cpu\n", "- resourceName: cpu\n            minAllowed: 250m\n", 1)
}

// hpaRepo is a base shared by staging and production (the cluster's shop
// namespace): web's HPA targets 40% CPU, api's 80%.
var hpaRepo = map[string]string{
	"shop/base/kustomization.yaml":       "resources:\n  - web.yaml\n  - api.yaml\n  - hpa.yaml\n",
	"shop/base/web.yaml":                 hpaDeployment("web"),
	"shop/base/api.yaml":                 hpaDeployment("api"),
	"shop/base/hpa.yaml":                 hpaAutoscaler("web", "40") + "---\n" + hpaAutoscaler("api", "80"),
	"shop/staging/kustomization.yaml":    "namespace: staging\nresources:\n  - ../base\n",
	"shop/production/kustomization.yaml": "namespace: shop\nresources:\n  - ../base\n",
}

// TestEndToEndHPAModes runs the job on two Deployments that HPAs scale on
// CPU utilization and whose CPU requests fall from 500m to 250m. In mode
// hold both requests stay. In mode adjust web's HPA goes from 40% to 80%
// in the same commit, in a patch of production's, so that it still adds
// pods at 200m per pod, and staging renders as before; api's 80% would
// need 160%, so its CPU is held, the arithmetic said.
func TestEndToEndHPAModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	end := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, name := range []string{"web", "api"} {
		for _, pod := range history.Rollouts(name, 2, 1, start, end)[0].Pods {
			containers = append(containers, history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: end,
				CPU: history.Constant(0.05), Memory: history.Constant(100 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(containers, time.Minute)})
	var cluster []string
	for _, name := range []string{"web", "api"} {
		cluster = append(cluster, strings.Replace(hpaDeployment(name), "metadata:\n", "metadata:\n  namespace: shop\n", 1), hpaRecommend(name))
	}
	cluster = append(cluster,
		strings.Replace(hpaAutoscaler("web", "40"), "metadata:\n", "metadata:\n  namespace: shop\n", 1),
		strings.Replace(hpaAutoscaler("api", "80"), "metadata:\n", "metadata:\n  namespace: shop\n", 1))
	objects := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n" + strings.Join(cluster, "---\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(objects)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	// hold, the default: a dry run changes neither request.
	holdURL := testbedtest.CreateRepo(t, bed, "hpa-hold", hpaRepo)
	held := runJSON(t, ctx, bedArgs(t, bed, holdURL, "--dry-run"))
	for _, name := range []string{"web", "api"} {
		it := entry(t, held, "shop", name)
		if r := resourceOf(it, "app", "cpu"); !r.HeldBack || r.Changed || !strings.Contains(r.Reason, "HorizontalPodAutoscaler shop/"+name+" scales on cpu utilization") {
			t.Errorf("hold: %s's cpu = %+v, want held for its HPA", name, r)
		}
		if len(it.Autoscalers) != 0 {
			t.Errorf("hold: %s has autoscalers to adjust: %+v", name, it.Autoscalers)
		}
	}

	repoURL := testbedtest.CreateRepo(t, bed, "hpa-adjust", hpaRepo)
	rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--hpa-mode", "adjust"))
	web := entry(t, rep, "shop", "web")
	if r := resourceOf(web, "app", "cpu"); r.HeldBack || !r.Changed || quantity(r.Recommended) != "250m" {
		t.Errorf("adjust: web's cpu = %+v, want 500m → 250m", r)
	}
	if len(web.Autoscalers) != 1 || len(web.Autoscalers[0].Targets) != 1 {
		t.Fatalf("adjust: web's autoscalers = %+v, want its HPA", web.Autoscalers)
	}
	if a := web.Autoscalers[0]; a.Targets[0].From != 40 || a.Targets[0].To != 80 || !a.Changed ||
		a.File != "shop/production/recommend-job-horizontalpodautoscaler-web.yaml" {
		t.Errorf("adjust: web's HPA = %+v, want 40%% → 80%% in a patch of production's", a)
	}
	api := entry(t, rep, "shop", "api")
	if r := resourceOf(api, "app", "cpu"); !r.HeldBack || r.Changed ||
		!strings.Contains(r.Reason, "HorizontalPodAutoscaler api targets 80% cpu utilization; with 250m in place of 500m per pod it would need 160%, outside 10-100%") {
		t.Errorf("adjust: api's cpu = %+v, want held with the arithmetic", r)
	}
	if r := resourceOf(api, "app", "memory"); !r.Changed {
		t.Errorf("adjust: api's memory = %+v, want it changed: the HPA holds only cpu", r)
	}

	// One commit holds the requests and the HPA's target.
	wantFiles := []string{
		"shop/production/kustomization.yaml",
		"shop/production/recommend-job-deployment-api.yaml",
		"shop/production/recommend-job-deployment-web.yaml",
		"shop/production/recommend-job-horizontalpodautoscaler-web.yaml",
	}
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, wantFiles) {
		t.Fatalf("git = %+v, want %v pushed", rep.Git, wantFiles)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	patch, _ := fileAt(t, repoURL, auth, "recommend-job/main", "shop/production/recommend-job-horizontalpodautoscaler-web.yaml")
	if !strings.Contains(patch, "averageUtilization: 80 # of the request\n") || !strings.Contains(patch, "kind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n") {
		t.Errorf("web's HPA patch:\n%s\nwant averageUtilization 80, the comment kept", patch)
	}
	deployment, _ := fileAt(t, repoURL, auth, "recommend-job/main", "shop/production/recommend-job-deployment-web.yaml")
	if !strings.Contains(deployment, "cpu: 250m") {
		t.Errorf("web's patch:\n%s\nwant cpu 250m", deployment)
	}
	for name, original := range hpaRepo {
		if got, _ := fileAt(t, repoURL, auth, "recommend-job/main", name); !slices.Contains(wantFiles, name) && got != original {
			t.Errorf("%s changed:\n%s", name, got)
		}
	}
}

// TestEndToEndHPAModeAnnotation runs the job in hpa-mode hold on the
// autoscaled shop, where web's ResourceRecommend says
// recommend-job.io/hpa-mode: adjust and api's a mode that does not exist:
// web's request and its HPA's target move together as in mode adjust, and
// api alone is rejected with the annotation named, the run going on.
func TestEndToEndHPAModeAnnotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	end := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, name := range []string{"web", "api"} {
		for _, pod := range history.Rollouts(name, 2, 1, start, end)[0].Pods {
			containers = append(containers, history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: end,
				CPU: history.Constant(0.05), Memory: history.Constant(100 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(containers, time.Minute)})
	annotated := func(name, mode string) string {
		return strings.Replace(hpaRecommend(name), "metadata:\n", "metadata:\n  annotations:\n    recommend-job.io/hpa-mode: "+mode+"\n", 1)
	}
	var cluster []string
	for name, mode := range map[string]string{"web": "adjust", "api": "sideways"} {
		cluster = append(cluster, strings.Replace(hpaDeployment(name), "metadata:\n", "metadata:\n  namespace: shop\n", 1), annotated(name, mode),
			strings.Replace(hpaAutoscaler(name, "40"), "metadata:\n", "metadata:\n  namespace: shop\n", 1))
	}
	objects := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n" + strings.Join(cluster, "---\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(objects)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	repoURL := testbedtest.CreateRepo(t, bed, "hpa-annotation", hpaRepo)
	rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--hpa-mode", "hold"))
	web := entry(t, rep, "shop", "web")
	if r := resourceOf(web, "app", "cpu"); r.HeldBack || !r.Changed || quantity(r.Recommended) != "250m" {
		t.Errorf("web's cpu = %+v, want 500m → 250m: its annotation says adjust", r)
	}
	if len(web.Autoscalers) != 1 || len(web.Autoscalers[0].Targets) != 1 ||
		web.Autoscalers[0].Targets[0].From != 40 || web.Autoscalers[0].Targets[0].To != 80 || !web.Autoscalers[0].Changed {
		t.Errorf("web's autoscalers = %+v, want its HPA 40%% → 80%%", web.Autoscalers)
	}
	api := entry(t, rep, "shop", "api")
	if api.Error == nil || api.Error.Code != "HPAModeInvalid" ||
		api.Error.Message != `annotation recommend-job.io/hpa-mode: "sideways" is neither hold nor adjust` {
		t.Errorf("api's error = %+v, want HPAModeInvalid naming the annotation", api.Error)
	}
	if len(api.Containers) != 0 {
		t.Errorf("api has containers %+v, want none: it is invalid", api.Containers)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	patch, _ := fileAt(t, repoURL, auth, "recommend-job/main", "shop/production/recommend-job-horizontalpodautoscaler-web.yaml")
	if !strings.Contains(patch, "averageUtilization: 80 # of the request\n") {
		t.Errorf("web's HPA patch:\n%s\nwant averageUtilization 80", patch)
	}
}
