package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// createWorkers is how many objects are created at a time: one at a time
// takes minutes at N = 5,000 on two cores.
const createWorkers = 16

var (
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	recommendGVR = schema.GroupVersionResource{Group: "recommendation.katalyst.kubewharf.io", Version: "v1alpha1", Resource: "resourcerecommends"}
	kindGVR      = map[string]schema.GroupVersionResource{
		KindDeployment:  {Group: "apps", Version: "v1", Resource: "deployments"},
		KindStatefulSet: {Group: "apps", Version: "v1", Resource: "statefulsets"},
		KindDaemonSet:   {Group: "apps", Version: "v1", Resource: "daemonsets"},
	}
)

// CreateCluster creates the chart's ResourceRecommend CRD (from the
// repository at root), the fleet's namespaces, workloads and
// ResourceRecommends on the apiserver of cfg, many at a time.
func CreateCluster(ctx context.Context, cfg *rest.Config, root string, f Fleet) error {
	crd, err := os.ReadFile(filepath.Join(root, "charts", "recommend-job", "crds", "resourcerecommends.yaml"))
	if err != nil {
		return fmt.Errorf("create cluster: %w", err)
	}
	if err := testbed.Apply(ctx, cfg, crd); err != nil {
		return fmt.Errorf("create cluster: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 5000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create cluster: %w", err)
	}
	for _, ns := range f.Namespaces {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := dyn.Resource(namespaceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return forEach(ctx, f.Workloads, func(w Workload) error { return createWorkload(ctx, dyn, w) })
}

// createWorkload creates the workload, as its manifest renders, and its
// ResourceRecommend.
func createWorkload(ctx context.Context, dyn dynamic.Interface, w Workload) error {
	obj, err := decode(w.Manifest())
	if err != nil {
		return err
	}
	obj.SetNamespace(w.Namespace)
	if w.Kustomize && w.Kind == KindDeployment {
		obj.SetAnnotations(map[string]string{overlayAnnotation: "true"})
	}
	if _, err := dyn.Resource(kindGVR[w.Kind]).Namespace(w.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	rr, err := decode(w.ResourceRecommend())
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(recommendGVR).Namespace(w.Namespace).Create(ctx, rr, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create resource recommend %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

func decode(manifest string) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// forEach calls do for each item, createWorkers at a time, and returns the
// errors; it stops handing out items at the first error.
func forEach[T any](ctx context.Context, items []T, do func(T) error) error {
	return forEachN(ctx, createWorkers, items, func(k int) error { return do(items[k]) })
}

// forEachN calls do with the index of each item, n at a time, and returns
// the errors; it stops handing out items at the first error.
func forEachN[T any](ctx context.Context, n int, items []T, do func(int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for k := range work {
				if err := do(k); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	for k := range items {
		select {
		case work <- k:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(work)
	wg.Wait()
	if len(errs) == 0 && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errors.Join(errs...)
}
