package collect

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaceMeta are a namespace's labels and annotations: where a team
// says, once for its namespace, who reviews its changes.
type namespaceMeta struct {
	labels, annotations map[string]string
}

// readNamespaces lists the metadata of the namespaces that hold recs, in
// one paged list. Without the right to list namespaces (a namespaced
// install), it says so in the log and returns none: what namespaces say
// is for pull requests, and the run goes on without it.
func (c *Collector) readNamespaces(ctx context.Context, recs []*v1alpha1.ResourceRecommend) (map[string]namespaceMeta, error) {
	wanted := map[string]bool{}
	for _, r := range recs {
		wanted[r.Namespace] = true
	}
	out := map[string]namespaceMeta{}
	if len(wanted) == 0 || c.meta == nil {
		// Without a metadata client (a collector made for targets of
		// known kinds alone) there is nothing to read them with.
		return out, nil
	}
	ri := c.meta.Resource(namespaceGVR)
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) }
	err := c.page(ctx, list, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return errors.New("metadata list returned an unexpected object")
		}
		if wanted[m.Name] {
			out[m.Name] = namespaceMeta{labels: m.Labels, annotations: m.Annotations}
		}
		return nil
	})
	if apierrors.IsForbidden(err) {
		c.log.WarnContext(ctx, "namespaces not listed: their labels and annotations (pull request reviewers) are not read", "error", err)
		return map[string]namespaceMeta{}, nil
	}
	if err != nil {
		return nil, listError(namespaceGVR, metav1.NamespaceAll, err)
	}
	return out, nil
}
