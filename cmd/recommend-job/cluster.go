package main

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"k8s.io/client-go/discovery"

	helmrender "github.com/recommend-job/recommend-job/internal/helm"
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
