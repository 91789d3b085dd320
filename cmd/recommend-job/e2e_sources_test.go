//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/plan"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// podinfoChart is podinfo's chart cut down to its Deployment: its
// kubeVersion floor, its top-level resources and its naming as written
// upstream, its other templates and values left out.
var podinfoChart = map[string]string{
	"Chart.yaml": `apiVersion: v1
name: podinfo
version: 6.14.1
appVersion: 6.14.1
description: Podinfo Helm chart for Kubernetes
kubeVersion: ">=1.23.0-0"
`,
	"values.yaml": `replicaCount: 1
image:
  repository: ghcr.io/stefanprodan/podinfo
  tag: 6.14.1
service:
  httpPort: 9898
resources:
  limits:
  requests:
    cpu: 1m
    memory: 16Mi
`,
	"templates/_helpers.tpl": `{{- define "podinfo.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{ end }}
{{- end }}
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ template "podinfo.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ template "podinfo.fullname" . }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ template "podinfo.fullname" . }}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          command:
            - ./podinfo
            - --port={{ .Values.service.httpPort | default 9898 }}
          resources:
{{ toYaml .Values.resources | indent 12 }}
`,
}

// podinfoValues is an environment's patch of the tenant's HelmRelease,
// as the dev-team branch writes one.
func podinfoValues(replicas string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  values:
    replicaCount: ` + replicas + `
`
}

// tenantRepo is a tenant's repository laid out as flux2-multi-tenancy's
// dev-team branch: the podinfo HelmRelease in base/, patched by
// staging/ and production/ with patchesStrategicMerge. The chart comes
// from the repository, where upstream's comes from a HelmRepository.
func tenantRepo() map[string]string {
	files := map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - podinfo-release.yaml\n",
		"base/podinfo-release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  serviceAccountName: dev-team
  releaseName: podinfo
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef:
        kind: GitRepository
        name: dev-team
  interval: 5m
`,
		"staging/podinfo-values.yaml":    podinfoValues("1"),
		"production/podinfo-values.yaml": podinfoValues("2"),
	}
	for _, env := range []string{"staging", "production"} {
		files[env+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatchesStrategicMerge:\n  - podinfo-values.yaml\n"
	}
	for name, content := range podinfoChart {
		files["charts/podinfo/"+name] = content
	}
	return files
}

// tenantSync is what the platform's tenants/staging applies for the
// tenant, as flux2-multi-tenancy's main branch writes it: a GitRepository
// of the tenant's repository and a Kustomization of its staging path,
// both in the tenant's namespace.
func tenantSync(repoURL string) string {
	return `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: dev-team, namespace: apps}
spec: {interval: 1m, url: '` + repoURL + `', ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: dev-team, namespace: apps}
spec: {serviceAccountName: dev-team, interval: 5m, path: ./staging, prune: true, sourceRef: {kind: GitRepository, name: dev-team}}
`
}

// TestEndToEndMultiTenancy runs the job's binary on a cluster where Flux
// deploys a tenant's podinfo release as flux2-multi-tenancy does: the
// HelmRelease in a shared base/, patched by staging/ and production/,
// the staging Kustomization live. No render-paths is set: the live
// HelmRelease's kustomize-controller labels name the live Kustomization,
// whose path is staging, so the pushed change is in staging's values
// alone. The chart keeps podinfo's kubeVersion, which the test bed's
// apiserver satisfies, and every line the job prints on stderr is JSON,
// kustomize's deprecation warning of patchesStrategicMerge included.
// Once the tenant's GitRepository tracks the dev-team branch, as upstream's
// does, the target is refused naming that branch.
func TestEndToEndMultiTenancy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := buildJob(t)
	now := time.Now().Truncate(time.Minute)
	var pods []history.Container
	for _, span := range history.Rollouts("podinfo", 1, 2, now.Add(-7*24*time.Hour), now) {
		for _, pod := range span.Pods {
			pods = append(pods, history.Container{Namespace: "apps", Pod: pod, Container: "podinfo",
				Start: span.Start, End: span.End, CPU: history.Constant(0.05), Memory: history.Constant(40 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(pods, time.Minute)})
	files := tenantRepo()
	repoURL := testbedtest.CreateRepo(t, bed, "dev-team", files)
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	before, _ := checkout(t, repoURL, auth, "main")

	// The cluster: kustomize-controller applied staging's build, labelling
	// the HelmRelease; helm-controller installed its release, labelling
	// what it rendered.
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), before+"/staging")
	if err != nil {
		t.Fatalf("kustomize build staging: %v", err)
	}
	var live []byte
	for _, res := range resources.Resources() {
		if err := res.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": "dev-team", "kustomize.toolkit.fluxcd.io/namespace": "apps"}); err != nil {
			t.Fatal(err)
		}
		y, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		live = append(append(live, "---\n"...), y...)
	}
	release := helmRelease{name: "podinfo", namespace: "apps", chart: "charts/podinfo", values: []map[string]any{{"replicaCount": 1}}}
	live = append(live, installed(t, release.render(t, before), func(helmrender.Object) (map[string]string, map[string]string) {
		return map[string]string{"helm.toolkit.fluxcd.io/name": "podinfo", "helm.toolkit.fluxcd.io/namespace": "apps"},
			map[string]string{"meta.helm.sh/release-name": "podinfo", "meta.helm.sh/release-namespace": "apps"}
	})...)
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], testbed.DeployerCRDs(),
		[]byte(tenantSync(repoURL)), live, []byte(layoutsRecommend("apps", "podinfo"))); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, bedArgs(t, bed, repoURL, "--namespaces", "apps")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the job: %v; stderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	for line := range strings.Lines(stderr.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr holds a line that is not JSON: %q", line)
		}
	}
	// kustomize warned of patchesStrategicMerge, through the log.
	if !strings.Contains(stderr.String(), `"msg":"printed by a library"`) || !strings.Contains(stderr.String(), "patchesStrategicMerge") {
		t.Errorf("stderr does not log kustomize's warning of patchesStrategicMerge:\n%s", stderr.String())
	}
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}
	podinfo := entry(t, rep, "apps", "podinfo")
	want := []string{"staging/podinfo-values.yaml"}
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, want) {
		t.Fatalf("git = %+v, want %v pushed; apps/podinfo source %+v", rep.Git, want, podinfo.Source)
	}
	after := tree(t, mustCheckout(t, repoURL, auth, "recommend-job/main"))
	for f, original := range files {
		if f != want[0] && after[f] != original {
			t.Errorf("%s changed:\n%s", f, after[f])
		}
	}
	staging := after[want[0]]
	if !strings.HasPrefix(staging, podinfoValues("1")) || !strings.Contains(staging, "resources:") || !strings.Contains(staging, "cpu:") {
		t.Errorf("pushed staging/podinfo-values.yaml:\n%s", staging)
	}
	if podinfo.Source.Helm == nil || !strings.Contains(podinfo.Source.Helm.Layer, "staging") {
		t.Errorf("apps/podinfo source.helm = %+v, want staging's values", podinfo.Source.Helm)
	}

	// The tenant's GitRepository tracks its own branch, dev-team, as in
	// flux2-multi-tenancy: the job, on main, says so rather than edit
	// main or ask for a marker.
	onBranch := strings.Replace(tenantSync(repoURL), "ref: {branch: main}", "ref: {branch: dev-team}", 1)
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(onBranch)); err != nil {
		t.Fatalf("applying the GitRepository: %v", err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(ctx, append(bedArgs(t, bed, repoURL, "--namespaces", "apps"), "--dry-run"), &stdout, &stderr); code != exitNotRendered {
		t.Fatalf("run() on another branch = %d, want %d; stderr:\n%s", code, exitNotRendered, stderr.String())
	}
	rep = &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}
	podinfo = entry(t, rep, "apps", "podinfo")
	branch := "Kustomization apps/dev-team (from the cluster) from " + repoURL + " at branch dev-team (the GitRepository apps/dev-team)"
	if podinfo.Source == nil || !strings.Contains(podinfo.Source.Error, branch) || podinfo.Source.Changed {
		t.Errorf("apps/podinfo on another branch: source %+v, want its reason to say %q", podinfo.Source, branch)
	}
}

// mustCheckout is checkout's directory.
func mustCheckout(t *testing.T, url string, auth *githttp.BasicAuth, branch string) string {
	dir, _ := checkout(t, url, auth, branch)
	return dir
}

// exampleApps is argocd-example-apps cut down to three of its apps and
// the app of apps that deploys them: guestbook (plain manifests),
// kustomize-guestbook (a kustomization with a namePrefix) and
// helm-guestbook (a chart without a values file of its own), each
// Application named example.<app> by the apps chart, which deploys the
// repository at repoURL's main branch.
func exampleApps(repoURL string) map[string]string {
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
        - image: gcr.io/google-samples/gb-frontend:v5
          name: guestbook-ui
          ports:
            - containerPort: 80
`
	return map[string]string{
		"apps/Chart.yaml": "apiVersion: v2\nname: applications\nversion: 0.1.0\n",
		"apps/values.yaml": `config:
  spec:
    destination:
      server: https://kubernetes.default.svc
    source:
      repoURL: ` + repoURL + `
      targetRevision: main

applications:
  - name: guestbook
  - name: helm-guestbook
    tool:
      helm:
        releaseName: helm-guestbook
  - name: kustomize-guestbook
`,
		"apps/templates/applications.yaml": `{{- range .Values.applications }}
{{- $config := $.Values.config -}}
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {{ printf "example.%s" .name | quote }}
  namespace: argocd
spec:
  destination:
    namespace: {{ .namespace | default .name | quote }}
    server: {{ $config.spec.destination.server | quote }}
  project: default
  source:
    path: {{ .path | default .name | quote }}
    repoURL: {{ $config.spec.source.repoURL }}
    targetRevision: {{ $config.spec.source.targetRevision }}
    {{- with .tool }}
    {{- . | toYaml | nindent 4 }}
    {{- end }}
---
{{ end -}}
`,
		"guestbook/guestbook-ui-deployment.yaml":           deployment,
		"kustomize-guestbook/kustomization.yaml":           "namePrefix: kustomize-\n\nresources:\n- guestbook-ui-deployment.yaml\n",
		"kustomize-guestbook/guestbook-ui-deployment.yaml": deployment,
		"helm-guestbook/Chart.yaml":                        "apiVersion: v2\nname: helm-guestbook\ntype: application\nversion: 0.1.0\nappVersion: \"1.0\"\n",
		"helm-guestbook/values.yaml": `replicaCount: 1

image:
  repository: gcr.io/google-samples/gb-frontend
  tag: v5

resources:
  {}
  # requests:
  #  cpu: 100m
`,
		"helm-guestbook/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app: {{ .Chart.Name }}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
{{ toYaml .Values.resources | indent 12 }}
`,
	}
}

// exampleLive is what Argo CD deployed of exampleApps: each Deployment
// with its tracking-id, and a ResourceRecommend of each.
func exampleLive() string {
	var out string
	for _, w := range []struct{ app, ns, name, container string }{
		{"example.guestbook", "guestbook", "guestbook-ui", "guestbook-ui"},
		{"example.kustomize-guestbook", "kustomize-guestbook", "kustomize-guestbook-ui", "guestbook-ui"},
		{"example.helm-guestbook", "helm-guestbook", "helm-guestbook", "helm-guestbook"},
	} {
		out += `apiVersion: v1
kind: Namespace
metadata: {name: ` + w.ns + `}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + w.name + `
  namespace: ` + w.ns + `
  annotations: {argocd.argoproj.io/tracking-id: '` + w.app + `:apps/Deployment:` + w.ns + `/` + w.name + `'}
spec:
  selector: {matchLabels: {app: ` + w.name + `}}
  template:
    metadata: {labels: {app: ` + w.name + `}}
    spec:
      containers:
        - {name: ` + w.container + `, image: 'gcr.io/google-samples/gb-frontend:v5'}
---
` + layoutsRecommend(w.ns, w.name) + "---\n"
	}
	return out
}

// TestEndToEndExampleAppsLog runs the job's binary on argocd-example-apps
// cut down (exampleApps), with Argo CD elsewhere: the app of apps' chart
// says which Application deploys which path. A tenant has copied the
// guestbook, on an older image, and written an Application file of the
// app of apps' name for it: both definitions are candidates, and the live
// image chooses the guestbook's own file. Every line on stderr is JSON,
// and each guestbook's change lands in its own files: the plain and
// kustomized ones' manifests, the chart's values.
func TestEndToEndExampleAppsLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := buildJob(t)
	now := time.Now().Truncate(time.Minute)
	var pods []history.Container
	for _, w := range [][3]string{{"guestbook", "guestbook-ui", "guestbook-ui"}, {"kustomize-guestbook", "kustomize-guestbook-ui", "guestbook-ui"},
		{"helm-guestbook", "helm-guestbook", "helm-guestbook"}} {
		for _, span := range history.Rollouts(w[1], 1, 1, now.Add(-7*24*time.Hour), now) {
			pods = append(pods, history.Container{Namespace: w[0], Pod: span.Pods[0], Container: w[2],
				Start: span.Start, End: span.End, CPU: history.Constant(0.05), Memory: history.Constant(40 * mib)})
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(pods, time.Minute)})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(exampleLive())); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	files := exampleApps(bed.Git.URL("example-apps"))
	// A tenant's copy of the guestbook on an older image, and its
	// Application file of the app of apps' name for the guestbook.
	files["tenants/team-b/guestbook/guestbook-ui-deployment.yaml"] = strings.Replace(files["guestbook/guestbook-ui-deployment.yaml"], "gb-frontend:v5", "gb-frontend:v4", 1)
	files["tenants/team-b/apps/guestbook.yaml"] = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: example.guestbook
  namespace: argocd
spec:
  project: default
  source: {repoURL: '` + bed.Git.URL("example-apps") + `', targetRevision: main, path: tenants/team-b/guestbook}
  destination: {server: 'https://kubernetes.default.svc', namespace: guestbook}
`
	repoURL := testbedtest.CreateRepo(t, bed, "example-apps", files)

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, bedArgs(t, bed, repoURL)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for line := range strings.Lines(stderr.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr holds a line that is not JSON: %q", line)
		}
	}
	rep := &plan.Plan{}
	if jerr := json.Unmarshal(stdout.Bytes(), rep); jerr != nil {
		t.Fatalf("the job: %v; decoding report: %v\n%s\nstderr:\n%s", err, jerr, stdout.String(), stderr.String())
	}
	for _, w := range [][3]string{{"guestbook", "guestbook-ui", "guestbook/guestbook-ui-deployment.yaml"},
		{"kustomize-guestbook", "kustomize-guestbook-ui", "kustomize-guestbook/guestbook-ui-deployment.yaml"},
		{"helm-guestbook", "helm-guestbook", "helm-guestbook/values.yaml"}} {
		it := entry(t, rep, w[0], w[1])
		if it.Source == nil || it.Source.File != w[2] || !it.Source.Changed || it.Source.Error != "" {
			t.Errorf("%s/%s: source %+v, want %s changed", w[0], w[1], it.Source, w[2])
		}
	}
	const chosen = "tenants/team-b/guestbook/guestbook-ui-deployment.yaml: container guestbook-ui image gcr.io/google-samples/gb-frontend:v4, live gcr.io/google-samples/gb-frontend:v5"
	if it := entry(t, rep, "guestbook", "guestbook-ui"); it.Source == nil || !strings.Contains(it.Source.Chosen, chosen) {
		t.Errorf("guestbook/guestbook-ui: source %+v, want it chosen over the tenant's copy, saying %q", it.Source, chosen)
	}
	if rep.Git == nil || slices.ContainsFunc(rep.Git.Files, func(f string) bool { return strings.HasPrefix(f, "tenants/") }) {
		t.Errorf("git = %+v, want nothing of the tenant's written", rep.Git)
	}
}
