package collect

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/kinds"
)

// maxNamespaceLists is how many namespaces holding wanted targets are
// listed one by one, after the metadata list found them, instead of one
// list across all namespaces: few lists of the namespaces that matter beat
// reading every object of the kind in the cluster.
const maxNamespaceLists = 4

// errNoPodSpec marks an object with no pod spec at any known path, as
// opposed to a pod spec with malformed containers.
var errNoPodSpec = fmt.Errorf("no pod spec: %w", ErrNoPodTemplate)

// refKey is a targetRef as written, before resolution.
type refKey struct {
	apiVersion string
	kind       string
}

// resolution is a targetRef resolved through discovery.
type resolution struct {
	gk  schema.GroupKind
	gvr schema.GroupVersionResource
	err error
}

// targetSet is what readTargets found: the resolution of every targetRef
// and the workload or error of every target.
type targetSet struct {
	resolved  map[refKey]resolution
	workloads map[targetKey]*Workload
	errs      map[targetKey]error
}

func refOf(rec *v1alpha1.ResourceRecommend) refKey {
	return refKey{apiVersion: rec.Spec.TargetRef.APIVersion, kind: rec.Spec.TargetRef.Kind}
}

// keyOf returns the key of rec's target; its group is the resolved one.
func (t *targetSet) keyOf(rec *v1alpha1.ResourceRecommend) targetKey {
	return targetKey{gk: t.resolved[refOf(rec)].gk, namespace: rec.Namespace, name: rec.Spec.TargetRef.Name}
}

// lookup returns rec's workload, or an error for Validate.
func (t *targetSet) lookup(rec *v1alpha1.ResourceRecommend) (*Workload, error) {
	res, ok := t.resolved[refOf(rec)]
	if !ok {
		return nil, fmt.Errorf("target %s %s was not resolved", rec.Spec.TargetRef.Kind, rec.Spec.TargetRef.Name)
	}
	if res.err != nil {
		return nil, res.err
	}
	key := t.keyOf(rec)
	if err := t.errs[key]; err != nil {
		if errors.Is(err, errNoPodSpec) && !kinds.Known(key.gk.Group, key.gk.Kind) {
			return nil, fmt.Errorf("%s has no pod template: %w", key, ErrKindUnsupported)
		}
		return nil, err
	}
	w := t.workloads[key]
	if w == nil {
		return nil, fmt.Errorf("%s: %w", key, ErrWorkloadNotFound)
	}
	return w, nil
}

// readTargets resolves every targetRef and reads the targets with paged
// lists per resource type, keeping only the objects some item refers to.
// An Argo Rollout's workloadRef costs one more list of the referenced type.
// A kind the cluster does not serve is that item's error; a list that fails
// (permissions, a timeout) fails the run.
func (c *Collector) readTargets(ctx context.Context, recs []*v1alpha1.ResourceRecommend) (*targetSet, error) {
	t := &targetSet{resolved: map[refKey]resolution{}, workloads: map[targetKey]*Workload{}, errs: map[targetKey]error{}}
	wanted, err := c.wantedTargets(recs, t)
	if err != nil {
		return nil, err
	}

	// Rollouts whose template lives in another object, by that object.
	type dependent struct {
		rollout *Workload
		key     targetKey
	}
	deps := map[schema.GroupVersionResource]map[targetKey][]dependent{}
	for _, gvr := range sortedGVRs(wanted) {
		// What a list finds counts only once it is complete: a list that
		// fails midway fails every target of the kind.
		got, errs := map[targetKey]*Workload{}, map[targetKey]error{}
		type pending struct {
			gvr    schema.GroupVersionResource
			depKey targetKey
			dependent
		}
		var pend []pending
		denied, err := c.listTargets(ctx, gvr, wanted[gvr], func(key targetKey, obj *unstructured.Unstructured) {
			if gvk, name, ok := workloadRefOf(obj); ok {
				dep, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					errs[key] = fmt.Errorf("%s: resolving spec.workloadRef %s: %w: %w", key, gvk, ErrNoPodTemplate, err)
					return
				}
				depKey := targetKey{gk: gvk.GroupKind(), namespace: key.namespace, name: name}
				pend = append(pend, pending{dep.Resource, depKey, dependent{rollout: &Workload{ObjectRef: objectRefOf(obj), Replicas: replicasOf(obj)}, key: key}})
				return
			}
			w, err := workloadFrom(obj)
			if err != nil {
				errs[key] = err
				return
			}
			got[key] = w
		})
		if err != nil {
			return nil, err
		}
		for key := range wanted[gvr] {
			if err, ok := denied.of(key); ok {
				delete(got, key)
				errs[key] = fmt.Errorf("%w: %w", ErrWorkloadUnreadable, err)
			}
		}
		maps.Copy(t.workloads, got)
		maps.Copy(t.errs, errs)
		for _, p := range pend {
			if _, ok := denied.of(p.key); ok {
				continue
			}
			if deps[p.gvr] == nil {
				deps[p.gvr] = map[targetKey][]dependent{}
			}
			deps[p.gvr][p.depKey] = append(deps[p.gvr][p.depKey], p.dependent)
		}
	}

	for gvr, byDep := range deps {
		keys := make(map[targetKey]bool, len(byDep))
		for k := range byDep {
			keys[k] = true
		}
		found := map[targetKey]*Workload{}
		failed := map[targetKey]error{}
		denied, err := c.listTargets(ctx, gvr, keys, func(key targetKey, obj *unstructured.Unstructured) {
			if w, err := workloadFrom(obj); err != nil {
				failed[key] = err
			} else {
				found[key] = w
			}
		})
		if err != nil {
			return nil, err
		}
		for depKey, dependents := range byDep {
			if err, ok := denied.of(depKey); ok {
				for _, d := range dependents {
					t.errs[d.key] = fmt.Errorf("%s: spec.workloadRef: %w: %w", d.key, ErrWorkloadUnreadable, err)
				}
				continue
			}
			w, err := found[depKey], failed[depKey]
			if w == nil && err == nil {
				err = fmt.Errorf("spec.workloadRef %s not found: %w", depKey, ErrNoPodTemplate)
			}
			for _, d := range dependents {
				if err != nil {
					t.errs[d.key] = fmt.Errorf("%s: %w", d.key, err)
					continue
				}
				r := *d.rollout
				r.Containers = w.Containers
				src := w.ObjectRef
				r.Source = &src
				t.workloads[d.key] = &r
			}
		}
	}
	return t, nil
}

// wantedTargets resolves the kinds of the ResourceRecommends' targets into
// t and returns the targets to read, by resource.
func (c *Collector) wantedTargets(recs []*v1alpha1.ResourceRecommend, t *targetSet) (map[schema.GroupVersionResource]map[targetKey]bool, error) {
	wanted := map[schema.GroupVersionResource]map[targetKey]bool{}
	for _, rec := range recs {
		ref := rec.Spec.TargetRef
		if ref.Name == "" || ref.Kind == "" {
			continue
		}
		rk := refOf(rec)
		res, ok := t.resolved[rk]
		if !ok {
			var err error
			if res, err = c.resolve(ref); err != nil {
				return nil, err
			}
			t.resolved[rk] = res
		}
		if res.err != nil {
			continue
		}
		if wanted[res.gvr] == nil {
			wanted[res.gvr] = map[targetKey]bool{}
		}
		wanted[res.gvr][t.keyOf(rec)] = true
	}
	return wanted, nil
}

// unreadable reports whether a failed list concerns only the kind listed:
// the job's role may not list it, or the cluster stopped serving it. Such a
// kind is the error of the items targeting it, so that one namespace's
// ResourceRecommend naming a kind outside the role cannot stop the run for
// every other. Anything else (a timeout, an unreachable apiserver) still
// fails the run.
func unreadable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// deniedLists are the lists of a kind that were unreadable, by namespace;
// metav1.NamespaceAll for a list across all namespaces.
type deniedLists map[string]error

// of is the error of the list that should have found key.
func (d deniedLists) of(key targetKey) (error, bool) {
	if err, ok := d[key.namespace]; ok {
		return err, true
	}
	err, ok := d[metav1.NamespaceAll]
	return err, ok
}

// resolve maps a targetRef to its resource through discovery. apiVersion
// may be left out when exactly one group serves the kind. A kind that is
// not served, ambiguous or cluster-scoped is the item's error
// (resolution.err); only a failing discovery is returned as an error.
func (c *Collector) resolve(ref v1alpha1.CrossVersionObjectReference) (resolution, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var mapping *meta.RESTMapping
	var err error
	if ref.APIVersion == "" {
		mapping, err = c.resolveKind(ref.Kind)
	} else {
		mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	var ambiguous *ambiguousKindError
	switch {
	case meta.IsNoMatchError(err) || errors.As(err, &ambiguous):
		return resolution{gk: gvk.GroupKind(), err: fmt.Errorf("resolving %s: %w", describeRef(ref), err)}, nil
	case err != nil:
		return resolution{}, fmt.Errorf("resolving %s: %w", describeRef(ref), err)
	}
	res := resolution{gk: mapping.GroupVersionKind.GroupKind(), gvr: mapping.Resource}
	switch {
	case mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		res.err = fmt.Errorf("%s is cluster-scoped; a target must be in the ResourceRecommend's namespace", describeRef(ref))
	case kinds.WithoutTemplate(res.gk.Group, res.gk.Kind):
		// Not listed at all: a ConfigMap or a Secret is nothing the job
		// should read, nor may need the rights to.
		res.err = fmt.Errorf("%s has no pod template: %w", res.gk, ErrKindUnsupported)
	}
	return res, nil
}

// resolveKind finds the one group serving kind, in its preferred version.
func (c *Collector) resolveKind(kind string) (*meta.RESTMapping, error) {
	// Discovery registers every kind under its lower-case singular name.
	gvks, err := c.mapper.KindsFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)})
	if err != nil && !meta.IsNoMatchError(err) {
		return nil, err
	}
	var groups []string
	var first schema.GroupVersionKind
	for _, gvk := range gvks {
		// Kinds are case-sensitive, as in katalyst: "deployment" is no kind.
		if gvk.Kind != kind {
			continue
		}
		if len(groups) == 0 {
			first = gvk
		}
		if !slices.Contains(groups, gvk.Group) {
			groups = append(groups, gvk.Group)
		}
	}
	switch len(groups) {
	case 0:
		return nil, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: kind}}
	case 1:
		return c.mapper.RESTMapping(first.GroupKind(), first.Version)
	default:
		sort.Strings(groups)
		return nil, &ambiguousKindError{kind: kind, groups: groups}
	}
}

// ambiguousKindError is a kind served by several groups, given without
// apiVersion.
type ambiguousKindError struct {
	kind   string
	groups []string
}

func (e *ambiguousKindError) Error() string {
	return fmt.Sprintf("kind %s is served by the groups %s; set spec.targetRef.apiVersion", e.kind, strings.Join(e.groups, ", "))
}

func describeRef(ref v1alpha1.CrossVersionObjectReference) string {
	if ref.APIVersion == "" {
		return ref.Kind
	}
	return ref.Kind + " " + ref.APIVersion
}

// listTargets hands each object of gvr named by keys that exists to each,
// page by page, so that no list is held whole. With a metadata client it
// first lists metadata, which tells existence cheaply, and then reads full
// objects only from the namespaces holding wanted targets, one list each
// when they are few. A namespace whose list is unreadable is passed over
// and returned in denied, so that it fails only its own targets, with its
// own error; objects handed out of it before its list failed do not
// count.
func (c *Collector) listTargets(ctx context.Context, gvr schema.GroupVersionResource, keys map[targetKey]bool, each func(targetKey, *unstructured.Unstructured)) (denied deniedLists, err error) {
	gk := schema.GroupKind{}
	for k := range keys {
		gk = k.gk
		break
	}
	denied = deniedLists{}
	namespaces := c.scope.namespaces()
	if len(namespaces) == 0 {
		return denied, nil
	}
	if c.meta != nil {
		present := map[string]bool{}
		for _, ns := range namespaces {
			err := c.eachMeta(ctx, gvr, []string{ns}, func(m *metav1.PartialObjectMetadata) {
				if keys[targetKey{gk: gk, namespace: m.Namespace, name: m.Name}] {
					present[m.Namespace] = true
				}
			})
			switch {
			case unreadable(err):
				denied[ns] = err
			case err != nil:
				return nil, err
			}
		}
		if len(present) == 0 {
			return denied, nil
		}
		if len(present) <= maxNamespaceLists || namespaces[0] != metav1.NamespaceAll {
			namespaces = slices.Sorted(maps.Keys(present))
		}
	}
	for _, ns := range namespaces {
		if _, ok := denied[ns]; ok {
			continue
		}
		err := c.eachObject(ctx, gvr, []string{ns}, "", func(u *unstructured.Unstructured) error {
			if key := (targetKey{gk: gk, namespace: u.GetNamespace(), name: u.GetName()}); keys[key] {
				each(key, u)
			}
			return nil
		})
		switch {
		case unreadable(err):
			denied[ns] = err
		case err != nil:
			return nil, err
		}
	}
	return denied, nil
}

func sortedGVRs[V any](m map[schema.GroupVersionResource]V) []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(m))
	for gvr := range m {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
