package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// DefaultPageSize is how many objects one list call asks for.
const DefaultPageSize = 500

// Item is one ResourceRecommend as the run sees it: its target, and either
// the validated policies or the reason it was rejected.
type Item struct {
	Namespace string
	Name      string
	Target    v1alpha1.CrossVersionObjectReference
	// Workload is the resolved target; nil when it could not be read.
	Workload *Workload
	// Policies are the validated per-container policies of a valid item.
	Policies []ContainerPolicy
	// Invalid says why the item was rejected; nil when it is valid.
	Invalid *ValidationError
	// Cause is what lay behind a rejection whose katalyst message says
	// little, such as "workload matched err".
	Cause error
}

// Collector lists ResourceRecommends and the workloads they target.
type Collector struct {
	client    dynamic.Interface
	mapper    meta.RESTMapper
	namespace string
	pageSize  int64
	log       *slog.Logger
}

// Option configures a Collector.
type Option func(*Collector)

// WithNamespace restricts the run to one namespace.
func WithNamespace(ns string) Option { return func(c *Collector) { c.namespace = ns } }

// WithPageSize sets the number of objects per list call.
func WithPageSize(n int64) Option { return func(c *Collector) { c.pageSize = n } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *Collector) { c.log = l } }

// New returns a Collector reading through client, resolving kinds with mapper.
func New(client dynamic.Interface, mapper meta.RESTMapper, opts ...Option) *Collector {
	c := &Collector{client: client, mapper: mapper, pageSize: DefaultPageSize, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Collect lists every ResourceRecommend in scope, reads the targets with one
// paged list per resource type, and validates each item. An invalid item is
// returned with Invalid set; only a failure to list ResourceRecommends at
// all is an error. Items are sorted by namespace and name.
func (c *Collector) Collect(ctx context.Context) ([]Item, error) {
	recs, undecodable, err := c.listRecommends(ctx)
	if err != nil {
		return nil, err
	}
	workloads, err := c.readTargets(ctx, recs)
	if err != nil {
		return nil, err
	}

	items := make([]Item, 0, len(recs)+len(undecodable))
	items = append(items, undecodable...)
	for _, rec := range recs {
		item := Item{Namespace: rec.Namespace, Name: rec.Name, Target: rec.Spec.TargetRef}
		key := targetKey{gk: targetGroupKind(rec.Spec.TargetRef), namespace: rec.Namespace, name: rec.Spec.TargetRef.Name}
		lookup := func() ([]string, error) {
			res := workloads[key]
			if res.err != nil {
				item.Cause = res.err
				return nil, res.err
			}
			if res.workload == nil {
				return nil, ErrWorkloadNotFound
			}
			item.Workload = res.workload
			return res.workload.ContainerNames(), nil
		}
		policies, invalid := Validate(rec.Spec, lookup)
		if invalid != nil {
			item.Invalid = invalid
			attrs := []any{"resourceRecommend", rec.Namespace + "/" + rec.Name, "code", invalid.Code, "message", invalid.Message}
			if item.Cause != nil {
				attrs = append(attrs, "cause", item.Cause)
			}
			c.log.InfoContext(ctx, "invalid resource recommend", attrs...)
		} else {
			item.Policies = policies
		}
		items = append(items, item)
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	return items, nil
}

// listRecommends lists and decodes the ResourceRecommends in scope, dropping
// those that belong to another recommender. The apiserver has checked each
// object against the CRD schema, so one that does not decode means the
// cluster's CRD differs from ours: it comes back as an invalid item with
// code CodeDecodeError, and the run goes on.
func (c *Collector) listRecommends(ctx context.Context) ([]*v1alpha1.ResourceRecommend, []Item, error) {
	ri := c.client.Resource(v1alpha1.GroupVersionResource()).Namespace(c.namespace)
	var recs []*v1alpha1.ResourceRecommend
	var undecodable []Item
	err := c.eachItem(ctx, ri, func(u *unstructured.Unstructured) error {
		rec := &v1alpha1.ResourceRecommend{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rec); err != nil {
			undecodable = append(undecodable, Item{
				Namespace: u.GetNamespace(),
				Name:      u.GetName(),
				Invalid:   &ValidationError{Code: CodeDecodeError, Message: fmt.Sprintf("cannot decode: %v", err)},
			})
			return nil
		}
		if !IsDefaultRecommender(rec.Spec) {
			return nil
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", v1alpha1.GroupVersionResource().GroupResource(), err)
	}
	return recs, undecodable, nil
}

// CodeDecodeError marks a ResourceRecommend that does not decode into the
// v1alpha1 types; katalyst has no code for it.
const CodeDecodeError = "DecodeError"

type targetKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

type targetResult struct {
	workload *Workload
	err      error
}

func targetGroupKind(ref v1alpha1.CrossVersionObjectReference) schema.GroupKind {
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
}

// readTargets reads every referenced target with one paged list per resource
// type, never a GET per object, keeping only the objects some item refers to.
// A kind the cluster does not serve is that item's error; a list that fails
// (permissions, a timeout) fails the run, as every item of that kind would
// otherwise be reported wrongly.
func (c *Collector) readTargets(ctx context.Context, recs []*v1alpha1.ResourceRecommend) (map[targetKey]targetResult, error) {
	results := map[targetKey]targetResult{}
	wanted := map[schema.GroupVersionKind]map[targetKey]bool{}
	for _, rec := range recs {
		ref := rec.Spec.TargetRef
		if ref.Name == "" || ref.Kind == "" {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		key := targetKey{gk: gvk.GroupKind(), namespace: rec.Namespace, name: ref.Name}
		if wanted[gvk] == nil {
			wanted[gvk] = map[targetKey]bool{}
		}
		wanted[gvk][key] = true
	}

	for gvk, keys := range wanted {
		setAll := func(err error) {
			for k := range keys {
				results[k] = targetResult{err: err}
			}
		}
		mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			setAll(fmt.Errorf("resolving %s: %w", gvk, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", gvk, err)
		}
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			setAll(fmt.Errorf("%s is not namespaced", gvk))
			continue
		}
		ri := c.client.Resource(mapping.Resource).Namespace(c.namespace)
		err = c.eachItem(ctx, ri, func(u *unstructured.Unstructured) error {
			key := targetKey{gk: gvk.GroupKind(), namespace: u.GetNamespace(), name: u.GetName()}
			if !keys[key] {
				return nil
			}
			w, err := workloadFrom(u)
			results[key] = targetResult{workload: w, err: err}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", mapping.Resource.GroupResource(), err)
		}
	}
	return results, nil
}

// eachItem pages through a list, calling fn for every object.
func (c *Collector) eachItem(ctx context.Context, ri dynamic.ResourceInterface, fn func(*unstructured.Unstructured) error) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return ri.List(ctx, opts)
	})
	p.PageSize = c.pageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return errors.New("list returned a non-unstructured object")
		}
		return fn(u)
	})
}
