package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Apply server-side applies every object of the YAML documents in
// manifests, as `kubectl apply --server-side` would. Kinds the apiserver
// does not know yet (a CRD applied in the same call) are retried for a
// short while, until the CRD is established.
func Apply(ctx context.Context, cfg *rest.Config, manifests ...[]byte) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))

	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		decoded, err := decodeObjects(m)
		if err != nil {
			return err
		}
		objs = append(objs, decoded...)
	}
	// What others depend on goes first, as kubectl does.
	sort.SliceStable(objs, func(i, j int) bool { return applyOrder(objs[i]) < applyOrder(objs[j]) })
	for _, obj := range objs {
		if err := applyOne(ctx, dyn, mapper, obj); err != nil {
			return err
		}
	}
	return nil
}

func applyOrder(obj *unstructured.Unstructured) int {
	switch obj.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	default:
		return 2
	}
}

func decodeObjects(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func applyOne(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	name := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
	deadline := time.Now().Add(30 * time.Second)
	for {
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				ns := obj.GetNamespace()
				if ns == "" {
					ns = metav1.NamespaceDefault
				}
				ri = dyn.Resource(mapping.Resource).Namespace(ns)
			}
			data, err := obj.MarshalJSON()
			if err != nil {
				return fmt.Errorf("encoding %s: %w", name, err)
			}
			force := true
			_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "testbed", Force: &force})
			if err == nil {
				return nil
			}
			if !meta.IsNoMatchError(err) {
				return fmt.Errorf("applying %s: %w", name, err)
			}
		} else if !meta.IsNoMatchError(err) {
			return fmt.Errorf("resolving %s: %w", name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("applying %s: kind not served after 30s: %w", name, err)
		}
		mapper.Reset()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
