package collect

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

// Workload is a live object with a pod template, as far as a run needs it.
type Workload struct {
	// ObjectRef is the live object; its labels and annotations help find
	// the file that defines it (Argo CD's tracking annotation, Flux's
	// labels).
	ObjectRef
	// Containers are the pod template's containers and native sidecars, in
	// template order: containers first, then sidecars.
	Containers []Container
	// Source is the object whose pod template Containers come from when it
	// is not this one: the Deployment an Argo Rollout's spec.workloadRef
	// names. The manifest to edit is Source's then; nil means this object.
	Source *ObjectRef
	// Replicas is how many pods the object asks for: its spec.replicas, a
	// DaemonSet's status.desiredNumberScheduled; nil when it says none.
	Replicas *int32
}

// ObjectRef names a live object, with the labels and annotations that help
// find its manifest.
type ObjectRef struct {
	APIVersion  string
	Kind        string
	Namespace   string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// UID tells the object from one deleted and created again under its
	// name (a checkpoint of its history is the old one's).
	UID string
	// PodPrint is its pod template's print, which tells the source that
	// builds it from others that could ("" when it has no template).
	PodPrint kinds.PodPrint
}

// lastApplied is the annotation in which kubectl apply, and Argo CD's
// client-side apply, keep the whole manifest they applied.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// withoutLastApplied is annotations, a map of the caller's own, without
// lastApplied: nothing the job does reads it, and it is as large as the
// object, which a run over tens of thousands of objects would otherwise
// hold until its end.
func withoutLastApplied(annotations map[string]string) map[string]string {
	delete(annotations, lastApplied)
	return annotations
}

// objectRefOf is obj's reference.
func objectRefOf(obj *unstructured.Unstructured) ObjectRef {
	return ObjectRef{
		APIVersion:  obj.GetAPIVersion(),
		Kind:        obj.GetKind(),
		Namespace:   obj.GetNamespace(),
		Name:        obj.GetName(),
		Labels:      obj.GetLabels(),
		Annotations: withoutLastApplied(obj.GetAnnotations()),
		UID:         string(obj.GetUID()),
	}
}

// Container is one container of a pod template with its current resources.
type Container struct {
	Name     string
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
	// Sidecar marks a native sidecar: an init container with restartPolicy
	// Always, which runs as long as the pod. One-shot init containers are
	// not Containers at all.
	Sidecar bool
}

// Container returns the named container, or nil.
func (w *Workload) Container(name string) *Container {
	for i := range w.Containers {
		if w.Containers[i].Name == name {
			return &w.Containers[i]
		}
	}
	return nil
}

// ContainerNames lists the containers in template order.
func (w *Workload) ContainerNames() []string {
	names := make([]string, 0, len(w.Containers))
	for _, c := range w.Containers {
		names = append(names, c.Name)
	}
	return names
}

// workloadRefOf returns the reference of a kind that may take its pod
// template from another object (an Argo Rollout's spec.workloadRef), when
// obj has one and no pod template of its own.
func workloadRefOf(obj *unstructured.Unstructured) (schema.GroupVersionKind, string, bool) {
	gk := obj.GroupVersionKind().GroupKind()
	k, ok := kinds.Lookup(gk.Group, gk.Kind)
	if !ok || k.TemplateRef == nil {
		return schema.GroupVersionKind{}, "", false
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, k.PodSpec[:len(k.PodSpec)-1]...); found {
		return schema.GroupVersionKind{}, "", false
	}
	ref, found, err := unstructured.NestedStringMap(obj.Object, k.TemplateRef...)
	if !found || err != nil || ref["name"] == "" || ref["kind"] == "" {
		return schema.GroupVersionKind{}, "", false
	}
	return schema.FromAPIVersionAndKind(ref["apiVersion"], ref["kind"]), ref["name"], true
}

// workloadFrom reads the containers of obj's pod template. It wraps
// ErrNoPodTemplate when obj has none or its containers are malformed, which
// katalyst reports as ContainersMatchErrorCode; like katalyst, it skips a
// container entry without a name.
func workloadFrom(obj *unstructured.Unstructured) (*Workload, error) {
	w := &Workload{ObjectRef: objectRefOf(obj), Replicas: replicasOf(obj)}
	gk := obj.GroupVersionKind().GroupKind()
	for _, path := range kinds.PodSpecPaths(gk.Group, gk.Kind) {
		spec, found, err := unstructured.NestedMap(obj.Object, path...)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w: %w", w.Kind, w.Namespace, w.Name, ErrNoPodTemplate, err)
		}
		if !found {
			continue
		}
		containers, err := containersFrom(spec)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
		}
		w.Containers = containers
		w.PodPrint = kinds.PodSpecPrint(spec)
		return w, nil
	}
	return nil, fmt.Errorf("%s %s/%s has no %s: %w", w.Kind, w.Namespace, w.Name, kinds.PodSpecPathsText(gk.Group, gk.Kind), errNoPodSpec)
}

// containersFrom reads a pod spec's containers and native sidecars.
func containersFrom(spec map[string]any) ([]Container, error) {
	items, found, err := unstructured.NestedSlice(spec, "containers")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoPodTemplate, err)
	}
	if !found {
		return nil, fmt.Errorf("%w: the pod template has no containers", ErrNoPodTemplate)
	}
	var out []Container
	for i, item := range items {
		c, ok, err := containerFrom(item)
		if err != nil {
			return nil, fmt.Errorf("container %d: %w: %w", i, ErrNoPodTemplate, err)
		}
		if ok {
			out = append(out, c)
		}
	}
	// Malformed init containers are left alone: katalyst never reads them.
	inits, _, _ := unstructured.NestedSlice(spec, "initContainers")
	for _, item := range inits {
		m, isMap := item.(map[string]any)
		if !isMap {
			continue
		}
		if policy, _, _ := unstructured.NestedString(m, "restartPolicy"); policy != string(corev1.ContainerRestartPolicyAlways) {
			continue
		}
		c, ok, err := containerFrom(item)
		if err != nil {
			return nil, fmt.Errorf("sidecar: %w: %w", ErrNoPodTemplate, err)
		}
		if ok {
			c.Sidecar = true
			out = append(out, c)
		}
	}
	return out, nil
}

// containerFrom reads one container entry; ok is false for an entry
// without a name, which is skipped.
func containerFrom(item any) (c Container, ok bool, err error) {
	m, isMap := item.(map[string]any)
	if !isMap {
		return Container{}, false, nil
	}
	name, _, _ := unstructured.NestedString(m, "name")
	if name == "" {
		return Container{}, false, nil
	}
	c = Container{Name: name}
	if c.Requests, err = resourceList(m, "requests"); err != nil {
		return Container{}, false, fmt.Errorf("container %q: %w", name, err)
	}
	if c.Limits, err = resourceList(m, "limits"); err != nil {
		return Container{}, false, fmt.Errorf("container %q: %w", name, err)
	}
	return c, true, nil
}

func resourceList(container map[string]any, field string) (corev1.ResourceList, error) {
	values, found, err := unstructured.NestedMap(container, "resources", field)
	if err != nil || !found {
		return nil, err
	}
	list := corev1.ResourceList{}
	for name, v := range values {
		q, err := resource.ParseQuantity(fmt.Sprint(v))
		if err != nil {
			return nil, fmt.Errorf("resources.%s.%s: %w", field, name, err)
		}
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

// replicasOf is the number of pods obj asks for: spec.replicas, or for a
// DaemonSet, which has none, status.desiredNumberScheduled; nil when
// neither is a number in range.
func replicasOf(obj *unstructured.Unstructured) *int32 {
	path := []string{"spec", "replicas"}
	if obj.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "apps", Kind: "DaemonSet"}) {
		path = []string{"status", "desiredNumberScheduled"}
	}
	n, found, err := unstructured.NestedInt64(obj.Object, path...)
	if !found || err != nil || n < 0 || n > math.MaxInt32 {
		return nil
	}
	r := int32(n)
	return &r
}
