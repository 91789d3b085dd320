package deployers

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func object(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
		"status":   map[string]any{"sync": "Synced"},
	}}
}

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	lists := map[schema.GroupVersionResource]string{
		Applications: "ApplicationList", Kustomizations: "KustomizationList", HelmReleases: "HelmReleaseList",
		GitRepositories: "GitRepositoryList", OCIRepositories: "OCIRepositoryList",
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
}

// TestList checks which live deployers deploy from this repository, as
// Argo CD and Flux compare URLs, and that the others are marked with
// theirs.
func TestList(t *testing.T) {
	const repo = "https://token@git.example.com/org/gitops.git"
	client := fakeClient(
		object("argoproj.io/v1alpha1", "Application", "argocd", "shop-prod", map[string]any{"source": map[string]any{"repoURL": "git@git.example.com:org/gitops", "path": "apps/prod"}}),
		object("argoproj.io/v1alpha1", "Application", "argocd", "other", map[string]any{"source": map[string]any{"repoURL": "https://git.example.com/org/other.git", "path": "x"}}),
		object("argoproj.io/v1alpha1", "Application", "team", "ignored", map[string]any{"source": map[string]any{"repoURL": repo, "path": "y"}}),
		object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "apps", map[string]any{"path": "./clusters/prod", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}),
		object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "team", "oci", map[string]any{"path": "./", "sourceRef": map[string]any{"kind": "OCIRepository", "name": "manifests", "namespace": "flux-system"}}),
		object("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "flux-system", map[string]any{"url": "ssh://git@git.example.com/org/gitops.git"}),
		object("source.toolkit.fluxcd.io/v1beta2", "OCIRepository", "flux-system", "manifests", map[string]any{"url": "oci://registry.example.com/manifests"}),
	)
	got, err := New(client, Options{ArgoNamespaces: []string{"argocd"}, RepoURL: repo}).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Name()+" elsewhere="+d.Elsewhere)
		if _, ok := d.Object["status"]; ok {
			t.Errorf("%s keeps its status", d.Name())
		}
	}
	slices.Sort(names)
	want := []string{
		"Application argocd/other (from the cluster) elsewhere=https://git.example.com/org/other.git",
		"Application argocd/shop-prod (from the cluster) elsewhere=",
		"Kustomization flux-system/apps (from the cluster) elsewhere=",
		"Kustomization team/oci (from the cluster) elsewhere=the OCIRepository flux-system/manifests (oci://registry.example.com/manifests)",
	}
	if !slices.Equal(names, want) {
		t.Errorf("listed\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

// TestListForbidden checks that a kind the job may not read is left out
// with an error that names it, and that the others are still listed.
func TestListForbidden(t *testing.T) {
	client := fakeClient(object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "apps", map[string]any{"path": "./", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}))
	client.PrependReactor("list", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, "", nil)
	})
	client.PrependReactor("list", "helmreleases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}, "")
	})
	got, err := New(client, Options{ArgoNamespaces: []string{"argocd"}}).List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "applications.argoproj.io") || strings.Contains(err.Error(), "helmreleases") {
		t.Errorf("err = %v, want the applications' forbidden only", err)
	}
	if len(got) != 1 || got[0].Elsewhere != "the GitRepository flux-system/flux-system, which the job could not read" {
		t.Errorf("listed %+v", got)
	}
}

// TestListOtherBranches checks that a deployer of this repository that
// tracks another revision than the branch the job edits is marked with
// that revision, as Argo CD and Flux select it, and that one on the
// branch, in any of its spellings, is not.
func TestListOtherBranches(t *testing.T) {
	const repo = "https://git.example.com/org/gitops.git"
	app := func(name, rev string) *unstructured.Unstructured {
		return object("argoproj.io/v1alpha1", "Application", "argocd", name, map[string]any{"source": map[string]any{"repoURL": repo, "path": "apps", "targetRevision": rev}})
	}
	gitRepo := func(name string, ref map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"url": repo}
		if ref != nil {
			spec["ref"] = ref
		}
		return object("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", name, spec)
	}
	ks := func(name, source string) *unstructured.Unstructured {
		return object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", name, map[string]any{"path": "./", "sourceRef": map[string]any{"kind": "GitRepository", "name": source}})
	}
	client := fakeClient(
		app("head", "HEAD"), app("unset", ""), app("main", "main"), app("full", "refs/heads/main"),
		app("dev", "dev-team"), app("tag", "v1.2.0"),
		object("argoproj.io/v1alpha1", "Application", "argocd", "multi", map[string]any{"sources": []any{
			map[string]any{"repoURL": repo, "path": "a", "targetRevision": "dev-team"},
			map[string]any{"repoURL": repo, "path": "b", "targetRevision": "main"},
		}}),
		gitRepo("on-main", map[string]any{"branch": "main"}), ks("on-main", "on-main"),
		gitRepo("by-name", map[string]any{"name": "refs/heads/main"}), ks("by-name", "by-name"),
		gitRepo("default", nil), ks("default", "default"),
		gitRepo("dev", map[string]any{"branch": "dev-team"}), ks("dev", "dev"),
		gitRepo("pinned", map[string]any{"branch": "main", "commit": "0123abc"}), ks("pinned", "pinned"),
		gitRepo("semver", map[string]any{"semver": ">=1.0.0"}), ks("semver", "semver"),
	)
	got, err := New(client, Options{ArgoNamespaces: []string{"argocd"}, RepoURL: repo, Branch: "main"}).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := map[string]string{}
	for _, d := range got {
		elsewhere[d.Name()] = d.Elsewhere
	}
	want := map[string]string{
		"Application argocd/head (from the cluster)":           "",
		"Application argocd/unset (from the cluster)":          "",
		"Application argocd/main (from the cluster)":           "",
		"Application argocd/full (from the cluster)":           "",
		"Application argocd/dev (from the cluster)":            repo + " at revision dev-team",
		"Application argocd/tag (from the cluster)":            repo + " at revision v1.2.0",
		"Application argocd/multi (from the cluster)":          "",
		"Kustomization flux-system/on-main (from the cluster)": "",
		"Kustomization flux-system/by-name (from the cluster)": "",
		"Kustomization flux-system/default (from the cluster)": repo + " at branch master (the GitRepository flux-system/default)",
		"Kustomization flux-system/dev (from the cluster)":     repo + " at branch dev-team (the GitRepository flux-system/dev)",
		"Kustomization flux-system/pinned (from the cluster)":  repo + " at commit 0123abc (the GitRepository flux-system/pinned)",
		"Kustomization flux-system/semver (from the cluster)":  repo + " at semver >=1.0.0 (the GitRepository flux-system/semver)",
	}
	for name, w := range want {
		if g, ok := elsewhere[name]; !ok || g != w {
			t.Errorf("%s: elsewhere = %q (listed %v), want %q", name, g, ok, w)
		}
	}
	// The Application with a source on each branch keeps only main's.
	for _, d := range got {
		if d.Name() == "Application argocd/multi (from the cluster)" {
			srcs, _ := d.Object["spec"].(map[string]any)["sources"].([]any)
			if len(srcs) != 1 || srcs[0].(map[string]any)["path"] != "b" {
				t.Errorf("multi's sources = %v, want only path b's", srcs)
			}
		}
	}
}
