package render

import (
	"errors"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

var testTarget = Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "x"}

func requests(container string, kv ...string) Change {
	c := Change{Target: testTarget, Container: container}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Requests = c.Requests.Set(corev1.ResourceName(kv[i]), resource.MustParse(kv[i+1]))
	}
	return c
}

// quantities parses a test's resource values.
func quantities(values map[string]string) Values {
	if values == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, v := range values {
		out[corev1.ResourceName(name)] = resource.MustParse(v)
	}
	return ValuesOf(out)
}

// errAny stands for an error that wraps no sentinel.
var errAny = errors.New("any error")

// head starts a Deployment x whose containers follow.
const head = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n"

// objectPodSpecPaths returns where the pod spec of a built object may be,
// from its kind (package kinds).
func objectPodSpecPaths(obj map[string]any) [][]string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return kinds.PodSpecPaths(repoindex.Group(apiVersion), kind)
}

// expect sets, in want, c's values where got has them, and fails where
// got does not have them (see proof.Expectation).
func expect(want, got map[string]any, c Change) error {
	return proof.Expectation{Want: c.resources()}.Expect(want, got)
}
