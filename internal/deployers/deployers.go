// Package deployers lists the live Argo CD and Flux objects that say what
// the cluster runs from where: Argo CD Applications, Flux Kustomizations,
// HelmReleases and their GitRepositories and OCIRepositories. They are the
// truth a repository's files may lag behind; render places changes with
// them (repoindex.External).
package deployers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// The kinds listed, one list per kind, at the versions Argo CD and Flux
// serve.
var (
	Applications    = schema.GroupVersionResource{Group: repoindex.ArgoGroup, Version: "v1alpha1", Resource: "applications"}
	Kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	HelmReleases    = schema.GroupVersionResource{Group: repoindex.FluxHelmGroup, Version: "v2", Resource: "helmreleases"}
	GitRepositories = schema.GroupVersionResource{Group: repoindex.FluxSourceGroup, Version: "v1", Resource: "gitrepositories"}
	OCIRepositories = schema.GroupVersionResource{Group: repoindex.FluxSourceGroup, Version: "v1beta2", Resource: "ocirepositories"}
)

// Origin is how render names a deployer read here.
const Origin = "from the cluster"

// DefaultPageSize is the size of each page of a list.
const DefaultPageSize = 500

// Options say what to list and what this repository is.
type Options struct {
	// ArgoNamespaces are the namespaces whose Applications are read;
	// none, none is read.
	ArgoNamespaces []string
	// FluxNamespaces are the namespaces whose Flux objects are read; none:
	// all namespaces.
	FluxNamespaces []string
	// RepoURL is the repository the job edits: a deployer of another
	// repository is marked Elsewhere. "" takes every one to be this one.
	RepoURL  string
	PageSize int64
	// Served says whether the apiserver serves a kind; nil lists every
	// kind, and one not installed answers 404.
	Served func(schema.GroupVersionResource) bool
}

// Lister lists the live deployers through a dynamic client.
type Lister struct {
	client dynamic.Interface
	opts   Options
}

// New returns a Lister reading through client.
func New(client dynamic.Interface, opts Options) *Lister {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	return &Lister{client: client, opts: opts}
}

// List returns the live Applications and Flux Kustomizations and
// HelmReleases, each marked with the repository it deploys from when it
// is not this one. A kind not installed is none; a kind the job may not
// read is left out, and the error, joined for every such kind, says so:
// the run goes on with the repository's files.
func (l *Lister) List(ctx context.Context) ([]repoindex.External, error) {
	var errs []error
	read := func(gvr schema.GroupVersionResource, namespaces []string) []unstructured.Unstructured {
		if l.opts.Served != nil && !l.opts.Served(gvr) {
			return nil // not installed
		}
		objs, err := l.list(ctx, gvr, namespaces)
		switch {
		case apierrors.IsNotFound(err):
			return nil // not installed
		case err != nil:
			errs = append(errs, fmt.Errorf("list %s: %w", gvr.GroupResource(), err))
		}
		return objs
	}
	fluxNS := l.opts.FluxNamespaces
	if len(fluxNS) == 0 {
		fluxNS = []string{metav1.NamespaceAll}
	}
	var out []repoindex.External
	if len(l.opts.ArgoNamespaces) > 0 {
		for _, u := range read(Applications, l.opts.ArgoNamespaces) {
			out = append(out, l.application(u.Object))
		}
	}
	ks := read(Kustomizations, fluxNS)
	hrs := read(HelmReleases, fluxNS)
	var sources map[string]string
	if len(ks)+len(hrs) > 0 {
		sources = map[string]string{}
		for _, gvr := range []schema.GroupVersionResource{GitRepositories, OCIRepositories} {
			kind := "GitRepository"
			if gvr == OCIRepositories {
				kind = "OCIRepository"
			}
			for _, u := range read(gvr, fluxNS) {
				url, _ := tree.Dig(u.Object, "spec", "url").(string)
				sources[kind+"/"+u.GetNamespace()+"/"+u.GetName()] = url
			}
		}
	}
	for _, u := range slices.Concat(ks, hrs) {
		out = append(out, l.flux(u.Object, sources))
	}
	return out, errors.Join(errs...)
}

// list reads every object of gvr in namespaces, page by page.
func (l *Lister) list(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, ns := range namespaces {
		opts := metav1.ListOptions{Limit: l.opts.PageSize}
		for {
			page, err := l.client.Resource(gvr).Namespace(ns).List(ctx, opts)
			if err != nil {
				return out, err
			}
			out = append(out, page.Items...)
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return out, nil
}

// trimmed keeps of a live object what says where it deploys from: its
// identity, labels, annotations and spec, not its status.
func trimmed(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	keep := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := md[k]; ok {
			keep[k] = v
		}
	}
	return map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": keep, "spec": obj["spec"]}
}

// application is a live Application, its sources of other repositories
// left out; when all are, it is marked with the first one's.
func (l *Lister) application(obj map[string]any) repoindex.External {
	d := repoindex.External{Object: trimmed(obj), Origin: Origin}
	spec, _ := d.Object["spec"].(map[string]any)
	if spec == nil {
		return d
	}
	if src, ok := spec["source"].(map[string]any); ok {
		if url, _ := src["repoURL"].(string); !l.ours(url) {
			d.Elsewhere = repoindex.RedactURL(url)
		}
		return d
	}
	srcs, _ := spec["sources"].([]any)
	var mine []any
	for _, s := range srcs {
		url, _ := tree.Dig(s, "repoURL").(string)
		if l.ours(url) {
			mine = append(mine, s)
		} else if d.Elsewhere == "" {
			d.Elsewhere = repoindex.RedactURL(url)
		}
	}
	if len(mine) > 0 {
		d.Elsewhere = ""
		spec = tree.DeepCopy(spec).(map[string]any)
		spec["sources"] = mine
		d.Object["spec"] = spec
	}
	return d
}

// flux is a live Kustomization or HelmRelease, marked with its source's
// URL when that is not this repository.
func (l *Lister) flux(obj map[string]any, sources map[string]string) repoindex.External {
	d := repoindex.External{Object: trimmed(obj), Origin: Origin}
	ns, _ := tree.Dig(obj, "metadata", "namespace").(string)
	ref, _ := tree.Dig(obj, "spec", "sourceRef").(map[string]any)
	if ref == nil {
		// A HelmRelease names its chart's source in its chart template.
		ref, _ = tree.Dig(obj, "spec", "chart", "spec", "sourceRef").(map[string]any)
	}
	if ref == nil {
		ref, _ = tree.Dig(obj, "spec", "chartRef").(map[string]any)
	}
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	if refNS, _ := ref["namespace"].(string); refNS != "" {
		ns = refNS
	}
	id := kind + "/" + ns + "/" + name
	url, found := sources[id]
	switch {
	case kind == "GitRepository" && found && l.ours(url):
	case kind == "GitRepository" && found:
		d.Elsewhere = repoindex.RedactURL(url)
	case kind == "GitRepository" || kind == "OCIRepository":
		if found {
			d.Elsewhere = "the " + kind + " " + ns + "/" + name + " (" + repoindex.RedactURL(url) + ")"
		} else {
			d.Elsewhere = "the " + kind + " " + ns + "/" + name + ", which the job could not read"
		}
	default:
		// A HelmRepository's chart, or a Bucket: not this repository.
		d.Elsewhere = "the " + kind + " " + ns + "/" + name
	}
	return d
}

// ours reports whether url is this repository, as Argo CD and Flux
// compare them: scheme, user, port-less ssh form and .git aside.
func (l *Lister) ours(url string) bool {
	return l.opts.RepoURL == "" || repoindex.NormalRepoURL(url) == repoindex.NormalRepoURL(l.opts.RepoURL)
}
