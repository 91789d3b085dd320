//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/plan"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// tenantKustomization is the Flux Kustomization that deploys a tenant's
// directory as the tenant's own service account, as flux create tenant
// sets one up.
func tenantKustomization(tenant string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + tenant + `
  namespace: ` + tenant + `
spec:
  interval: 10m0s
  serviceAccountName: ` + tenant + `
  path: ./tenants/` + tenant + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
    namespace: flux-system
`
}

// tenantRelease is a tenant's HelmRelease of the shop chart in namespace
// ns, through the HelmRepository victim/private.
func tenantRelease(ns string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: ` + ns + `
spec:
  interval: 10m
  chart:
    spec:
      chart: shop
      version: 0.3.0
      sourceRef:
        kind: HelmRepository
        name: private
        namespace: victim
  values:
    worker:
      replicaCount: 2
`
}

// privateRepository is a HelmRepository victim/private of the chart
// repository at url, over plain HTTP (spec.insecure) with the login of
// the Secret registry-auth.
func privateRepository(url string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: private
  namespace: victim
spec:
  interval: 1h
  url: ` + url + `
  insecure: true
  secretRef:
    name: registry-auth
`
}

// TestEndToEndTenantTakesNoOtherNamespacesSecret runs the job on issue
// 37's first attack in a Flux multi-tenant repository: the attacker's
// HelmRelease names the HelmRepository victim/private, and a file of the
// attacker's directory claims that name with the attacker's own chart
// repository (insecure, so plain HTTP is no bar and only the namespace
// binding protects) and the victim's Secret registry-auth, which
// chart-secrets-dir holds. The attacker's Kustomization applies its
// directory as the service account attacker, so nothing establishes that
// the file is in victim: the attacker's chart repository, which records
// every Authorization header, gets none and no request for its index;
// the attacker's target is refused, its source.error naming the
// HelmRepository victim/private and the service account; nothing of the
// attacker's directory changes. The victim's own HelmRepository, applied
// by the victim's Kustomization, is fetched with the victim's login and
// the victim's values are pushed; the run exits 0, and neither its logs,
// its report nor its commit hold the victim's password.
func TestEndToEndTenantTakesNoOtherNamespacesSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const user, password = "victim", "pw-victim-5e83b1"

	// Each tenant's shop worker uses 0.02 cores and 200Mi: 26m and 260Mi
	// with the 30% buffer (see helmHistory), from the chart's 50m and
	// 64Mi.
	now := time.Now().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, ns := range []string{"attacker", "victim"} {
		for _, span := range history.Rollouts("shop-worker", 2, 2, start, now) {
			for _, pod := range span.Pods {
				containers = append(containers, history.Container{Namespace: ns, Pod: pod, Container: "worker",
					Start: span.Start, End: span.End, CPU: history.Constant(0.02), Memory: history.Constant(200 * mib)})
			}
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(containers, time.Minute)})

	// The chart repositories: the attacker's records the Authorization
	// header of every request; the victim's asks for the victim's login.
	var mu sync.Mutex
	var headers []string
	attackerRepo := helmtest.NewRepo(t, helmtest.WithRequestHook(func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if h := r.Header.Get("Authorization"); h != "" {
			headers = append(headers, h)
		}
	}))
	attackerRepo.Add(t, "shop", "0.3.0", shopChart)
	victimRepo := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
	victimRepo.Add(t, "shop", "0.3.0", shopChart)

	// The victim's Secret, mounted as the chart mounts chartSecrets.
	secrets := t.TempDir()
	dir := filepath.Join(secrets, "victim", "registry-auth")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"username": user, "password": password} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The cluster: each tenant's release as helm-controller installed it,
	// and a ResourceRecommend of each worker.
	chartDir := t.TempDir()
	for name, content := range shopChart {
		p := filepath.Join(chartDir, "shop", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := chartfetch.LoadDir(os.DirFS(chartDir), "shop")
	if err != nil {
		t.Fatal(err)
	}
	cluster := [][]byte{shopObjects(t, true)[0]}
	for _, ns := range []string{"attacker", "victim"} {
		objs, err := helmrender.Engine{}.Render(ctx, helmrender.Release{Name: "shop", Namespace: ns, Chart: ch,
			Values: map[string]any{"worker": map[string]any{"replicaCount": 2}}})
		if err != nil {
			t.Fatal(err)
		}
		live := installed(t, objs, func(helmrender.Object) (map[string]string, map[string]string) {
			return map[string]string{"helm.toolkit.fluxcd.io/name": "shop", "helm.toolkit.fluxcd.io/namespace": ns},
				map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": ns}
		})
		cluster = append(cluster, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n"), live,
			[]byte(layoutsRecommend(ns, "shop-worker")))
	}
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), cluster...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	files := map[string]string{
		"clusters/main/tenants/attacker.yaml": tenantKustomization("attacker"),
		"clusters/main/tenants/victim.yaml":   tenantKustomization("victim"),
		"tenants/attacker/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - release.yaml\n  - repository.yaml\n",
		"tenants/attacker/release.yaml":       tenantRelease("attacker"),
		"tenants/attacker/repository.yaml":    privateRepository(attackerRepo.URL),
		"tenants/victim/kustomization.yaml":   "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - release.yaml\n  - repository.yaml\n",
		"tenants/victim/release.yaml":         tenantRelease("victim"),
		"tenants/victim/repository.yaml":      privateRepository(victimRepo.URL),
	}
	repoURL := testbedtest.CreateRepo(t, bed, "tenants", files)
	args := bedArgs(t, bed, repoURL, "--namespaces", "attacker,victim", "--chart-secrets-dir", secrets)

	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if code != exitOK {
		t.Errorf("run() = %d, want %d (the victim's target rendered); stderr:\n%s", code, exitOK, stderr.String())
	}

	// The attacker's server got no login, nor any request for its index.
	mu.Lock()
	got := append([]string(nil), headers...)
	mu.Unlock()
	if len(got) != 0 || attackerRepo.Requests("index.yaml") != 0 {
		t.Errorf("the attacker's chart repository got %d Authorization headers %q and %d index requests, want none",
			len(got), got, attackerRepo.Requests("index.yaml"))
	}
	if strings.Contains(stderr.String(), password) || strings.Contains(stdout.String(), password) {
		t.Errorf("the victim's password appears in the logs or the report")
	}

	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("decoding report: %v\nstderr:\n%s", err, stderr.String())
	}
	attacker := entry(t, rep, "attacker", "shop-worker")
	if attacker.Source == nil || attacker.Source.Changed ||
		!strings.Contains(attacker.Source.Error, "the HelmRepository victim/private names Secrets of victim, and nothing establishes that it is in victim") ||
		!strings.Contains(attacker.Source.Error, "as the service account attacker") {
		t.Errorf("attacker: source %+v, want refused, naming the HelmRepository victim/private and the service account attacker", attacker.Source)
	}
	victim := entry(t, rep, "victim", "shop-worker")
	if victim.Source == nil || !victim.Source.Changed || victim.Source.Error != "" || victim.Source.File != "tenants/victim/release.yaml" {
		t.Errorf("victim: source %+v, want tenants/victim/release.yaml changed", victim.Source)
	}
	if victimRepo.Requests("index.yaml") == 0 {
		t.Errorf("the victim's chart repository got no request for its index")
	}

	// The pushed branch: the victim's values gain the worker's requests;
	// nothing else changes, nothing of the attacker's directory above all.
	if rep.Git == nil || !rep.Git.Pushed {
		t.Fatalf("git = %+v, want the victim's change pushed", rep.Git)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	after, commit := checkout(t, repoURL, auth, "recommend-job/main")
	if strings.Contains(commit.Message, password) {
		t.Errorf("the victim's password appears in the commit message")
	}
	pushed := tree(t, after)
	want := strings.Replace(files["tenants/victim/release.yaml"], "      replicaCount: 2\n",
		"      replicaCount: 2\n      resources:\n        requests:\n          cpu: 26m\n          memory: 260Mi\n", 1)
	if pushed["tenants/victim/release.yaml"] != want {
		t.Errorf("pushed tenants/victim/release.yaml:\n%s\nwant:\n%s", pushed["tenants/victim/release.yaml"], want)
	}
	delete(pushed, "tenants/victim/release.yaml")
	delete(files, "tenants/victim/release.yaml")
	if diff := cmp.Diff(files, pushed); diff != "" {
		t.Errorf("files besides tenants/victim/release.yaml changed (-main +branch):\n%s", diff)
	}
}
