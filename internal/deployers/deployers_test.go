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
