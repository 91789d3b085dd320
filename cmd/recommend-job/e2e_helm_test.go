//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// shopChart is a chart a team keeps in its GitOps repository, laid out as
// helm create lays one out: a web Deployment behind a Service and a queue
// worker Deployment, named after the release, each sized by its
// component's resources.
var shopChart = map[string]string{
	"Chart.yaml": `apiVersion: v2
name: shop
description: The shop's web front end and its queue worker.
type: application
version: 0.3.0
appVersion: "2.3.1"
`,
	"values.yaml": `# Default values for shop.
nameOverride: ""
fullnameOverride: ""

queueURL: amqp://queue.shop.svc:5672

web:
  replicaCount: 1
  image:
    repository: ghcr.io/example/shop-web
    # Defaults to the chart's appVersion.
    tag: ""
  # Sized per environment.
  resources: {}

worker:
  replicaCount: 1
  image:
    repository: ghcr.io/example/shop-worker
    tag: ""
  concurrency: 4
  resources:
    requests:
      cpu: 50m
      memory: 64Mi

service:
  type: ClusterIP
  port: 80
`,
	"templates/_helpers.tpl": `{{/*
Expand the name of the chart.
*/}}
{{- define "shop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
A default fully qualified app name, cut at 63 characters.
*/}}
{{- define "shop.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "shop.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "shop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "shop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
`,
	"templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" . }}-web
  labels:
    {{- include "shop.labels" . | nindent 4 }}
    app.kubernetes.io/component: web
spec:
  replicas: {{ .Values.web.replicaCount }}
  selector:
    matchLabels:
      {{- include "shop.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: web
  template:
    metadata:
      labels:
        {{- include "shop.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: web
    spec:
      containers:
        - name: web
          image: "{{ .Values.web.image.repository }}:{{ .Values.web.image.tag | default .Chart.AppVersion }}"
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: QUEUE_URL
              value: {{ .Values.queueURL | quote }}
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
          {{- with .Values.web.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
`,
	"templates/worker.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" . }}-worker
  labels:
    {{- include "shop.labels" . | nindent 4 }}
    app.kubernetes.io/component: worker
spec:
  replicas: {{ .Values.worker.replicaCount }}
  selector:
    matchLabels:
      {{- include "shop.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: worker
  template:
    metadata:
      labels:
        {{- include "shop.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: worker
    spec:
      containers:
        - name: worker
          image: "{{ .Values.worker.image.repository }}:{{ .Values.worker.image.tag | default .Chart.AppVersion }}"
          args:
            - --concurrency={{ .Values.worker.concurrency }}
          env:
            - name: QUEUE_URL
              value: {{ .Values.queueURL | quote }}
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "shop.fullname" . }}-web
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "shop.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/component: web
`,
}

// withChart returns files with shopChart under charts/shop.
func withChart(files map[string]string) map[string]string {
	for name, content := range shopChart {
		files["charts/shop/"+name] = content
	}
	return files
}

// fluxSync is what flux bootstrap commits for a cluster, the components
// left out: the repository as a GitRepository and the cluster's directory
// as a Kustomization; and the Kustomization that deploys the cluster's
// apps.
func fluxSync(repoURL, cluster string) map[string]string {
	dir := "clusters/" + cluster
	return map[string]string{
		dir + "/flux-system/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n",
		dir + "/flux-system/gotk-sync.yaml": `# This manifest was generated by flux. DO NOT EDIT.
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  secretRef:
    name: flux-system
  url: ` + repoURL + `
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./` + dir + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`,
		dir + "/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./apps/` + cluster + `
  prune: true
  wait: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`,
	}
}

// fluxValuesPatch is an overlay's patch of the shop HelmRelease's values.
func fluxValuesPatch(comment, values string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: shop
spec:
  values:
    # ` + comment + `
` + values
}

// fluxProduction is production's patch of the shop HelmRelease: it sizes
// the web container and leaves the worker at the chart's defaults.
var fluxProduction = fluxValuesPatch("Production takes the traffic.", `    web:
      replicaCount: 3
      resources:
        requests:
          cpu: 500m # sized for the launch
          memory: 512Mi
        limits:
          memory: 1Gi
    worker:
      replicaCount: 2
`)

// fluxRepo is a Flux repository as flux2-kustomize-helm-example lays one
// out: per cluster, flux bootstrap's sync and a Kustomization of
// apps/<cluster>; the shop HelmRelease in apps/base/shop, its chart in
// charts/shop through flux-system's GitRepository; and staging and
// production overlays that patch the HelmRelease's values.
func fluxRepo(repoURL string) map[string]string {
	files := withChart(map[string]string{
		"apps/base/shop/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
  - namespace.yaml
  - release.yaml
`,
		"apps/base/shop/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n",
		"apps/base/shop/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/shop
      reconcileStrategy: Revision
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  install:
    remediation:
      retries: 3
  values:
    queueURL: amqp://queue.shop.svc:5672
`,
		"apps/staging/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
  - ../base/shop
patches:
  - path: shop-values.yaml
    target:
      kind: HelmRelease
`,
		"apps/staging/shop-values.yaml": fluxValuesPatch("Staging runs one small replica of each.", `    web:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
`),
		"apps/production/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
  - ../base/shop
patches:
  - path: shop-values.yaml
    target:
      kind: HelmRelease
`,
		"apps/production/shop-values.yaml": fluxProduction,
	})
	for _, cluster := range []string{"staging", "production"} {
		for name, content := range fluxSync(repoURL, cluster) {
			files[name] = content
		}
	}
	return files
}

// argoApplication is the Argo CD Application of the shop chart in one
// environment: the chart directory with the environment's values file.
func argoApplication(repoURL, env, namespace string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-` + env + `
  namespace: argocd
  finalizers:
    - resources-finalizer.argocd.argoproj.io
spec:
  project: default
  source:
    repoURL: ` + repoURL + `
    targetRevision: main
    path: charts/shop
    helm:
      releaseName: shop
      valueFiles:
        - values-` + env + `.yaml
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + namespace + `
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
    syncOptions:
      - CreateNamespace=true
`
}

// argoProduction is production's values file: it sizes the web container
// and leaves the worker at the chart's defaults.
const argoProduction = `# Production: the storefront cluster.
web:
  replicaCount: 3
  resources:
    requests:
      cpu: 500m # sized for the launch
      memory: 512Mi
    limits:
      memory: 1Gi

worker:
  replicaCount: 2
`

// argoRepo is an Argo CD repository: the shop chart with a values file per
// environment, and one Application per environment that lists it.
func argoRepo(repoURL string) map[string]string {
	return withChart(map[string]string{
		"argocd/shop-staging.yaml":           argoApplication(repoURL, "staging", "storefront-staging"),
		"argocd/shop-production.yaml":        argoApplication(repoURL, "production", "storefront"),
		"charts/shop/values-staging.yaml":    "# Staging.\nweb:\n  resources:\n    requests:\n      cpu: 100m\n      memory: 128Mi\n",
		"charts/shop/values-production.yaml": argoProduction,
	})
}

// helmHistory is a week of steady usage of the shop's Deployments as the
// production release of each repository installs them: shop/shop-web and
// shop/shop-worker by Flux, storefront/shop-web and storefront/shop-worker
// by Argo CD. As in webHistory, p90 of a constant lies in its histogram
// bucket, whose end lies above every sample, so the percentile is the
// constant itself, buffered by 30% and rounded up:
//   - web CPU 0.3 cores: 390m (from 500m); memory 50Mi: 65Mi (from 512Mi);
//   - worker CPU 0.02 cores: 26m (from the chart's 50m); memory 200Mi:
//     260Mi (from 64Mi).
func helmHistory(end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, ns := range []string{"shop", "storefront"} {
		for _, w := range []struct {
			name, container string
			cpu, memory     float64
		}{
			{"shop-web", "web", 0.3, 50 * mib},
			{"shop-worker", "worker", 0.02, 200 * mib},
		} {
			for _, span := range history.Rollouts(w.name, 2, 2, start, end) {
				for _, pod := range span.Pods {
					containers = append(containers, history.Container{Namespace: ns, Pod: pod, Container: w.container,
						Start: span.Start, End: span.End, CPU: history.Constant(w.cpu), Memory: history.Constant(w.memory)})
				}
			}
		}
	}
	return history.Series(containers, time.Minute)
}

// helmRelease is one environment's Helm release as its controller puts it
// together from the repository.
type helmRelease struct {
	name, namespace string
	// chart is the chart's directory in the repository.
	chart string
	// values are the release's values layers above the chart's defaults,
	// in Helm's order.
	values []map[string]any
	// inputs are the bytes the environment's controller reads besides
	// the chart: kustomize's build of a Flux overlay, an Application and
	// its values files.
	inputs []byte
}

// render renders the release from the checkout at root with the Helm SDK.
func (r helmRelease) render(t *testing.T, root string) []helmrender.Object {
	t.Helper()
	ch, err := chartfetch.LoadDir(os.DirFS(root), r.chart)
	if err != nil {
		t.Fatalf("loading %s: %v", r.chart, err)
	}
	objs, err := helmrender.Engine{}.Render(t.Context(), helmrender.Release{Name: r.name, Namespace: r.namespace, Chart: ch, Values: helmrender.Merge(r.values...)})
	if err != nil {
		t.Fatalf("rendering release %s/%s: %v", r.namespace, r.name, err)
	}
	return objs
}

// fluxRelease is the shop HelmRelease as kustomize-controller applies it
// from overlay (kustomize build) and helm-controller installs it: its
// chart from the repository, spec.values over the chart's defaults, the
// release named after the HelmRelease in its namespace.
func fluxRelease(t *testing.T, root, overlay string) helmRelease {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, overlay))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", overlay, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resources.Resources() {
		if res.GetKind() != "HelmRelease" || res.GetName() != "shop" {
			continue
		}
		obj, err := res.Map()
		if err != nil {
			t.Fatal(err)
		}
		var hr struct {
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				ReleaseName string `json:"releaseName"`
				Chart       struct {
					Spec struct{ Chart string }
				}
				Values map[string]any
			}
		}
		if err := convertJSON(obj, &hr); err != nil {
			t.Fatal(err)
		}
		name := hr.Spec.ReleaseName
		if name == "" {
			name = hr.Metadata.Name
		}
		return helmRelease{name: name, namespace: hr.Metadata.Namespace, chart: path.Clean(hr.Spec.Chart.Spec.Chart),
			values: []map[string]any{hr.Spec.Values}, inputs: out}
	}
	t.Fatalf("kustomize build %s renders no HelmRelease shop:\n%s", overlay, out)
	return helmRelease{}
}

// argoRelease is the release Argo CD renders for the Application in file:
// the chart at its source's path with its valueFiles, in order, relative
// to that path.
func argoRelease(t *testing.T, root, file string) helmRelease {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var app struct {
		Spec struct {
			Source struct {
				Path string
				Helm struct {
					ReleaseName string   `json:"releaseName"`
					ValueFiles  []string `json:"valueFiles"`
				}
			}
			Destination struct{ Namespace string }
		}
	}
	if err := sigsyaml.Unmarshal(data, &app); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	r := helmRelease{name: app.Spec.Source.Helm.ReleaseName, namespace: app.Spec.Destination.Namespace,
		chart: app.Spec.Source.Path, inputs: data}
	for _, vf := range app.Spec.Source.Helm.ValueFiles {
		data, err := os.ReadFile(filepath.Join(root, app.Spec.Source.Path, vf))
		if err != nil {
			t.Fatal(err)
		}
		var values map[string]any
		if err := sigsyaml.Unmarshal(data, &values); err != nil {
			t.Fatalf("%s: %v", vf, err)
		}
		r.values = append(r.values, values)
		r.inputs = append(r.inputs, data...)
	}
	return r
}

// convertJSON decodes plain values into a typed value through JSON.
func convertJSON(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// installed is what a release's controller applies: each object the
// release renders, in its namespace, with the labels and annotations mark
// gives it.
func installed(t *testing.T, objs []helmrender.Object, mark func(o helmrender.Object) (labels, annotations map[string]string)) []byte {
	t.Helper()
	var out []byte
	for _, o := range objs {
		body := deepCopyJSON(t, o.Body)
		meta := body["metadata"].(map[string]any)
		meta["namespace"] = o.Namespace
		labels, annotations := mark(o)
		for field, add := range map[string]map[string]string{"labels": labels, "annotations": annotations} {
			m, _ := meta[field].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			for k, v := range add {
				m[k] = v
			}
			meta[field] = m
		}
		data, err := sigsyaml.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), data...)
	}
	return out
}

// deepCopyJSON copies a rendered object's body.
func deepCopyJSON(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	if err := convertJSON(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkout clones branch of the repository at url into a new directory
// and returns it with the branch's tip.
func checkout(t *testing.T, url string, auth *githttp.BasicAuth, branch string) (string, *object.Commit) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return dir, commit
}

// tree returns the files of a checkout, by slash-separated path.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".git" {
				return fs.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		files[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// requestsAt are the requests expected in a release's output, by object
// name, container and resource.
type requestsAt map[string]map[string]map[string]string

// assertOnlyRequests checks that after is before with the requests of
// want set to want's quantities, and nothing else of any object changed.
func assertOnlyRequests(t *testing.T, before, after []helmrender.Object, want requestsAt) {
	t.Helper()
	index := func(objs []helmrender.Object) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, o := range objs {
			out[o.Kind+" "+o.Namespace+"/"+o.Name] = deepCopyJSON(t, o.Body)
		}
		return out
	}
	b, a := index(before), index(after)
	found := 0
	for id, body := range a {
		kind, name, _ := strings.Cut(id, " ")
		_, name, _ = strings.Cut(name, "/")
		containers := want[name]
		if kind != "Deployment" || len(containers) == 0 {
			continue
		}
		prev, ok := b[id]
		if !ok {
			continue
		}
		for _, c := range podContainers(body) {
			for res, q := range containers[c["name"].(string)] {
				found++
				got := dig(c, "resources", "requests", res)
				if !sameQuantity(got, q) {
					t.Errorf("%s: container %s requests %s = %v, want %s", id, c["name"], res, got, q)
				}
				// The value before stands in for it: what remains must
				// be equal.
				was := dig(containerNamed(prev, c["name"].(string)), "resources", "requests", res)
				if was == got {
					t.Errorf("%s: container %s requests %s stayed %v", id, c["name"], res, got)
				}
				setRequest(c, res, was)
			}
		}
	}
	if wanted := countRequests(want); found != wanted {
		t.Errorf("found %d of the %d requests expected in the release's output", found, wanted)
	}
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("the release's output differs beyond the recommended requests (-before +after):\n%s", diff)
	}
}

// sameQuantity reports whether a rendered value is the quantity q.
func sameQuantity(v any, q string) bool {
	s, _ := v.(string)
	got, err := resource.ParseQuantity(s)
	if err != nil {
		return false
	}
	want := resource.MustParse(q)
	return got.Cmp(want) == 0
}

// podContainers returns the containers of a Deployment's pod template.
func podContainers(body map[string]any) []map[string]any {
	list, _ := dig(body, "spec", "template", "spec", "containers").([]any)
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// containerNamed returns the container name of a Deployment's pod template.
func containerNamed(body map[string]any, name string) map[string]any {
	for _, c := range podContainers(body) {
		if c["name"] == name {
			return c
		}
	}
	return nil
}

// setRequest sets, or removes when v is nil, a container's request.
func setRequest(c map[string]any, res string, v any) {
	requests, _ := dig(c, "resources", "requests").(map[string]any)
	if v == nil {
		delete(requests, res)
		return
	}
	requests[res] = v
}

// countRequests counts the requests of want.
func countRequests(want requestsAt) int {
	n := 0
	for _, containers := range want {
		for _, requests := range containers {
			n += len(requests)
		}
	}
	return n
}

// dig returns the value at keys in nested mappings, or nil.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// helmCase is a GitOps repository whose production workloads a Helm
// release of a chart in the repository installs, and what a run must do
// with it.
type helmCase struct {
	name string
	// namespace is production's namespace in the cluster.
	namespace string
	files     func(repoURL string) map[string]string
	// release is an environment's release as its controller renders it
	// from the checkout at root.
	release func(t *testing.T, root, env string) helmRelease
	// mark gives the objects of production's release the labels and
	// annotations its controller sets.
	mark func(o helmrender.Object) (labels, annotations map[string]string)
	// args are the run's settings beyond the test bed's.
	args []string
	// unhinted, when set, is what the report says of each target in a
	// run without args.
	unhinted string
	// file is the file the values go to, and pushed what it must hold.
	file, pushed string
	// helm is the report's source.helm of both targets.
	helm plan.Helm
	// message must be in the commit message; helmLine must be in the
	// pull request body above each target's table.
	message  []string
	helmLine string
}

// TestEndToEndHelm runs the job on a Flux and an Argo CD repository whose
// production workloads a Helm release renders from a chart of the
// repository, staging rendering the same chart with its own values: the
// values of production's release get the recommended requests at the keys
// that set them, in the file a person would edit, so that the Helm SDK
// renders production's release exactly as before but for those requests,
// and staging's release, its overlay and values files exactly as before.
// The report, the commit message and the pull request body name the
// release, its chart and the values keys. A Flux run that does not say
// which cluster it sizes edits nothing, and a second run pushes nothing.
func TestEndToEndHelm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: helmHistory(now)})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0]); err != nil {
		t.Fatalf("applying the CRD: %v", err)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}

	fluxLayer := "spec.values of HelmRelease shop/shop (apps/base/shop/release.yaml, rendered by apps/production)"
	argoLayer := "the values file charts/shop/values-production.yaml"
	for _, tc := range []helmCase{
		{
			name:      "flux",
			namespace: "shop",
			files:     fluxRepo,
			release: func(t *testing.T, root, env string) helmRelease {
				return fluxRelease(t, root, "apps/"+env)
			},
			mark: func(helmrender.Object) (map[string]string, map[string]string) {
				return map[string]string{"helm.toolkit.fluxcd.io/name": "shop", "helm.toolkit.fluxcd.io/namespace": "shop"},
					map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "shop"}
			},
			// The run of the production cluster: staging deploys the same
			// HelmRelease to a namespace of the same name elsewhere.
			args:     []string{"--render-paths", "shop=apps/production"},
			unhinted: "ambiguous target: HelmRelease.helm.toolkit.fluxcd.io shop/shop is defined in apps/base/shop/release.yaml (document 1) via apps/production/kustomization.yaml, apps/base/shop/release.yaml (document 1) via apps/staging/kustomization.yaml",
			file:     "apps/production/shop-values.yaml",
			pushed: strings.NewReplacer(
				"cpu: 500m # sized", "cpu: 390m # sized",
				"memory: 512Mi", "memory: 65Mi",
				"      replicaCount: 2\n", "      replicaCount: 2\n      resources:\n        requests:\n          cpu: 26m\n          memory: 260Mi\n",
			).Replace(fluxProduction),
			helm: plan.Helm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop",
				Chart: "shop", Version: "0.3.0", ChartSource: "charts/shop", Layer: fluxLayer},
			message: []string{
				"shop/shop-web: Deployment shop-web (apps/production/shop-values.yaml)\n" +
					"  via Helm release shop/shop (chart shop 0.3.0): " + fluxLayer + "\n" +
					"  web: cpu 500m -> 390m (web.resources.requests.cpu), memory 512Mi -> 65Mi (web.resources.requests.memory)\n",
				"shop/shop-worker: Deployment shop-worker (apps/production/shop-values.yaml)\n" +
					"  via Helm release shop/shop (chart shop 0.3.0): " + fluxLayer + "\n" +
					"  worker: cpu 50m -> 26m (worker.resources.requests.cpu), memory 64Mi -> 260Mi (worker.resources.requests.memory)\n",
			},
			helmLine: "Through Helm release `shop/shop`, installed by HelmRelease `shop/shop`, chart `shop` `0.3.0` from `charts/shop`; " +
				`values written to spec.values of HelmRelease shop/shop \(apps/base/shop/release.yaml, rendered by apps/production\).`,
		},
		{
			name:      "argo",
			namespace: "storefront",
			files:     argoRepo,
			release: func(t *testing.T, root, env string) helmRelease {
				return argoRelease(t, root, "argocd/shop-"+env+".yaml")
			},
			mark: func(o helmrender.Object) (map[string]string, map[string]string) {
				// Argo CD's tracking-id: <app>:<group>/<kind>:<namespace>/<name>.
				group, _, ok := strings.Cut(o.APIVersion, "/")
				if !ok {
					group = ""
				}
				return nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop-production:" + group + "/" + o.Kind + ":" + o.Namespace + "/" + o.Name}
			},
			file: "charts/shop/values-production.yaml",
			pushed: strings.NewReplacer(
				"cpu: 500m # sized", "cpu: 390m # sized",
				"memory: 512Mi", "memory: 65Mi",
				"  replicaCount: 2\n", "  replicaCount: 2\n  resources:\n    requests:\n      cpu: 26m\n      memory: 260Mi\n",
			).Replace(argoProduction),
			helm: plan.Helm{Kind: "Application", Object: "argocd/shop-production", Release: "shop", Namespace: "storefront",
				Chart: "shop", Version: "0.3.0", ChartSource: "charts/shop", Layer: argoLayer},
			message: []string{
				"storefront/shop-web: Deployment shop-web (charts/shop/values-production.yaml)\n" +
					"  via Helm release storefront/shop (chart shop 0.3.0): " + argoLayer + "\n" +
					"  web: cpu 500m -> 390m (web.resources.requests.cpu), memory 512Mi -> 65Mi (web.resources.requests.memory)\n",
				"storefront/shop-worker: Deployment shop-worker (charts/shop/values-production.yaml)\n" +
					"  via Helm release storefront/shop (chart shop 0.3.0): " + argoLayer + "\n" +
					"  worker: cpu 50m -> 26m (worker.resources.requests.cpu), memory 64Mi -> 260Mi (worker.resources.requests.memory)\n",
			},
			helmLine: "Through Helm release `storefront/shop`, installed by Application `argocd/shop-production`, chart `shop` `0.3.0` from `charts/shop`; " +
				"values written to the values file charts/shop/values-production.yaml.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repoName := "fleet-" + tc.name
			files := tc.files(bed.Git.URL(repoName))
			repoURL := testbedtest.CreateRepo(t, bed, repoName, files)
			before, _ := checkout(t, repoURL, auth, "main")
			production, staging := tc.release(t, before, "production"), tc.release(t, before, "staging")
			productionBefore, stagingBefore := production.render(t, before), staging.render(t, before)

			// The cluster: production's release as its controller
			// installed it, and a ResourceRecommend per Deployment.
			cluster := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + tc.namespace + "\n")
			live := installed(t, productionBefore, tc.mark)
			recommends := layoutsRecommend(tc.namespace, "shop-web") + "---\n" + layoutsRecommend(tc.namespace, "shop-worker")
			if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), cluster, live, []byte(recommends)); err != nil {
				t.Fatalf("applying cluster objects: %v", err)
			}

			args := bedArgs(t, bed, repoURL, append([]string{"--namespaces", tc.namespace}, tc.args...)...)
			if tc.unhinted != "" {
				// Staging and production both deploy the release: a run
				// that does not say which cluster it sizes edits nothing.
				var stdout, stderr bytes.Buffer
				if code := run(ctx, append(bedArgs(t, bed, repoURL, "--namespaces", tc.namespace), "--dry-run"), &stdout, &stderr); code != exitNotRendered {
					t.Errorf("run() without %v = %d, want %d; stderr:\n%s", tc.args, code, exitNotRendered, stderr.String())
				}
				var unhinted plan.Plan
				if err := json.Unmarshal(stdout.Bytes(), &unhinted); err != nil {
					t.Fatalf("decoding report: %v\n%s", err, stdout.String())
				}
				for _, target := range []string{"shop-web", "shop-worker"} {
					if it := entry(t, &unhinted, tc.namespace, target); it.Source == nil || !strings.Contains(it.Source.Error, tc.unhinted) {
						t.Errorf("%s without %v: source %+v, want %q", target, tc.args, it.Source, tc.unhinted)
					}
				}
			}
			// A dry run with a forge shows the pull request body it would
			// write, without calling the forge. Its settings are checked
			// all the same: the bed's git server has no owner in its
			// paths, so the forge's repository is named.
			dry := runJSON(t, ctx, append(slices.Clone(args), "--dry-run", "--forge", "gitea", "--forge-api-url", "http://127.0.0.1:1",
				"--forge-repository", "platform/fleet"))
			if dry.Git == nil || dry.Git.PullRequest == nil || dry.Git.PullRequest.Action != plan.PRPlanned {
				t.Fatalf("dry run git = %+v, want a planned pull request", dry.Git)
			}
			body := dry.Git.PullRequest.Body
			rep := runJSON(t, ctx, args)
			if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, []string{tc.file}) {
				t.Fatalf("git = %+v, want %s pushed", rep.Git, tc.file)
			}

			// The report: the recommendations, where they went, through
			// which release and at which keys.
			want := requestsAt{}
			for _, w := range []struct {
				target, container, cpu, memory, currentCPU, currentMemory string
			}{
				{"shop-web", "web", "390m", "65Mi", "500m", "512Mi"},
				{"shop-worker", "worker", "26m", "260Mi", "50m", "64Mi"},
			} {
				it := entry(t, rep, tc.namespace, w.target)
				if !it.Valid || it.Source == nil {
					t.Errorf("%s: valid %v error %+v source %+v, want a valid item rendered", w.target, it.Valid, it.Error, it.Source)
					continue
				}
				if it.Source.File != tc.file || !it.Source.Changed || it.Source.Error != "" || it.Source.Method != plan.MethodSplice {
					t.Errorf("%s: source %+v, want %s spliced", w.target, it.Source, tc.file)
				}
				if it.Source.Helm == nil || !reflect.DeepEqual(*it.Source.Helm, tc.helm) {
					t.Errorf("%s: source.helm = %+v, want %+v", w.target, it.Source.Helm, tc.helm)
				}
				if len(it.Containers) != 1 || it.Containers[0].Name != w.container {
					t.Errorf("%s: containers %+v, want %s alone", w.target, it.Containers, w.container)
					continue
				}
				c := it.Containers[0]
				wantKeys := map[string]string{
					"requests.cpu":    w.container + ".resources.requests.cpu",
					"requests.memory": w.container + ".resources.requests.memory",
				}
				if !reflect.DeepEqual(c.ValuesKeys, wantKeys) {
					t.Errorf("%s: valuesKeys = %v, want %v", w.target, c.ValuesKeys, wantKeys)
				}
				for res, q := range map[string][2]string{"cpu": {w.currentCPU, w.cpu}, "memory": {w.currentMemory, w.memory}} {
					r := resourceOf(it, w.container, res)
					if quantity(r.Current) != q[0] || quantity(r.Recommended) != q[1] || !r.Changed {
						t.Errorf("%s %s: current %q recommended %q changed %v, want %s -> %s",
							w.target, res, quantity(r.Current), quantity(r.Recommended), r.Changed, q[0], q[1])
					}
					if want[w.target] == nil {
						want[w.target] = map[string]map[string]string{w.container: {}}
					}
					want[w.target][w.container][res] = quantity(r.Recommended)
				}
			}

			// The pushed branch: the values file gains the requests and
			// keeps its comments; no other file changes.
			after, commit := checkout(t, repoURL, auth, "recommend-job/main")
			if commit.Hash.String() != rep.Git.Commit {
				t.Errorf("branch tip = %s, want the reported commit %s", commit.Hash, rep.Git.Commit)
			}
			got := tree(t, after)
			if got[tc.file] != tc.pushed {
				t.Errorf("pushed %s:\n%s\nwant:\n%s", tc.file, got[tc.file], tc.pushed)
			}
			delete(got, tc.file)
			delete(files, tc.file)
			if diff := cmp.Diff(files, got); diff != "" {
				t.Errorf("files besides %s changed (-main +branch):\n%s", tc.file, diff)
			}

			// Production's release renders as before but for the
			// recommended requests; staging's exactly as before.
			assertOnlyRequests(t, productionBefore, tc.release(t, after, "production").render(t, after), want)
			stagingAfter := tc.release(t, after, "staging")
			if string(stagingAfter.inputs) != string(staging.inputs) {
				t.Errorf("staging's inputs changed:\n%s\nwere:\n%s", stagingAfter.inputs, staging.inputs)
			}
			if diff := cmp.Diff(stagingBefore, stagingAfter.render(t, after)); diff != "" {
				t.Errorf("staging's release renders differently (-before +after):\n%s", diff)
			}

			// A second run renders the same change on the base, finds the
			// branch holding it, and pushes nothing.
			if again := runJSON(t, ctx, args); again.Git == nil || again.Git.Pushed || again.Git.Commit != "" {
				t.Errorf("second run git = %+v, want nothing pushed", again.Git)
			}
			if _, tip := checkout(t, repoURL, auth, "recommend-job/main"); tip.Hash != commit.Hash {
				t.Errorf("second run moved the branch from %s to %s", commit.Hash, tip.Hash)
			}

			// The commit message and the pull request body name the
			// release, its chart, the values edited and the keys.
			for _, s := range tc.message {
				if !strings.Contains(commit.Message, s) {
					t.Errorf("commit message lacks\n%s\nin:\n%s", s, commit.Message)
				}
			}
			if n := strings.Count(body, "\n"+tc.helmLine+"\n"); n != 2 {
				t.Errorf("pull request body names the release above %d tables, want 2: %q in:\n%s", n, tc.helmLine, body)
			}
			// Each row: the change, the evidence, and the values key last.
			lines := strings.Split(body, "\n")
			for _, row := range []struct{ change, key string }{
				{"| web | cpu | 500m | 390m | -22.0% |", "| `web.resources.requests.cpu` |"},
				{"| web | memory | 512Mi | 65Mi | -87.3% |", "| `web.resources.requests.memory` |"},
				{"| worker | cpu | 50m | 26m | -48.0% |", "| `worker.resources.requests.cpu` |"},
				{"| worker | memory | 64Mi | 260Mi | +306.2% |", "| `worker.resources.requests.memory` |"},
			} {
				if !slices.ContainsFunc(lines, func(l string) bool {
					return strings.HasPrefix(l, row.change) && strings.HasSuffix(l, row.key)
				}) {
					t.Errorf("pull request body lacks a row %s ... %s:\n%s", row.change, row.key, body)
				}
			}
		})
	}
}
