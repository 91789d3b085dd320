//go:build integration

package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// sharedRepo is a GitOps repository whose sources several deployers
// share: three Argo CD Applications deploy the plain directory
// declarative/manifests into demo1, demo2 and demo3 (as
// argocd-example-apps' guestbook), and two Flux Kustomizations build the
// kustomization apps/podinfo into staging and production with
// targetNamespace.
var sharedRepo = func() map[string]string {
	files := map[string]string{
		"declarative/manifests/deployment.yml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        name: guestbook-ui
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
`,
		"declarative/manifests/service.yml": `apiVersion: v1
kind: Service
metadata:
  name: guestbook-ui
spec:
  ports:
  - port: 80
  selector:
    app: guestbook-ui
`,
		"apps/podinfo/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n",
		"apps/podinfo/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: podinfod
          image: ghcr.io/stefanprodan/podinfo:6.7.0
          resources:
            requests:
              cpu: 100m
              memory: 64Mi
`,
	}
	for i := 1; i <= 3; i++ {
		files[fmt.Sprintf("argocd/demo-app%d.yaml", i)] = fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: demo-app%d
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.com/gitops.git
    path: declarative/manifests
  destination:
    server: https://kubernetes.default.svc
    namespace: demo%d
`, i, i)
	}
	for _, env := range []string{"staging", "production"} {
		files["clusters/"+env+"/apps.yaml"] = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./apps/podinfo
  prune: true
  targetNamespace: ` + env + "\n"
	}
	return files
}()

// sharedCluster is what runs: guestbook-ui in demo1..3, tracked by their
// Applications, and podinfo in staging and production, labelled by their
// Kustomization; a ResourceRecommend for each but demo3's.
func sharedCluster() string {
	var b strings.Builder
	deployment := func(ns, name, container string, labels, annotations map[string]string) {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n", ns)
		fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
		for _, m := range []struct {
			key string
			kv  map[string]string
		}{{"labels", labels}, {"annotations", annotations}} {
			if len(m.kv) > 0 {
				fmt.Fprintf(&b, "  %s:\n", m.key)
				for k, v := range m.kv {
					fmt.Fprintf(&b, "    %s: %q\n", k, v)
				}
			}
		}
		fmt.Fprintf(&b, `spec:
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: %[2]s
        image: example/%[1]s:1
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
---
`, name, container)
	}
	for i := 1; i <= 3; i++ {
		ns := fmt.Sprintf("demo%d", i)
		deployment(ns, "guestbook-ui", "guestbook-ui", nil, map[string]string{
			"argocd.argoproj.io/tracking-id": fmt.Sprintf("demo-app%d:apps/Deployment:%s/guestbook-ui", i, ns),
		})
	}
	for _, env := range []string{"staging", "production"} {
		deployment(env, "podinfo", "podinfod", map[string]string{
			"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
		}, nil)
	}
	b.WriteString(layoutsRecommend("demo1", "guestbook-ui") + "---\n" + layoutsRecommend("demo2", "guestbook-ui") + "---\n" +
		layoutsRecommend("staging", "podinfo") + "---\n" + layoutsRecommend("production", "podinfo"))
	return b.String()
}

// sharedHistory is a week of steady usage, different per namespace, so
// that every ResourceRecommend asks for values of its own.
func sharedHistory(end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, w := range []struct {
		ns, name, container string
		cpu, memory         float64
	}{
		{"demo1", "guestbook-ui", "guestbook-ui", 0.05, 40 * mib},
		{"demo2", "guestbook-ui", "guestbook-ui", 0.25, 200 * mib},
		{"demo3", "guestbook-ui", "guestbook-ui", 0.1, 60 * mib},
		{"staging", "podinfo", "podinfod", 0.03, 30 * mib},
		{"production", "podinfo", "podinfod", 0.4, 300 * mib},
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

// TestEndToEndSharedSources runs the job, one pull request per deployer,
// where deployers of different namespaces share a source. The shared
// files are untouched on every pushed branch; the Flux targets are
// written in their own Kustomization's spec.patches, with the values the
// report gives; the Argo CD targets, whose shared path is a plain
// directory that cannot take an Application's patch, are refused naming
// the other Applications; and no two pull requests write one file. Once
// the path has a kustomization, demo1's and demo2's values land in their
// own Applications' kustomize.patches, in two pull requests.
func TestEndToEndSharedSources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: sharedHistory(now)})
	crd := shopObjects(t, true)[0]
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), crd, []byte(sharedCluster())); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "shared", sharedRepo)
	rep := runJSON(t, ctx, bedArgs(t, bed, repoURL, "--pr-group-by", "application"))

	for _, ns := range []string{"demo1", "demo2"} {
		it := entry(t, rep, ns, "guestbook-ui")
		s := it.Source
		if s == nil || s.Changed || s.Error == "" {
			t.Errorf("%s/guestbook-ui source = %+v, want refused", ns, s)
			continue
		}
		for i := 1; i <= 3; i++ {
			other := fmt.Sprintf("argocd/demo-app%d (into demo%d)", i, i)
			if fmt.Sprintf("demo%d", i) != ns && !strings.Contains(s.Error, other) {
				t.Errorf("%s/guestbook-ui: error %q does not name %s", ns, s.Error, other)
			}
		}
		if !strings.Contains(s.Error, "overlay of its own") {
			t.Errorf("%s/guestbook-ui: error %q does not say what would make it editable", ns, s.Error)
		}
	}

	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	writers := sharedUntouched(t, rep, repoURL, auth, sharedRepo)
	for _, env := range []string{"staging", "production"} {
		it := entry(t, rep, env, "podinfo")
		file := "clusters/" + env + "/apps.yaml"
		if it.Source == nil || it.Source.File != file || !it.Source.Changed || it.Source.Error != "" {
			t.Errorf("%s/podinfo source = %+v, want %s changed", env, it.Source, file)
			continue
		}
		branch, ok := writers[file]
		if !ok {
			t.Errorf("%s is on no pushed branch", file)
			continue
		}
		got, _ := fileAt(t, repoURL, auth, branch, file)
		cpu := quantity(resourceOf(it, "podinfod", "cpu").Recommended)
		memory := quantity(resourceOf(it, "podinfod", "memory").Recommended)
		want := sharedRepo[file] + "  patches:\n    - patch: |\n"
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "cpu: "+cpu+"\n") || !strings.Contains(got, "memory: "+memory+"\n") ||
			!strings.Contains(got, "target:\n        group: apps\n        kind: Deployment\n        name: podinfo\n") {
			t.Errorf("pushed %s, want its spec.patches to set cpu %s and memory %s:\n%s", file, cpu, memory, got)
		}
		if slices.Contains([]string{"", "0"}, cpu) {
			t.Errorf("%s/podinfo has no recommended cpu", env)
		}
	}

	// A kustomization in the shared path, as the refusal asks for: each
	// Application can now carry a patch of its own, and demo1's and
	// demo2's land in their Applications, on branches of their own.
	files := maps.Clone(sharedRepo)
	files["declarative/manifests/kustomization.yaml"] = "resources:\n- deployment.yml\n- service.yml\n"
	pushCommit(t, repoURL, auth, &object.Signature{Name: "dev", Email: "dev@example.com", When: time.Now()},
		"declarative/manifests/kustomization.yaml", files["declarative/manifests/kustomization.yaml"], "declarative: a kustomization")
	rep = runJSON(t, ctx, bedArgs(t, bed, repoURL, "--pr-group-by", "application"))
	writers = sharedUntouched(t, rep, repoURL, auth, files)
	for i, ns := range []string{"demo1", "demo2"} {
		it := entry(t, rep, ns, "guestbook-ui")
		file := fmt.Sprintf("argocd/demo-app%d.yaml", i+1)
		if it.Source == nil || it.Source.File != file || !it.Source.Changed || it.Source.Error != "" {
			t.Errorf("%s/guestbook-ui source = %+v, want %s changed", ns, it.Source, file)
			continue
		}
		branch, ok := writers[file]
		if !ok {
			t.Errorf("%s is on no pushed branch", file)
			continue
		}
		got, _ := fileAt(t, repoURL, auth, branch, file)
		cpu := quantity(resourceOf(it, "guestbook-ui", "cpu").Recommended)
		if !strings.HasPrefix(got, strings.TrimSuffix(sharedRepo[file], "  destination:\n    server: https://kubernetes.default.svc\n    namespace: "+ns+"\n")) ||
			!strings.Contains(got, "    kustomize:\n      patches:\n") || !strings.Contains(got, "cpu: "+cpu+"\n") {
			t.Errorf("pushed %s, want its kustomize.patches to set cpu %s:\n%s", file, cpu, got)
		}
	}
}

// sharedUntouched checks that no pushed branch of rep changes the shared
// files (those under declarative/ and apps/, as files has them) and that
// no two pull requests write one file, and returns each written file's
// branch.
func sharedUntouched(t *testing.T, rep *plan.Plan, repoURL string, auth *githttp.BasicAuth, files map[string]string) map[string]string {
	t.Helper()
	writers, groups := map[string]string{}, map[string]string{}
	pushed := 0
	for _, g := range rep.Groups {
		if g.Git == nil || !g.Git.Pushed {
			continue
		}
		pushed++
		for _, f := range g.Git.Files {
			if other, ok := groups[f]; ok {
				t.Errorf("%s is written by the pull requests of %s and %s", f, other, g.Name)
			}
			groups[f], writers[f] = g.Name, g.Git.Branch
		}
		for name, original := range files {
			if !strings.HasPrefix(name, "declarative/") && !strings.HasPrefix(name, "apps/") {
				continue
			}
			if got, _ := fileAt(t, repoURL, auth, g.Git.Branch, name); got != original {
				t.Errorf("branch %s changes the shared %s:\n%s", g.Git.Branch, name, got)
			}
		}
	}
	if pushed == 0 {
		t.Fatalf("no branch pushed; groups %+v", rep.Groups)
	}
	return writers
}
