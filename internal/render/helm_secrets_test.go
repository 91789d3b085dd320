//go:build integration

package render

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestTenantTakesNoOtherNamespacesSecret is issue 37's first attack, in a
// Flux multi-tenant repository: a tenant's HelmRelease names a
// HelmRepository of the victim's namespace, and the tenant's own file
// claims that namespace with the tenant's server (insecure, so that plain
// HTTP is no bar) and the victim's Secret. The tenant's Kustomization
// applies as its own service account, so the file's namespace is only
// claimed: the victim's Secret is not read, the server gets no
// Authorization header, and the release is refused naming the source and
// the namespace. The victim's own HelmRepository, applied by the victim's
// Kustomization, is fetched with the victim's login.
func TestTenantTakesNoOtherNamespacesSecret(t *testing.T) {
	const user, password = "victim", "pw-victim-7d21"
	var mu sync.Mutex
	var auth []string
	record := helmtest.WithRequestHook(func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if h := r.Header.Get("Authorization"); h != "" {
			auth = append(auth, h)
		}
	})
	tenantRepo := helmtest.NewRepo(t, record)
	tenantRepo.Add(t, "shop", "1.4.0", chartFiles(t))
	victimRepo := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
	victimRepo.Add(t, "shop", "1.4.0", chartFiles(t))
	secrets := t.TempDir()
	d := filepath.Join(secrets, "victim", "registry-auth")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"username": user, "password": password} {
		if err := os.WriteFile(filepath.Join(d, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	kustomization := func(tenant string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + tenant + `
  namespace: ` + tenant + `
spec:
  serviceAccountName: ` + tenant + `
  path: ./tenants/` + tenant + `
  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`
	}
	release := func(ns string) string {
		return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: ` + ns + `
spec:
  chart:
    spec:
      chart: shop
      version: 1.4.0
      sourceRef: {kind: HelmRepository, name: private, namespace: victim}
  values:
    web:
      replicas: 2
`
	}
	repository := func(url string, insecure bool) string {
		s := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: private\n  namespace: victim\nspec:\n  url: " + url + "\n  secretRef:\n    name: registry-auth\n"
		if insecure {
			s += "  insecure: true\n"
		}
		return s
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"clusters/main/tenants/attacker.yaml": kustomization("attacker"),
		"clusters/main/tenants/victim.yaml":   kustomization("victim"),
		"tenants/attacker/kustomization.yaml": "resources: [release.yaml, repository.yaml]\n",
		"tenants/attacker/release.yaml":       release("attacker"),
		"tenants/attacker/repository.yaml":    repository(tenantRepo.URL, true),
		"tenants/victim/kustomization.yaml":   "resources: [release.yaml, repository.yaml]\n",
		"tenants/victim/release.yaml":         release("victim"),
		"tenants/victim/repository.yaml":      repository(victimRepo.URL, true),
	})
	change := func(ns string) Change {
		return Change{
			Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "shop-worker",
				Labels:      map[string]string{repoindex.FluxHelmName: "shop", repoindex.FluxHelmNamespace: ns},
				Annotations: map[string]string{repoindex.HelmReleaseName: "shop", repoindex.HelmReleaseNS: ns}},
			Container: "worker",
			Requests:  quantities(map[string]string{"cpu": "40m"}),
		}
	}
	out, err := Apply(context.Background(), root, ".", []Change{change("attacker"), change("victim")},
		WithCharts(chartfetch.NewLoader(chartfetch.WithSecretsDir(secrets))))
	if err != nil {
		t.Fatal(err)
	}
	attacker, victim := out.Results[0], out.Results[1]
	if !errors.Is(attacker.Err, helmsource.ErrSecretNotBound) || !strings.Contains(attacker.Err.Error(), "the HelmRepository victim/private names Secrets of victim") ||
		!strings.Contains(attacker.Err.Error(), "as the service account attacker") || attacker.Changed {
		t.Errorf("attacker: changed %v, err %v; want refused, naming the HelmRepository victim/private and why", attacker.Changed, attacker.Err)
	}
	mu.Lock()
	got := len(auth)
	mu.Unlock()
	if got != 0 || tenantRepo.Requests("index.yaml") != 0 {
		t.Errorf("the attacker's server got %d Authorization headers and %d index requests, want none", got, tenantRepo.Requests("index.yaml"))
	}
	if victim.Err != nil || !victim.Changed || victim.File != "tenants/victim/release.yaml" {
		t.Errorf("victim: changed %v in %s, err %v; want its release's values changed with its own login", victim.Changed, victim.File, victim.Err)
	}
}
