package main

import (
	"errors"
	"fmt"
	"path"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"

	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
)

// clusterOf reads the apiserver's version and the API versions it serves,
// with their kinds, as Helm lists them for .Capabilities. A group that
// failed discovery is left out, as Helm leaves it out.
func clusterOf(d discovery.DiscoveryInterface) (*helmrender.Cluster, error) {
	v, err := d.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's version: %w", err)
	}
	groups, resources, err := d.ServerGroupsAndResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &failed) {
		return nil, fmt.Errorf("reading the API versions: %w", err)
	}
	var versions []string
	for _, g := range groups {
		for _, gv := range g.Versions {
			versions = append(versions, gv.GroupVersion)
		}
	}
	for _, list := range resources {
		for _, r := range list.APIResources {
			versions = append(versions, path.Join(list.GroupVersion, r.Kind))
		}
	}
	slices.Sort(versions)
	return &helmrender.Cluster{KubeVersion: v.GitVersion, APIVersions: slices.Compact(versions)}, nil
}

// servedBy says whether the apiserver serves a resource, from discovery
// (read once, cached): a deployer kind that is not installed is not
// listed, which would cost a request answered 404. When discovery fails,
// every kind counts as served and its list says what there is.
func servedBy(d discovery.DiscoveryInterface) func(schema.GroupVersionResource) bool {
	return func(gvr schema.GroupVersionResource) bool {
		list, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return !apierrors.IsNotFound(err) && !errors.Is(err, memory.ErrCacheNotFound)
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource })
	}
}
