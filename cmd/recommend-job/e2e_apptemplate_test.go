//go:build integration

package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	sigsyaml "sigs.k8s.io/yaml"

	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// appTemplateDir is the app-template-like chart of render's golden case:
// containers at controllers.<name>.containers.<name>.resources, every
// string of the values passed through tpl.
var appTemplateDir = filepath.Join("..", "..", "internal", "render", "testdata", "helm-app-template", "original")

// appTemplateRelease is atuin's HelmRelease as home-ops repositories write
// it: its chart through spec.chartRef to an OCIRepository of a registry
// that speaks plain HTTP (spec.insecure), tpl strings and an anchor in its
// values, a yaml-language-server line, two containers.
const appTemplateRelease = `---
# yaml-language-server: $schema=https://schemas.example.invalid/helmrelease-helm-v2.schema.json
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: atuin
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: app-template
  values:
    controllers:
      atuin:
        containers:
          app:
            image:
              repository: ghcr.io/atuinsh/atuin
              tag: v18.4.0
            args: ["server", "start", "--port", "{{ .Values.port }}"]
            env:
              ATUIN_PORT: &port 8888
              ATUIN_DB_URI: "postgres://{{ .Release.Name }}@db/atuin"
            resources:
              requests:
                cpu: 10m   # app-template's usual floor
                memory: 256Mi
          sidecar:
            image:
              repository: ghcr.io/example/exporter
              tag: 1.2.3
            env:
              PORT: *port
    port: 8888
    persistence:
      config:
        existingClaim: "{{ .Release.Name }}"
`

// TestEndToEndAppTemplate runs the job on a HelmRelease of the chart from
// an OCI registry, over plain HTTP (the OCIRepository's spec.insecure) and
// over TLS with a private CA (chart-ca-file), in process and on the test
// bed's docker-registry (there over TLS with basic auth, the CA and the
// login read from the Secrets the OCIRepository names), for a Deployment whose
// containers use
// 3m of CPU and 12Mi of memory: the values are edited in place, tpl
// strings, anchor and comments kept, to 3m and 12Mi plus the 30% buffer
// (4m, 16Mi), not the first buckets' ends plus the buffer (13m, 26Mi);
// a second run pushes nothing and reports nothing changed.
func TestEndToEndAppTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, span := range history.Rollouts("atuin", 1, 2, start, now) {
		for _, pod := range span.Pods {
			for _, c := range []string{"app", "sidecar"} {
				containers = append(containers, history.Container{Namespace: "media", Pod: pod, Container: c,
					Start: span.Start, End: span.End, CPU: history.Constant(0.003), Memory: history.Constant(12 * mib)})
			}
		}
	}
	bed := testbedtest.Start(t, testbed.Options{History: history.Series(containers, time.Minute)})

	chart := map[string]string{}
	chartDir := filepath.Join(appTemplateDir, "charts", "app-template")
	for _, name := range []string{"values.yaml", "templates/_helpers.tpl", "templates/controllers.yaml"} {
		data, err := os.ReadFile(filepath.Join(chartDir, name))
		if err != nil {
			t.Fatal(err)
		}
		chart[name] = string(data)
	}

	// The cluster: the release as helm-controller installed it.
	var hr struct {
		Spec struct{ Values map[string]any }
	}
	if err := sigsyaml.Unmarshal([]byte(appTemplateRelease), &hr); err != nil {
		t.Fatal(err)
	}
	ch, err := chartfetch.LoadDir(os.DirFS(appTemplateDir), "charts/app-template")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmrender.Engine{}.Render(ctx, helmrender.Release{Name: "atuin", Namespace: "media", Chart: ch, Values: hr.Spec.Values})
	if err != nil {
		t.Fatal(err)
	}
	live := installed(t, objs, func(helmrender.Object) (map[string]string, map[string]string) {
		return map[string]string{"helm.toolkit.fluxcd.io/name": "atuin", "helm.toolkit.fluxcd.io/namespace": "media"},
			map[string]string{"meta.helm.sh/release-name": "atuin", "meta.helm.sh/release-namespace": "media"}
	})
	namespace := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: media\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], namespace, live, []byte(layoutsRecommend("media", "atuin"))); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	for _, tc := range []struct {
		name string
		// tls serves the registry over HTTPS with a private CA, handed to
		// the job by chart-ca-file; else over plain HTTP, which the
		// OCIRepository's spec.insecure allows.
		tls bool
		// distribution runs the test bed's docker-registry instead of the
		// in-process registry: over plain HTTP the OCIRepository takes
		// the highest tag of a semver range; over TLS it asks for basic
		// auth and the OCIRepository names the chart by digest, its CA in
		// a certSecretRef and the login in a secretRef, both read from
		// chart-secrets-dir.
		distribution bool
		// flux deploys the app with a Flux Kustomization whose
		// targetNamespace is media, the namespace of neither the
		// kustomization nor the HelmRelease's file; sourceNS writes the
		// OCIRepository with it: the Secrets are read from media either
		// way, as Flux reads them.
		flux, sourceNS bool
	}{
		{name: "plain HTTP"}, {name: "TLS with a private CA", tls: true},
		{name: "docker-registry plain HTTP", distribution: true},
		{name: "docker-registry TLS and basic auth from Secrets", tls: true, distribution: true},
		{name: "Secrets in the Kustomization's targetNamespace", tls: true, distribution: true, flux: true},
		{name: "Secrets in the Kustomization's targetNamespace, the source's own", tls: true, distribution: true, flux: true, sourceNS: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []helmtest.RepoOption
			insecure := "  insecure: true\n"
			source := "  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n  ref:\n    tag: 4.1.2\n"
			var extra []string
			if tc.tls {
				opts, insecure = append(opts, helmtest.WithTLS()), ""
			}
			var regURL string
			if tc.distribution {
				regURL, source, extra = distributionRegistry(t, ctx, tc.tls, chart)
				if tc.tls {
					insecure = ""
				}
			} else {
				reg := helmtest.NewRegistry(t, opts...)
				reg.Push(t, "app-template", "4.1.2", chart)
				regURL = reg.URL
				if tc.tls {
					file := filepath.Join(t.TempDir(), "ca.pem")
					if err := os.WriteFile(file, reg.CA, 0o600); err != nil {
						t.Fatal(err)
					}
					extra = append(extra, "--chart-ca-file", file)
				}
			}
			files := map[string]string{
				"apps/media/atuin/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: media\nresources:\n  - ./ocirepository.yaml\n  - ./helmrelease.yaml\n",
				"apps/media/atuin/ocirepository.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: app-template
spec:
  interval: 15m
  url: ` + regURL + `/app-template
` + insecure + source,
				"apps/media/atuin/helmrelease.yaml": appTemplateRelease,
			}
			if tc.flux {
				files["apps/media/atuin/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./ocirepository.yaml\n  - ./helmrelease.yaml\n"
				files["apps/flux/atuin.yaml"] = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: atuin\n  namespace: flux-system\n" +
					"spec:\n  interval: 1h\n  path: ./apps/media/atuin\n  targetNamespace: media\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
			}
			if tc.sourceNS {
				files["apps/media/atuin/ocirepository.yaml"] = strings.Replace(files["apps/media/atuin/ocirepository.yaml"], "  name: app-template\n", "  name: app-template\n  namespace: media\n", 1)
			}
			repoURL := testbedtest.CreateRepo(t, bed, "home-ops-"+strings.ReplaceAll(tc.name, " ", "-"), files)
			args := bedArgs(t, bed, repoURL, append([]string{"--namespaces", "media", "--git-path", "apps"}, extra...)...)
			checkAppTemplateRuns(t, ctx, bed, repoURL, args)
		})
	}
}

// distributionRegistry starts the test bed's docker-registry (Debian's
// distribution v2) with the chart pushed as helm push pushes it, and
// returns its oci:// URL, the OCIRepository's spec lines after its url
// and insecure, and the job's arguments. Plain, the spec asks for a
// semver range; with TLS, the registry asks for basic auth and the spec
// names the chart's digest, its CA in a certSecretRef and the login in a
// secretRef, mounted as chart-secrets-dir lays them out.
func distributionRegistry(t *testing.T, ctx context.Context, withTLS bool, chart map[string]string) (url, source string, args []string) {
	t.Helper()
	bin, err := testbed.EnsureDockerRegistry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro := testbed.RegistryOptions{TLS: withTLS}
	if withTLS {
		ro.Username, ro.Password = "flux", "pw-reg-4c9e2a"
	}
	reg, err := testbed.StartRegistry(ctx, bin, t.TempDir(), ro)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	archive := helmtest.Package(t, "app-template", "4.1.2", chart)
	// An older version, which the semver range must not take.
	older := helmtest.Package(t, "app-template", "3.7.0", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n"})
	helmtest.PushTo(t, reg.Host, reg.CA, ro.Username, ro.Password, older)
	digest, url := helmtest.PushTo(t, reg.Host, reg.CA, ro.Username, ro.Password, archive)
	if !withTLS {
		return url, "  ref:\n    semver: \">=3.0.0 <5.0.0\"\n", nil
	}
	dir := t.TempDir()
	for name, keys := range map[string]map[string]string{
		"registry-ca":   {"ca.crt": string(reg.CA)},
		"registry-auth": {"username": ro.Username, "password": ro.Password},
	} {
		d := filepath.Join(dir, "media", name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for k, v := range keys {
			if err := os.WriteFile(filepath.Join(d, k), []byte(v), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	source = "  certSecretRef:\n    name: registry-ca\n  secretRef:\n    name: registry-auth\n  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n  ref:\n    digest: " + digest + "\n"
	return url, source, []string{"--chart-secrets-dir", dir}
}

// checkAppTemplateRuns runs the job twice on the app-template repository
// at repoURL: the first run edits the HelmRelease in place, the second
// pushes nothing.
func checkAppTemplateRuns(t *testing.T, ctx context.Context, bed *testbed.Bed, repoURL string, args []string) {
	t.Helper()
	first := runJSON(t, ctx, args)
	atuin := entry(t, first, "media", "atuin")
	want := map[string]string{"app/cpu": "4m", "app/memory": "16Mi", "sidecar/cpu": "4m", "sidecar/memory": "16Mi"}
	got := map[string]string{}
	for _, c := range atuin.Containers {
		for _, r := range c.Resources {
			got[c.Name+"/"+string(r.Resource)] = quantity(r.Recommended)
			if r.Evidence == nil || !r.Evidence.PercentileAtMax || r.Evidence.BucketWidth <= 0 {
				t.Errorf("%s/%s: evidence %+v, want the percentile at the highest sample and the bucket's width", c.Name, r.Resource, r.Evidence)
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("recommended %v, want %v", got, want)
	}
	if atuin.Source == nil || atuin.Source.File != "apps/media/atuin/helmrelease.yaml" || !atuin.Source.Changed || atuin.Source.Helm == nil {
		t.Fatalf("source = %+v, want apps/media/atuin/helmrelease.yaml changed through the release", atuin.Source)
	}
	if first.Git == nil || !first.Git.Pushed {
		t.Fatalf("git = %+v, want a push", first.Git)
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	pushed, head := fileAt(t, repoURL, auth, "recommend-job/main", "apps/media/atuin/helmrelease.yaml")
	wantFile := strings.NewReplacer(
		"                cpu: 10m   # app-template's usual floor\n                memory: 256Mi\n",
		"                cpu: 4m   # app-template's usual floor\n                memory: 16Mi\n",
		"            env:\n              PORT: *port\n",
		"            env:\n              PORT: *port\n            resources:\n              requests:\n                cpu: 4m\n                memory: 16Mi\n",
	).Replace(appTemplateRelease)
	if pushed != wantFile {
		t.Errorf("pushed helmrelease.yaml:\n%s\nwant:\n%s", pushed, wantFile)
	}

	second := runJSON(t, ctx, args)
	if second.Git == nil || second.Git.Pushed || len(second.Git.Files) > 0 {
		t.Errorf("second run git = %+v, want nothing pushed and no file changed", second.Git)
	}
	if it := entry(t, second, "media", "atuin"); it.Source == nil || it.Source.Changed {
		t.Errorf("second run source = %+v, want unchanged", it.Source)
	}
	if _, again := fileAt(t, repoURL, auth, "recommend-job/main", "apps/media/atuin/helmrelease.yaml"); again != head {
		t.Errorf("second run moved the branch from %s to %s", head, again)
	}
}
