package collect

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"
)

// scope is the namespaces a run covers.
type scope struct {
	include []string
	exclude []string
}

// namespaces returns what to list: each included namespace not excluded,
// sorted, or "" (all namespaces) when none is included. An empty result
// means nothing is in scope.
func (s scope) namespaces() []string {
	if len(s.include) == 0 {
		return []string{metav1.NamespaceAll}
	}
	var out []string
	for _, ns := range s.include {
		if !slices.Contains(s.exclude, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// contains reports whether an object of namespace ns is in scope.
func (s scope) contains(ns string) bool {
	if len(s.include) > 0 && !slices.Contains(s.include, ns) {
		return false
	}
	return !slices.Contains(s.exclude, ns)
}

// fieldSelector leaves the excluded namespaces out of a list across all
// namespaces, so the apiserver does not send them.
func (s scope) fieldSelector() string {
	if len(s.exclude) == 0 {
		return ""
	}
	terms := make([]fields.Selector, 0, len(s.exclude))
	for _, ns := range s.exclude {
		terms = append(terms, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(terms...).String()
}

// Shard returns the shard, in [0, count), of the ResourceRecommend
// namespace/name: an FNV-1a hash, stable across runs, versions and
// machines, so each pod of an Indexed Job handles a fixed part.
func Shard(namespace, name string, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(count))
}

// eachObject pages through full objects of gvr in each of namespaces,
// calling fn for every object. Errors name the resource and namespace.
func (c *Collector) eachObject(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string, labelSelector string, fn func(*unstructured.Unstructured) error) error {
	for _, ns := range namespaces {
		ri := c.client.Resource(gvr).Namespace(ns)
		list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) }
		err := c.page(ctx, list, c.listOptions(ns, labelSelector), func(obj runtime.Object) error {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return errors.New("list returned a non-unstructured object")
			}
			return fn(u)
		})
		if err != nil {
			return listError(gvr, ns, err)
		}
	}
	return nil
}

// eachMeta pages through the metadata of gvr's objects in each of
// namespaces.
func (c *Collector) eachMeta(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string, fn func(*metav1.PartialObjectMetadata)) error {
	for _, ns := range namespaces {
		ri := c.meta.Resource(gvr).Namespace(ns)
		list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) }
		err := c.page(ctx, list, c.listOptions(ns, ""), func(obj runtime.Object) error {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return errors.New("metadata list returned an unexpected object")
			}
			fn(m)
			return nil
		})
		if err != nil {
			return listError(gvr, ns, err)
		}
	}
	return nil
}

func (c *Collector) listOptions(ns, labelSelector string) metav1.ListOptions {
	opts := metav1.ListOptions{LabelSelector: labelSelector}
	if ns == metav1.NamespaceAll {
		opts.FieldSelector = c.scope.fieldSelector()
	}
	return opts
}

// page runs a paged list. The pager falls back to a full list when a
// continue token expires, so a long run still sees every object.
func (c *Collector) page(ctx context.Context, list pager.ListPageFunc, opts metav1.ListOptions, fn func(runtime.Object) error) error {
	p := pager.New(list)
	p.PageSize = c.pageSize
	return p.EachListItem(ctx, opts, fn)
}

func listError(gvr schema.GroupVersionResource, ns string, err error) error {
	if ns == metav1.NamespaceAll {
		return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
	}
	return fmt.Errorf("listing %s in namespace %s: %w", gvr.GroupResource(), ns, err)
}
