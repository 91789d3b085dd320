package render

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestNothingRemoteIsFetched checks that no field of a kustomization, nor
// of a plugin configuration it names, makes a proof fetch anything: each
// entry kustomize would fetch is refused before the build, naming the file
// and the field; a loopback server sees no request and git is never run.
func TestNothingRemoteIsFetched(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"))
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/x.yaml"

	// A git that only says it ran: kustomize clones remote bases with it.
	bin := t.TempDir()
	ran := filepath.Join(bin, "ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\ntouch "+ran+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	const base = "namespace: shop\nresources: [web.yaml]\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // in the error, after the file's name
	}{
		{"resources", map[string]string{"kustomization.yaml": "namespace: shop\nresources: [web.yaml, '" + url + "']\n"}, "remote or outside the repository (" + url + ")"},
		{"resources in scp style", map[string]string{"kustomization.yaml": "namespace: shop\nresources: [web.yaml, 'git@127.0.0.1:org/repo']\n"}, "(git@127.0.0.1:org/repo)"},
		{"resources with a user and no colon", map[string]string{"kustomization.yaml": "namespace: shop\nresources: [web.yaml, 'me@127.0.0.1/org/repo']\n"}, "(me@127.0.0.1/org/repo)"},
		{"resources of a well-known host", map[string]string{"kustomization.yaml": "namespace: shop\nresources: [web.yaml, 'github.com/org/repo//deploy?ref=v1']\n"}, "(github.com/org/repo//deploy?ref=v1)"},
		{"resources, git:: style", map[string]string{"kustomization.yaml": "namespace: shop\nresources: [web.yaml, 'git::" + url + "']\n"}, "(git::" + url + ")"},
		{"bases", map[string]string{"kustomization.yaml": base + "bases: ['" + url + "']\n"}, "(" + url + ")"},
		{"components", map[string]string{"kustomization.yaml": base + "components: ['ssh://git@127.0.0.1/org/repo']\n"}, "(ssh://git@127.0.0.1/org/repo)"},
		{"crds", map[string]string{"kustomization.yaml": base + "crds: ['" + url + "']\n"}, "crds: " + url},
		{"configurations", map[string]string{"kustomization.yaml": base + "configurations: ['" + url + "']\n"}, "configurations: " + url},
		{"patches", map[string]string{"kustomization.yaml": base + "patches:\n- path: " + url + "\n"}, "patches.path: " + url},
		{"patchesJson6902", map[string]string{"kustomization.yaml": base + "patchesJson6902:\n- target: {kind: Deployment, name: web}\n  path: " + url + "\n"}, "patchesJson6902.path: " + url},
		{"patchesStrategicMerge", map[string]string{"kustomization.yaml": base + "patchesStrategicMerge: ['" + url + "']\n"}, "patchesStrategicMerge: " + url},
		{"replacements", map[string]string{"kustomization.yaml": base + "replacements:\n- path: " + url + "\n"}, "replacements.path: " + url},
		{"openapi", map[string]string{"kustomization.yaml": base + "openapi:\n  path: " + url + "\n"}, "openapi.path: " + url},
		{"generator files", map[string]string{"kustomization.yaml": base + "configMapGenerator:\n- name: c\n  files: ['" + url + "']\n"}, "configMapGenerator.files: " + url},
		{"generator files as key=path", map[string]string{"kustomization.yaml": base + "configMapGenerator:\n- name: c\n  files: ['k=" + url + "']\n"}, "configMapGenerator.files: k=" + url},
		{"generator envs", map[string]string{"kustomization.yaml": base + "secretGenerator:\n- name: c\n  envs: ['" + url + "']\n"}, "secretGenerator.envs: " + url},
		{"generator env", map[string]string{"kustomization.yaml": base + "configMapGenerator:\n- name: c\n  env: " + url + "\n"}, "configMapGenerator.envs: " + url},
		{"generators", map[string]string{"kustomization.yaml": base + "generators: ['" + url + "']\n"}, "generators: " + url},
		{"validators", map[string]string{"kustomization.yaml": base + "validators: ['" + url + "']\n"}, "validators: " + url},
		{"an inline transformer", map[string]string{"kustomization.yaml": base + "transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: " + url + "\n"}, "transformers: PatchTransformer p path: " + url},
		{"an inline transformer in flow style", map[string]string{"kustomization.yaml": base + "transformers: ['{apiVersion: builtin, kind: PatchTransformer, metadata: {name: p}, path: \"" + url + "\"}']\n"}, "transformers: PatchTransformer p path: " + url},
		{"a transformer file", map[string]string{
			"kustomization.yaml": base + "transformers: [t.yaml]\n",
			"t.yaml":             "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements:\n- path: " + url + "\n",
		}, "t.yaml " + repoindex.ErrRemote.Error() + ": ReplacementTransformer r replacements.path: " + url},
		{"a generator file as a List", map[string]string{
			"kustomization.yaml": base + "generators: [g.yaml]\n",
			"g.yaml":             "apiVersion: v1\nkind: List\nitems:\n- apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: g}\n  files: ['" + url + "']\n",
		}, "ConfigMapGenerator g files: " + url},
		{"a directory of transformers", map[string]string{
			"kustomization.yaml":   base + "transformers: [t]\n",
			"t/kustomization.yaml": "resources: [t.yaml]\n",
			"t/t.yaml":             "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: p.yaml\n",
		}, "transformers: t is a directory"},
		{"a base that reaches further", map[string]string{
			"kustomization.yaml":      "namespace: shop\nresources: [base]\n",
			"base/kustomization.yaml": "resources: [../web.yaml]\npatches:\n- path: " + url + "\n",
		}, "base/kustomization.yaml " + repoindex.ErrRemote.Error() + ": patches.path: " + url},
		{"helm charts", map[string]string{"kustomization.yaml": base + "helmCharts:\n- name: c\n  repo: " + srv.URL + "\n"}, "helmCharts: charts are not inflated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			files := map[string]string{"web.yaml": proofWeb}
			for name, data := range tc.files {
				files[name] = data
			}
			dir := writeTree(t, files)
			c := Change{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})}
			out, err := Apply(context.Background(), dir, ".", []Change{c})
			if err != nil {
				t.Fatal(err)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the loopback server was asked %d times", n)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("git was run")
			}
			r := out.Results[0]
			if r.Changed || len(out.Files) != 0 {
				t.Errorf("Changed = %v, Files = %v, want nothing written", r.Changed, out.Files)
			}
			// Remote resources, bases and components are refused by the
			// index already, as remote or outside the repository.
			if !errors.Is(r.Err, ErrProofFailed) || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("Err = %v, want a failed proof saying %q", r.Err, tc.want)
			}
		})
	}
}

// TestLocalKustomizationsBuild checks that the check of remote entries
// refuses none of the local forms of the same fields: inline patches,
// generator files given as key=path, local plugin configurations.
func TestLocalKustomizationsBuild(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"web.yaml": proofWeb,
		"kustomization.yaml": `namespace: shop
resources: [web.yaml]
commonAnnotations:
  repo: https://example.com/shop
  path: https://example.com/shop
configMapGenerator:
- name: settings
  files: [app.conf=settings.conf]
  envs: [settings.env]
patches:
- path: labels.yaml
- patch: |
    - op: add
      path: /metadata/labels/patched
      value: "yes"
  target: {kind: Deployment, name: web}
patchesStrategicMerge:
- |
  apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, annotations: {link: "https://example.com"}}
transformers:
- transformer.yaml
- |
  apiVersion: builtin
  kind: AnnotationsTransformer
  metadata: {name: a}
  annotations: {docs: "https://example.com/docs"}
  fieldSpecs: [{path: metadata/annotations, create: true}]
`,
		"settings.conf":    "a=b\n",
		"settings.env":     "A=B\n",
		"labels.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {team: shop}\n",
		"transformer.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: labels.yaml\n",
	})
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	c := Change{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})}
	out, err := Apply(context.Background(), dir, ".", []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed {
		t.Fatalf("Err = %v, Changed = %v, want the change proved", r.Err, r.Changed)
	}
}

// TestLiveApplicationsBuildNoTenantsKustomizations checks that the
// kustomizations of Applications, which any team may write, are built
// only when a change's Application is not live: with the live one, a
// tenant's kustomization that would not build is never built; without
// it, it is built and named.
func TestLiveApplicationsBuildNoTenantsKustomizations(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"tenants/other/apps/kustomization.yaml": "resources: [app.yaml]\npatches:\n- path: https://example.com/p.yaml\n",
		"tenants/other/apps/app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: other}\n" +
			"spec: {source: {repoURL: https://git.example.com/org/gitops.git, path: tenants/other}}\n",
	})
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", Labels: map[string]string{InstanceLabel: "shop-prod"}}
	changes := []Change{{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})}}
	for _, tc := range []struct {
		name  string
		live  []repoindex.DeployerObject
		built bool
	}{
		{"live", []repoindex.DeployerObject{liveApp("shop-prod", "https://git.example.com/org/gitops.git", "apps/prod")}, false},
		{"not live", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &options{deployers: tc.live}
			w := repoindex.Wants{Pointers: true}
			unbuilt, err := o.addDeployers(context.Background(), os.DirFS(dir), dir, &w, changes)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(unbuilt, "; ")
			if built := strings.Contains(got, "tenants/other/apps"); built != tc.built {
				t.Fatalf("unbuilt = %q, want the tenant's kustomization built: %v", got, tc.built)
			}
			if tc.built && !strings.Contains(got, "patches.path: https://example.com/p.yaml") {
				t.Errorf("unbuilt = %q, want the remote patch named", got)
			}
		})
	}
}
