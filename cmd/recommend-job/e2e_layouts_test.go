//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// layoutsRepo is a GitOps repository with the kustomize layouts real ones
// have:
//   - apps/web is deployed on its own (Argo CD's app web) and reused by
//     tests/smoke, which deploys it again as smoke-web next to a test job;
//   - store/kustomize (Argo CD's app store) renders a base that two test
//     overlays beside it render too.
var layoutsRepo = map[string]string{
	"argocd/apps.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/gitops.git
    path: apps/web
  destination:
    namespace: shop
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: store
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/gitops.git
    path: store/kustomize
  destination:
    namespace: store
`,
	"apps/web/kustomization.yaml": "namespace: shop\nresources:\n  - deployment.yaml\n",
	"apps/web/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: app
          image: nginx:1.27
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
`,
	"tests/smoke/kustomization.yaml": "namePrefix: smoke-\nresources:\n  - ../../apps/web\n  - check.yaml\n",
	"tests/smoke/check.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: check
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: curl
          image: curlimages/curl:8.8.0
`,
	"store/kustomize/kustomization.yaml":      "resources:\n- base\ncomponents:\n# - components/branding\n",
	"store/kustomize/base/kustomization.yaml": "resources:\n- frontend.yaml\n",
	"store/kustomize/base/frontend.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  selector:
    matchLabels:
      app: frontend
  template:
    metadata:
      labels:
        app: frontend
    spec:
      containers:
      - name: server
        image: example/frontend:1
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
`,
	"store/kustomize/components/branding/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
	"store/kustomize/tests/a/kustomization.yaml":             "resources:\n- ../../base\n",
	"store/kustomize/tests/b/kustomization.yaml":             "resources:\n- ../../base\ncomponents:\n- ../../components/branding\n",
}

// layoutsCluster is what runs: shop/web (from apps/web), store/frontend
// (from store/kustomize, as Argo CD's tracking-id says), and misc/cache,
// which a Helm release installed and no file of the repository defines;
// each with a ResourceRecommend.
var layoutsCluster = `apiVersion: v1
kind: Namespace
metadata:
  name: store
---
apiVersion: v1
kind: Namespace
metadata:
  name: misc
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: app
          image: nginx:1.27
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
  namespace: store
  annotations:
    argocd.argoproj.io/tracking-id: store:apps/Deployment:store/frontend
spec:
  selector:
    matchLabels:
      app: frontend
  template:
    metadata:
      labels:
        app: frontend
    spec:
      containers:
      - name: server
        image: example/frontend:1
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cache
  namespace: misc
  labels:
    app.kubernetes.io/managed-by: Helm
  annotations:
    meta.helm.sh/release-name: cache
spec:
  selector:
    matchLabels:
      app: cache
  template:
    metadata:
      labels:
        app: cache
    spec:
      containers:
      - name: redis
        image: redis:7
        resources:
          requests:
            cpu: 200m
            memory: 256Mi
` + `---
` + layoutsRecommend("shop", "web") + `---
` + layoutsRecommend("store", "frontend") + `---
` + layoutsRecommend("misc", "cache")

func layoutsRecommend(ns, name string) string {
	return `apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: ` + name + `
  resourcePolicy:
    algorithmPolicy: {}
    containerPolicies:
      - containerName: "*"
        controlledResourcesPolicies:
          - resourceName: cpu
          - resourceName: memory
`
}

// layoutsHistory is a week of steady usage of the three Deployments.
func layoutsHistory(end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, w := range []struct {
		ns, name, container string
		cpu, memory         float64
	}{
		{"shop", "web", "app", 0.2, 300 * mib},
		{"store", "frontend", "server", 0.05, 40 * mib},
		{"misc", "cache", "redis", 0.1, 180 * mib},
	} {
		for _, span := range history.Rollouts(w.name, 2, 2, start, end) {
			for _, pod := range span.Pods {
				containers = append(containers, history.Container{Namespace: w.ns, Pod: pod, Container: w.container,
					Start: span.Start, End: span.End, CPU: history.Constant(w.cpu), Memory: history.Constant(w.memory)})
			}
		}
	}
	return history.Series(containers, time.Minute)
}

// TestEndToEndLayouts runs the job on a repository with an app reused as
// a base and test overlays beside the main overlay: each target lands in
// the environment it lives in, and nothing another environment renders
// changes. The Helm-installed target is reported with the marker to add,
// and a run whose only target cannot be rendered exits with
// exitNotRendered instead of passing for one with nothing to do.
func TestEndToEndLayouts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: layoutsHistory(now)})
	crd := shopObjects(t, true)[0]
	shop := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), crd, shop, []byte(layoutsCluster)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "layouts", layoutsRepo)
	args := bedArgs(t, bed, repoURL)

	rep := runJSON(t, ctx, args)
	wantFiles := []string{
		"apps/web/deployment.yaml",
		"store/kustomize/kustomization.yaml",
		"store/kustomize/recommend-job-deployment-frontend.yaml",
	}
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, wantFiles) {
		t.Fatalf("git = %+v, want %v pushed", rep.Git, wantFiles)
	}

	// The reused app: its own file, in place; the smoke test, built on it,
	// is not touched.
	web := entry(t, rep, "shop", "web")
	if web.Source == nil || web.Source.File != "apps/web/deployment.yaml" || !web.Source.Changed || web.Source.Method != plan.MethodSplice {
		t.Errorf("shop/web source = %+v, want apps/web/deployment.yaml spliced", web.Source)
	}
	// The test overlays: a patch in the main kustomization, which Argo CD
	// deploys; the base and the tests stay as they are.
	frontend := entry(t, rep, "store", "frontend")
	if frontend.Source == nil || frontend.Source.File != "store/kustomize/recommend-job-deployment-frontend.yaml" || frontend.Source.Method != plan.MethodNewFile {
		t.Errorf("store/frontend source = %+v, want a new patch in store/kustomize", frontend.Source)
	}
	// Helm's: not found, and told what to do.
	cache := entry(t, rep, "misc", "cache")
	if cache.Source == nil || !strings.Contains(cache.Source.Error, "installed by the Helm release misc/cache") ||
		!strings.Contains(cache.Source.Error, `{"$recommend": "misc/cache:redis"}`) {
		t.Errorf("misc/cache source = %+v, want the Helm release named and the marker to add", cache.Source)
	}

	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	for name, original := range layoutsRepo {
		got, _ := fileAt(t, repoURL, auth, "recommend-job/main", name)
		if !slices.Contains(wantFiles, name) && got != original {
			t.Errorf("%s changed:\n%s", name, got)
		}
	}
	pushed, _ := fileAt(t, repoURL, auth, "recommend-job/main", "apps/web/deployment.yaml")
	assertRequests(t, pushed, map[string]string{
		"app/cpu":    quantity(resourceOf(web, "app", "cpu").Recommended),
		"app/memory": quantity(resourceOf(web, "app", "memory").Recommended),
	})
	kust, _ := fileAt(t, repoURL, auth, "recommend-job/main", "store/kustomize/kustomization.yaml")
	if want := layoutsRepo["store/kustomize/kustomization.yaml"] + "patches:\n- path: recommend-job-deployment-frontend.yaml\n"; kust != want {
		t.Errorf("store/kustomize/kustomization.yaml = %q, want %q: patches after the commented components", kust, want)
	}

	// The Helm-installed target alone: nothing can be rendered, and the
	// run says so with its exit code and its report.
	var stdout, stderr bytes.Buffer
	only := append(append([]string(nil), args...), "--namespaces", "misc", "--output", "table")
	if code := run(ctx, only, &stdout, &stderr); code != exitNotRendered {
		t.Errorf("run() with only the Helm target = %d, want %d; stderr:\n%s", code, exitNotRendered, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "nothing rendered") || strings.Contains(out, "up to date") {
		t.Errorf("the report of a run that rendered nothing:\n%s", out)
	}
	var js plan.Plan
	stdout.Reset()
	if code := run(ctx, append(append([]string(nil), only...), "--output", "json"), &stdout, &stderr); code != exitNotRendered {
		t.Errorf("run() with only the Helm target, json = %d, want %d", code, exitNotRendered)
	}
	if err := json.Unmarshal(stdout.Bytes(), &js); err != nil || len(js.Items) != 1 || js.Items[0].Source == nil || js.Items[0].Source.Error == "" {
		t.Errorf("json report = %s (%v), want misc/cache with its source error", stdout.String(), err)
	}
}

// resourceOf returns one resource of one container of an entry.
func resourceOf(it plan.Item, container, res string) plan.Resource {
	for _, c := range it.Containers {
		for _, r := range c.Resources {
			if c.Name == container && string(r.Resource) == res {
				return r
			}
		}
	}
	return plan.Resource{}
}
