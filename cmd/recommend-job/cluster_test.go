package main

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestClusterOf(t *testing.T) {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "monitoring.coreos.com/v1", APIResources: []metav1.APIResource{{Name: "servicemonitors", Kind: "ServiceMonitor"}}},
	}}, FakedServerVersion: &k8sversion.Info{GitVersion: "v1.31.2"}}
	c, err := clusterOf(d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps/v1", "apps/v1/Deployment", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "v1", "v1/Pod"}
	if c.KubeVersion != "v1.31.2" || !slices.Equal(c.APIVersions, want) {
		t.Errorf("clusterOf = %s %v, want v1.31.2 %v", c.KubeVersion, c.APIVersions, want)
	}
}
