// Package deployers lists the live Argo CD and Flux objects that say what
// the cluster runs from where: Argo CD Applications, Flux Kustomizations,
// HelmReleases and their GitRepositories and OCIRepositories. They are the
// truth a repository's files may lag behind; render places changes with
// them (repoindex.DeployerObject).
package deployers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
const Origin = repoindex.FromCluster

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
	RepoURL string
	// Branch is the branch the job edits (git-branch): a deployer of this
	// repository that tracks another revision is marked Elsewhere with
	// it. "" takes every revision to be it.
	Branch   string
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
func (l *Lister) List(ctx context.Context) ([]repoindex.DeployerObject, error) {
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
	var out []repoindex.DeployerObject
	if len(l.opts.ArgoNamespaces) > 0 {
		for _, u := range read(Applications, l.opts.ArgoNamespaces) {
			out = append(out, l.application(u.Object))
		}
	}
	ks := read(Kustomizations, fluxNS)
	hrs := read(HelmReleases, fluxNS)
	var sources map[string]fluxSource
	if len(ks)+len(hrs) > 0 {
		sources = map[string]fluxSource{}
		for _, gvr := range []schema.GroupVersionResource{GitRepositories, OCIRepositories} {
			kind := "GitRepository"
			if gvr == OCIRepositories {
				kind = "OCIRepository"
			}
			for _, u := range read(gvr, fluxNS) {
				url, _ := tree.Dig(u.Object, "spec", "url").(string)
				ref, _ := tree.Dig(u.Object, "spec", "ref").(map[string]any)
				sources[kind+"/"+u.GetNamespace()+"/"+u.GetName()] = fluxSource{url: url, revision: fluxRevision(ref)}
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
func (l *Lister) application(obj map[string]any) repoindex.DeployerObject {
	d := repoindex.DeployerObject{Object: trimmed(obj), Origin: Origin}
	spec, _ := d.Object["spec"].(map[string]any)
	if spec == nil {
		return d
	}
	if src, ok := spec["source"].(map[string]any); ok {
		d.Elsewhere = l.argoElsewhere(src)
		return d
	}
	srcs, _ := spec["sources"].([]any)
	var mine []any
	for _, s := range srcs {
		src, _ := s.(map[string]any)
		if where := l.argoElsewhere(src); where == "" {
			mine = append(mine, s)
		} else if d.Elsewhere == "" {
			d.Elsewhere = where
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

// argoElsewhere says where an Application's source deploys from when
// that is not the branch of this repository the job edits, or "".
// Argo CD's default revision, HEAD, is the repository's default branch,
// which the job takes git-branch to be.
func (l *Lister) argoElsewhere(src map[string]any) string {
	url, _ := src["repoURL"].(string)
	if !l.ours(url) {
		return repoindex.RedactURL(url)
	}
	rev, _ := src["targetRevision"].(string)
	if rev == "" || rev == "HEAD" || l.onBranch(rev) {
		return ""
	}
	return repoindex.RedactURL(url) + " at revision " + rev
}

// fluxSource is what a Flux GitRepository or OCIRepository deploys from.
type fluxSource struct {
	url string
	// revision is a GitRepository's reference as Flux resolves it:
	// "commit X", "ref X", "semver X", "tag X" or "branch X".
	revision string
}

// fluxRevision returns the reference a GitRepository's spec.ref selects,
// in the order of precedence source-controller gives its fields; no
// reference is the branch master, Flux's default.
func fluxRevision(ref map[string]any) string {
	for _, field := range []string{"commit", "name", "semver", "tag", "branch"} {
		if v, _ := ref[field].(string); v != "" {
			if field == "name" {
				field = "ref"
			}
			return field + " " + v
		}
	}
	return "branch master"
}

// onBranch reports whether a revision, a branch name or a full
// reference, is the branch the job edits.
func (l *Lister) onBranch(rev string) bool {
	return l.opts.Branch == "" || rev == l.opts.Branch || rev == "refs/heads/"+l.opts.Branch
}

// fluxOnBranch reports whether a GitRepository's revision (fluxRevision)
// is the branch the job edits.
func (l *Lister) fluxOnBranch(rev string) bool {
	for _, prefix := range []string{"branch ", "ref "} {
		if v, ok := strings.CutPrefix(rev, prefix); ok {
			return l.onBranch(v)
		}
	}
	return l.opts.Branch == ""
}

// flux is a live Kustomization or HelmRelease, marked with its source's
// URL when that is not this repository, and with its revision when that
// is not the branch the job edits.
func (l *Lister) flux(obj map[string]any, sources map[string]fluxSource) repoindex.DeployerObject {
	d := repoindex.DeployerObject{Object: trimmed(obj), Origin: Origin}
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
	src, found := sources[id]
	url := src.url
	switch {
	case kind == "GitRepository" && found && l.ours(url):
		if !l.fluxOnBranch(src.revision) {
			d.Elsewhere = repoindex.RedactURL(url) + " at " + src.revision + " (the GitRepository " + ns + "/" + name + ")"
		}
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
