//go:build integration

package collect

import (
	"context"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// bed is the test bed the integration tests of this package share.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	os.Exit(testbedtest.Main(m, testbed.Options{}, func(b *testbed.Bed) { bed = b }))
}

var crdsOnce sync.Once

// installCRDs installs the ResourceRecommend CRD of the chart, a minimal
// Argo Rollouts CRD and two custom kinds, once per bed: Widget has a pod
// template at spec.template, Gadget has none.
func installCRDs(t *testing.T) {
	t.Helper()
	crd, err := os.ReadFile(chartDir + "/crds/resourcerecommends.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var applyErr error
	crdsOnce.Do(func() {
		applyErr = testbed.Apply(context.Background(), bed.APIServer.RESTConfig(), crd,
			[]byte(freeformCRD("argoproj.io", "Rollout", "rollouts", "v1alpha1")),
			[]byte(freeformCRD("example.com", "Widget", "widgets", "v1")),
			[]byte(freeformCRD("example.com", "Gadget", "gadgets", "v1")))
	})
	if applyErr != nil {
		t.Fatalf("install CRDs: %v", applyErr)
	}
}

// freeformCRD is a namespaced CRD whose objects may hold anything, as much
// of Argo Rollouts' CRD as the job relies on.
func freeformCRD(group, kind, plural, version string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, listKind: ` + kind + `List, plural: ` + plural + `, singular: ` + lower(kind) + `}
  scope: Namespaced
  versions:
    - name: ` + version + `
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// apply server-side applies YAML documents as the bed's admin.
func apply(t *testing.T, docs ...string) {
	t.Helper()
	manifests := make([][]byte, len(docs))
	for i, d := range docs {
		if _, err := yaml.YAMLToJSON([]byte(d)); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, d)
		}
		manifests[i] = []byte(d)
	}
	if err := testbed.Apply(t.Context(), bed.APIServer.RESTConfig(), manifests...); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// clients builds a collector's clients from cfg, as the command does.
func clients(t *testing.T, cfg *rest.Config) (dynamic.Interface, metadata.Interface, *restmapper.DeferredDiscoveryRESTMapper) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn, meta, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
}

// realCollector is a collector on the bed as the admin.
func realCollector(t *testing.T, opts ...Option) *Collector {
	t.Helper()
	dyn, meta, mapper := clients(t, bed.APIServer.RESTConfig())
	return New(dyn, mapper, append([]Option{WithMetadataClient(meta)}, opts...)...)
}
