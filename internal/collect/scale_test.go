//go:build integration

package collect

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// requestCounter counts the requests a client sends, by method and path.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
	next   http.RoundTripper
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.counts[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// TestCollectRequestCount reads 1,000 ResourceRecommends over 1,000
// Deployments in 50 namespaces and counts what the apiserver receives.
func TestCollectRequestCount(t *testing.T) {
	installCRDs(t)
	const namespaces, perNamespace = 50, 20
	cfg := bed.APIServer.RESTConfig()
	cfg.QPS, cfg.Burst = 2000, 2000
	admin, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for i := range namespaces {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprintf("scale-%02d", i)}}}
		if _, err := admin.Resource(nsGVR).Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Created concurrently by 16 workers: one at a time takes minutes on
	// two cores.
	work := make(chan int)
	errs := make(chan error, namespaces*perNamespace)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				errs <- createScaleObjects(t, admin, fmt.Sprintf("scale-%02d", i%namespaces), fmt.Sprintf("app-%04d", i))
			}
		})
	}
	for i := range namespaces * perNamespace {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("creating objects: %v", err)
		}
	}

	counter := &requestCounter{counts: map[string]int{}}
	cfg = bed.APIServer.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	dyn, meta, mapper := clients(t, cfg)
	items, err := New(dyn, mapper, WithMetadataClient(meta), WithLabelSelector("suite=scale")).Collect(t.Context())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	valid := 0
	for _, it := range items {
		if it.Invalid == nil && it.Workload != nil {
			valid++
		}
	}
	if len(items) != 1000 || valid != 1000 {
		t.Fatalf("Collect() = %d items, %d valid; want 1000 valid", len(items), valid)
	}

	var lines []string
	total := 0
	for k, n := range counter.counts {
		lines = append(lines, fmt.Sprintf("%3d %s", n, k))
		total += n
	}
	sort.Strings(lines)
	t.Logf("%d requests for 1000 ResourceRecommends over 1000 Deployments in 50 namespaces:\n%s", total, strings.Join(lines, "\n"))

	// Pages of 500: 1,000 ResourceRecommends take 2 list calls (3 should
	// the apiserver not know the second page is the last); the Deployments,
	// these 1,000 and the few of other tests, take 3 metadata and 3 full
	// lists at most; the HPAs one. Discovery is a handful of requests
	// whatever the object count. Nothing is read one object at a time.
	listed := map[string]int{}
	for k, n := range counter.counts {
		method, path, _ := strings.Cut(k, " ")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		if method != http.MethodGet {
			t.Errorf("unexpected %s", k)
			continue
		}
		switch {
		case strings.HasSuffix(path, "/resourcerecommends"), strings.HasSuffix(path, "/deployments"), strings.HasSuffix(path, "/horizontalpodautoscalers"):
			listed[parts[len(parts)-1]] += n
		case len(parts) <= 3 || parts[0] == "openapi":
			// /api, /apis, /api/v1, /apis/<group>/<version>: discovery.
		default:
			t.Errorf("unexpected request %s (%d): a read of one object?", k, n)
		}
	}
	limits := map[string]int{"resourcerecommends": 3, "deployments": 6, "horizontalpodautoscalers": 1}
	for res, limit := range limits {
		if listed[res] == 0 || listed[res] > limit {
			t.Errorf("%s: %d list requests, want 1 to %d", res, listed[res], limit)
		}
	}
	if total > 40 {
		t.Errorf("%d requests in all, want at most 40", total)
	}
}

// createScaleObjects creates Deployment name and a ResourceRecommend of it.
func createScaleObjects(t *testing.T, admin dynamic.Interface, ns, name string) error {
	d := deployment(ns, name, container("app", "100m", "128Mi"))
	_ = unstructured.SetNestedStringMap(d.Object, map[string]string{"app": name}, "spec", "selector", "matchLabels")
	_ = unstructured.SetNestedStringMap(d.Object, map[string]string{"app": name}, "spec", "template", "metadata", "labels")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "app"
	_ = unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers")
	if _, err := admin.Resource(deploymentsGVR).Namespace(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		return err
	}
	rec := recommendObj(ns, name, "Deployment", name)
	rec.SetLabels(map[string]string{"suite": "scale"})
	_, err := admin.Resource(v1alpha1.GroupVersionResource()).Namespace(ns).Create(t.Context(), rec, metav1.CreateOptions{})
	return err
}
