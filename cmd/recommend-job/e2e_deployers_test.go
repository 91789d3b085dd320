//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	history "github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// issue30Repo is issue 30's repository: production (apps/prod) is the base
// of a smoke test's overlay (apps/tests/prod-smoke), which renders
// shop/web too, and shares its base with staging.
var issue30Repo = map[string]string{
	"apps/base/kustomization.yaml":             "resources:\n  - deployment.yaml\n",
	"apps/base/deployment.yaml":                layoutsRepo["apps/web/deployment.yaml"],
	"apps/prod/kustomization.yaml":             "namespace: shop\nresources:\n  - ../base\n",
	"apps/stage/kustomization.yaml":            "namespace: shop-stage\nresources:\n  - ../base\n",
	"apps/tests/prod-smoke/kustomization.yaml": "resources:\n  - ../../prod\ncommonLabels:\n  smoke: \"true\"\n",
}

// issue30AppSet generates shop-prod and shop-stage from the repository
// at REPO.
const issue30AppSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: shop
  namespace: argocd
spec:
  goTemplate: true
  generators:
  - git:
      repoURL: REPO
      revision: HEAD
      directories:
      - path: apps/*
      - path: apps/base
        exclude: true
  template:
    metadata:
      name: 'shop-{{.path.basename}}'
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: HEAD, path: '{{.path.path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: 'shop'}
`

// issue30Cluster runs shop/web as Argo CD's shop-prod deployed it, with
// its ResourceRecommend.
var issue30Cluster = `apiVersion: v1
kind: Namespace
metadata:
  name: argocd
---
` + strings.Replace(layoutsRepo["apps/web/deployment.yaml"], "  name: web\n",
	"  name: web\n  namespace: shop\n  annotations:\n    argocd.argoproj.io/tracking-id: shop-prod:apps/Deployment:shop/web\n", 1) +
	"---\n" + layoutsRecommend("shop", "web")

// issue30Application is a live Application of Argo CD's.
func issue30Application(name, repoURL, path string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  project: default
  source: {repoURL: '` + repoURL + `', targetRevision: HEAD, path: ` + path + `}
  destination: {server: 'https://kubernetes.default.svc', namespace: shop}
status:
  sync: {status: Synced}
`
}

// TestEndToEndDeployers runs issue 30's case: the change to shop/web lands
// in apps/prod, the environment Argo CD's shop-prod deploys, and the smoke
// test's overlay, staging and the base stay as they are; first with only
// the ApplicationSet in the repository (the Application kinds installed
// but none live), then with the generated Applications live in the
// cluster and no ApplicationSet in the repository; then as a service
// account that may not list the deployer kinds, which the run says once,
// going on with the repository's ApplicationSet.
func TestEndToEndDeployers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	var devStore []history.Container
	for _, span := range history.Rollouts("frontend", 2, 2, now.Add(-7*24*time.Hour), now) {
		for _, pod := range span.Pods {
			devStore = append(devStore, history.Container{Namespace: "dev-store", Pod: pod, Container: "server",
				Start: span.Start, End: span.End, CPU: history.Constant(0.05), Memory: history.Constant(40 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: append(layoutsHistory(now), history.Series(devStore, time.Minute)...)})
	crd := shopObjects(t, true)[0]
	shop := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), crd, testbed.DeployerCRDs(), shop, []byte(issue30Cluster)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	// check runs the job on the repository files, and checks that it
	// patched apps/prod alone, naming the deployer.
	check := func(t *testing.T, name string, files map[string]string, deployer string, extra ...string) string {
		t.Helper()
		repoURL := testbedtest.CreateRepo(t, bed, name, files)
		var stdout, stderr bytes.Buffer
		args := append(bedArgs(t, bed, repoURL, "--namespaces", "shop"), extra...)
		if code := run(ctx, args, &stdout, &stderr); code != exitOK {
			t.Fatalf("run() = %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitOK, stderr.String(), stdout.String())
		}
		rep := &plan.Plan{}
		if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
			t.Fatalf("decoding report: %v\n%s", err, stdout.String())
		}
		web := entry(t, rep, "shop", "web")
		want := []string{"apps/prod/kustomization.yaml", "apps/prod/recommend-job-deployment-web.yaml"}
		if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, want) {
			t.Fatalf("git = %+v, want %v pushed; shop/web source %+v", rep.Git, want, web.Source)
		}
		if web.Source == nil || web.Source.Deployer != deployer {
			t.Errorf("shop/web source = %+v, want deployed by %q", web.Source, deployer)
		}
		for f, original := range files {
			got, _ := fileAt(t, repoURL, auth, "recommend-job/main", f)
			if !slices.Contains(want, f) && got != original {
				t.Errorf("%s changed:\n%s", f, got)
			}
		}
		patch, _ := fileAt(t, repoURL, auth, "recommend-job/main", want[1])
		if !strings.Contains(patch, "name: web") || !strings.Contains(patch, "cpu:") {
			t.Errorf("the patch in apps/prod:\n%s", patch)
		}
		return stderr.String()
	}
	const warning = "cannot read the live Argo CD and Flux objects"

	t.Run("only the ApplicationSet in the repository", func(t *testing.T) {
		files := withFiles(issue30Repo, map[string]string{"argocd/appset.yaml": strings.ReplaceAll(issue30AppSet, "REPO", bed.Git.URL("issue30-appset"))})
		logs := check(t, "issue30-appset", files, "Application argocd/shop-prod (generated by ApplicationSet argocd/shop in argocd/appset.yaml)")
		if strings.Contains(logs, warning) {
			t.Errorf("a run that may read the deployer kinds warns:\n%s", logs)
		}
	})

	t.Run("without access to the deployer kinds", func(t *testing.T) {
		// The chart's role without its deployer rules.
		role := `apiVersion: v1
kind: Namespace
metadata: {name: recommend-job}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: narrow, namespace: recommend-job}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: narrow}
rules:
- {apiGroups: [recommendation.katalyst.kubewharf.io], resources: [resourcerecommends], verbs: [list]}
- {apiGroups: [apps], resources: [deployments, statefulsets, daemonsets, replicasets], verbs: [list]}
- {apiGroups: [batch], resources: [jobs, cronjobs], verbs: [list]}
- {apiGroups: [argoproj.io], resources: [rollouts], verbs: [list]}
- {apiGroups: [""], resources: [namespaces], verbs: [list]}
- {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: narrow}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: narrow}
subjects: [{kind: ServiceAccount, name: narrow, namespace: recommend-job}]
`
		if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(role)); err != nil {
			t.Fatalf("applying the role: %v", err)
		}
		kc, err := clientcmd.LoadFromFile(bed.APIServer.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, user := range kc.AuthInfos {
			user.Impersonate = "system:serviceaccount:recommend-job:narrow"
		}
		narrow := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, narrow); err != nil {
			t.Fatal(err)
		}
		files := withFiles(issue30Repo, map[string]string{"argocd/appset.yaml": strings.ReplaceAll(issue30AppSet, "REPO", bed.Git.URL("issue30-narrow"))})
		logs := check(t, "issue30-narrow", files, "Application argocd/shop-prod (generated by ApplicationSet argocd/shop in argocd/appset.yaml)", "--kubeconfig", narrow)
		if n := strings.Count(logs, warning); n != 1 || !strings.Contains(logs, "forbidden") {
			t.Errorf("the run warns %d times that it cannot read the deployer kinds, want once, with the apiserver's reason:\n%s", n, logs)
		}
	})

	t.Run("the generated Applications live in the cluster", func(t *testing.T) {
		repoURL := bed.Git.URL("issue30-live")
		live := issue30Application("shop-prod", strings.Replace(repoURL, "http://", "http://user@", 1), "apps/prod") + "---\n" +
			issue30Application("shop-stage", strings.TrimSuffix(repoURL, ".git"), "apps/stage")
		if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(live)); err != nil {
			t.Fatalf("applying the Applications: %v", err)
		}
		check(t, "issue30-live", withFiles(issue30Repo, nil), "Application argocd/shop-prod (from the cluster)")
	})

	t.Run("a live Flux Kustomization over a stale file", func(t *testing.T) {
		repoURL := bed.Git.URL("issue30-flux")
		files := map[string]string{
			// The file says clusters/old; the cluster's object, applied
			// since, says clusters/prod.
			"flux-system/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./clusters/old
  sourceRef: {kind: GitRepository, name: flux-system}
`,
			"base/kustomization.yaml":          layoutsRepo["store/kustomize/base/kustomization.yaml"],
			"base/frontend.yaml":               layoutsRepo["store/kustomize/base/frontend.yaml"],
			"clusters/old/kustomization.yaml":  "namespace: store\nresources:\n- ../../base\n",
			"clusters/prod/kustomization.yaml": "namespace: store\nresources:\n- ../../base\n",
		}
		cluster := `apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: store}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: '` + strings.Replace(repoURL, "http://", "http://git@", 1) + `', ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/prod, sourceRef: {kind: GitRepository, name: flux-system}}
---
` + strings.Replace(layoutsRepo["store/kustomize/base/frontend.yaml"], "  name: frontend\n",
			"  name: frontend\n  namespace: store\n  labels:\n    kustomize.toolkit.fluxcd.io/name: apps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n", 1) +
			"---\n" + layoutsRecommend("store", "frontend")
		if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(cluster)); err != nil {
			t.Fatalf("applying the Flux objects: %v", err)
		}
		testbedtest.CreateRepo(t, bed, "issue30-flux", files)
		rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--namespaces", "store"))
		frontend := entry(t, rep, "store", "frontend")
		want := []string{"clusters/prod/kustomization.yaml", "clusters/prod/recommend-job-deployment-frontend.yaml"}
		if rep.Git == nil || !slices.Equal(rep.Git.Files, want) {
			t.Fatalf("git = %+v, want %v; store/frontend source %+v", rep.Git, want, frontend.Source)
		}
		if d := "Kustomization flux-system/apps (from the cluster)"; frontend.Source.Deployer != d {
			t.Errorf("store/frontend deployed by %q, want %q", frontend.Source.Deployer, d)
		}
	})

	t.Run("a live Flux Kustomization of another branch", func(t *testing.T) {
		// A tenant deploys from its own branch, as in Flux's
		// multi-tenancy example: the job's git-branch is not what the
		// cluster runs, and the reason names the branch it does.
		repoURL := bed.Git.URL("issue38-branch")
		files := map[string]string{
			"base/kustomization.yaml":          layoutsRepo["store/kustomize/base/kustomization.yaml"],
			"base/frontend.yaml":               layoutsRepo["store/kustomize/base/frontend.yaml"],
			"clusters/prod/kustomization.yaml": "namespace: dev-store\nresources:\n- ../../base\n",
		}
		cluster := `apiVersion: v1
kind: Namespace
metadata: {name: dev-store}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: dev-team, namespace: flux-system}
spec: {interval: 1m, url: '` + repoURL + `', ref: {branch: dev-team}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: dev-apps, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/prod, sourceRef: {kind: GitRepository, name: dev-team}}
---
` + strings.Replace(layoutsRepo["store/kustomize/base/frontend.yaml"], "  name: frontend\n",
			"  name: frontend\n  namespace: dev-store\n  labels:\n    kustomize.toolkit.fluxcd.io/name: dev-apps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n", 1) +
			"---\n" + layoutsRecommend("dev-store", "frontend")
		if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(cluster)); err != nil {
			t.Fatalf("applying the Flux objects: %v", err)
		}
		testbedtest.CreateRepo(t, bed, "issue38-branch", files)
		var stdout, stderr bytes.Buffer
		if code := run(ctx, bedArgs(t, bed, repoURL, "--namespaces", "dev-store"), &stdout, &stderr); code != exitNotRendered {
			t.Fatalf("run() = %d, want %d (nothing could be written); stderr:\n%s", code, exitNotRendered, stderr.String())
		}
		rep := &plan.Plan{}
		if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
			t.Fatalf("decoding report: %v\n%s", err, stdout.String())
		}
		frontend := entry(t, rep, "dev-store", "frontend")
		if rep.Git != nil && len(rep.Git.Files) > 0 {
			t.Errorf("git = %+v, want nothing written for a target deployed from another branch", rep.Git)
		}
		want := "Kustomization flux-system/dev-apps (from the cluster) from " + repoURL + " at branch dev-team (the GitRepository flux-system/dev-team)"
		if frontend.Source == nil || !strings.Contains(frontend.Source.Error, want) {
			t.Errorf("dev-store/frontend source %+v, want its reason to say %q", frontend.Source, want)
		}
	})
}

// withFiles returns a copy of base with more.
func withFiles(base, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}
