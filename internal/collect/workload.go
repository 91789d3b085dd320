package collect

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Workload is a live object with a pod template, as far as a run needs it.
type Workload struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Containers []Container
}

// Container is one container of a pod template with its current resources.
type Container struct {
	Name     string
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
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

// podTemplatePaths are where pod templates live, in the order tried:
// Deployment, StatefulSet, DaemonSet, ReplicaSet and Job, then CronJob.
var podTemplatePaths = [][]string{
	{"spec", "template", "spec"},
	{"spec", "jobTemplate", "spec", "template", "spec"},
}

// workloadFrom reads the containers of obj's pod template. It wraps
// ErrNoPodTemplate when obj has none or its containers are malformed, which
// katalyst reports as ContainersMatchErrorCode; like katalyst, it skips a
// container entry without a name.
func workloadFrom(obj *unstructured.Unstructured) (*Workload, error) {
	w := &Workload{
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
	}
	for _, path := range podTemplatePaths {
		items, found, err := unstructured.NestedSlice(obj.Object, append(path, "containers")...)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w: %w", w.Kind, w.Namespace, w.Name, ErrNoPodTemplate, err)
		}
		if !found {
			continue
		}
		for i, item := range items {
			c, ok, err := containerFrom(item)
			if err != nil {
				return nil, fmt.Errorf("%s %s/%s: container %d: %w: %w", w.Kind, w.Namespace, w.Name, i, ErrNoPodTemplate, err)
			}
			if ok {
				w.Containers = append(w.Containers, c)
			}
		}
		return w, nil
	}
	return nil, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, ErrNoPodTemplate)
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
