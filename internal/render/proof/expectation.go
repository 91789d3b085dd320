package proof

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/edits"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// Expectation is what a proof expects of one change: that its target's
// container renders with the values, or, for a marker, that the marked
// object does at the marked path.
type Expectation struct {
	// Want is the change: its target, container and values.
	Want edits.Resources
	// Object is the build id (group/kind/namespace/name) of the marked
	// object, and Path the keys to its resources mapping; "" for the
	// target.
	Object string
	Path   []string
	// Sets, when not empty, are the values the object must render at
	// those paths instead (Helm values of a HelmRelease or Application),
	// and Free the paths whose values may change in any way (a
	// HelmRelease's post-renderers).
	Sets []helmsource.Assignment
	Free []helm.Path
	// Also are other objects the change edits with its target: its
	// HorizontalPodAutoscaler.
	Also []Expectation
	// Deployer, when set, is the deployer whose document holds the
	// change: it is proved by building as that deployer builds.
	Deployer *repoindex.Deployer
}

// String names what e expects: the target, or the object and the paths
// the values land at.
func (e Expectation) String() string {
	switch {
	case len(e.Sets) > 0 || len(e.Free) > 0:
		var at []string
		for _, a := range e.Sets {
			at = append(at, a.Path.String())
		}
		for _, p := range e.Free {
			at = append(at, p.String())
		}
		return e.Object + " at " + strings.Join(at, ", ")
	case e.Object != "":
		return e.Object + " at " + strings.Join(e.Path, ".")
	}
	return e.Want.Target.String()
}

// Renders reports whether the object id of a build output is the one the
// values land in.
func (e Expectation) Renders(id string) bool {
	if e.Object != "" {
		return id == e.Object
	}
	return rendersTarget(e.Want, id)
}

// Expect sets, in want, the change's values where got has them, and fails
// where got does not have them.
func (e Expectation) Expect(want, got map[string]any) error {
	if e.Object == "" {
		return expect(want, got, e.Want)
	}
	if len(e.Sets) > 0 || len(e.Free) > 0 {
		for _, p := range e.Free {
			if !helmsource.SetPath(want, p, helmsource.DigPath(got, p)) {
				return fmt.Errorf("renders %s, which it did not have room for before", p)
			}
		}
		for _, a := range e.Sets {
			have := helmsource.DigPath(got, a.Path)
			if !helmsource.SameQuantityValue(have, a.Quantity) {
				return fmt.Errorf("renders %s %v, want %s", a.Path, have, a.Quantity.String())
			}
			if !helmsource.SetPath(want, a.Path, have) {
				return fmt.Errorf("renders %s, which it did not have room for before", a.Path)
			}
		}
		return nil
	}
	res, _ := tree.Dig(got, e.Path...).(map[string]any)
	if res == nil {
		return fmt.Errorf("no mapping at %s", strings.Join(e.Path, "."))
	}
	w := want
	for _, k := range e.Path {
		next, _ := w[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			w[k] = next
		}
		w = next
	}
	return expectResources(w, res, e.Want, "the marked object", strings.Join(e.Path, ".")+".")
}

// rendersTarget reports whether the object id of a build output is c's target.
func rendersTarget(c edits.Resources, id string) bool {
	t := c.Target
	prefix := repoindex.Group(t.APIVersion) + "/" + t.Kind + "/"
	return id == prefix+t.Namespace+"/"+t.Name || id == prefix+"/"+t.Name
}

// expect sets, in want, the change's values where got has them equal as
// quantities, and fails where got does not have them.
func expect(want, got map[string]any, c edits.Resources) error {
	for _, p := range objectPodSpecPaths(got) {
		wp, ok1 := tree.Dig(want, p...).(map[string]any)
		gp, ok2 := tree.Dig(got, p...).(map[string]any)
		if !ok1 || !ok2 {
			continue
		}
		for _, field := range []string{"containers", "initContainers"} {
			wc, gc := tree.Item(wp[field], c.Container), tree.Item(gp[field], c.Container)
			if wc == nil || gc == nil {
				continue
			}
			gres, _ := gc["resources"].(map[string]any)
			wres, _ := wc["resources"].(map[string]any)
			if wres == nil {
				wres = map[string]any{}
				wc["resources"] = wres
			}
			return expectResources(wres, gres, c, fmt.Sprintf("container %q", c.Container), "resources.")
		}
	}
	return fmt.Errorf("container %q is not in the output", c.Container)
}

// objectPodSpecPaths returns where the pod spec of a built object may be,
// from its kind (package kinds).
func objectPodSpecPaths(obj map[string]any) [][]string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return kinds.PodSpecPaths(repoindex.Group(apiVersion), kind)
}

// expectResources sets, in the resources mapping want, the change's values
// as the resources mapping got has them, and fails where got does not
// have them; who and at (the path to the mapping, with a final dot) name
// them in errors.
func expectResources(want, got map[string]any, c edits.Resources, who, at string) error {
	for _, s := range []struct {
		name   string
		values corev1.ResourceList
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for _, name := range sortedNames(s.values) {
			v := s.values[name]
			k := string(name)
			have := tree.Dig(got, s.name, k)
			if have == nil {
				return fmt.Errorf("%s has no %s%s.%s", who, at, s.name, k)
			}
			q, err := resource.ParseQuantity(strings.TrimSpace(fmt.Sprint(have)))
			if err != nil || q.Cmp(v) != 0 {
				return fmt.Errorf("%s renders %s%s.%s %v, want %s", who, at, s.name, k, have, v.String())
			}
			sec, _ := want[s.name].(map[string]any)
			if sec == nil {
				sec = map[string]any{}
				want[s.name] = sec
			}
			sec[k] = have
		}
	}
	return nil
}

// Holds reports whether document doc of data holds the change's values
// where find finds them: under the resources of a container or of the
// mapping a marker marks, or in the marked resources themselves. The
// held resources were left as they were, and are not looked at.
func Holds(data []byte, doc int, find repoindex.Finder, c edits.Resources, held []corev1.ResourceName) error {
	docs, err := yamledit.ParseDocuments(data)
	if err != nil {
		return err
	}
	if doc >= len(docs) {
		return fmt.Errorf("document %d is gone", doc+1)
	}
	n, direct, err := find(docs[doc])
	if err != nil {
		return err
	}
	res := n
	if !direct && n != nil {
		_, res, _ = yamledit.Lookup(n, "resources")
	}
	for _, s := range []struct {
		list   string
		values corev1.ResourceList
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for _, name := range sortedNames(s.values) {
			want := s.values[name]
			if slices.Contains(held, name) {
				continue
			}
			var v *yaml.Node
			if res != nil {
				if _, list, _ := yamledit.Lookup(res, s.list); list != nil {
					_, v, _ = yamledit.Lookup(list, string(name))
				}
			}
			if v == nil || !yamledit.SameQuantity(v, want) {
				return fmt.Errorf("document %d does not hold %s %s %s of container %q", doc+1, s.list, name, want.String(), c.Container)
			}
		}
	}
	return nil
}
