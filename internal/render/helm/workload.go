package helm

import (
	"strings"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

// containerID identifies a container across renders of one release by
// where it comes from rather than by its object's name, which values such
// as fullnameOverride change: the template, the kind, the object's place
// among that template's objects of the kind, and the container's name.
type containerID struct {
	template, kind string
	ordinal        int
	container      string
	// unmatched tells apart the containers of a probe render that are
	// none of the release's own: 0 for those that are.
	unmatched int
}

// podContainer is one container of a rendered pod template.
type podContainer struct {
	id containerID
	// as names the container as rendered.
	as Container
	// body is the container's mapping; nil in an analysis's base, which
	// keeps names only.
	body map[string]any
}

// podContainers lists the containers and init containers of every pod
// template in objects, in object and container order.
func podContainers(objects []Object) []podContainer {
	var out []podContainer
	ordinals := map[[2]string]int{}
	for _, o := range objects {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		k := [2]string{o.Template, o.Kind}
		ordinal := ordinals[k]
		ordinals[k]++
		for _, list := range []string{"initContainers", "containers"} {
			items, _ := spec[list].([]any)
			for _, item := range items {
				c, ok := item.(map[string]any)
				if !ok {
					continue
				}
				name, _ := c["name"].(string)
				out = append(out, podContainer{
					id:   containerID{template: o.Template, kind: o.Kind, ordinal: ordinal, container: name},
					as:   Container{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Container: name},
					body: c,
				})
			}
		}
	}
	return out
}

// podSpec returns the pod spec of a workload's pod template, or nil for
// an object that has none.
func podSpec(o Object) map[string]any {
	group, _, found := strings.Cut(o.APIVersion, "/")
	if !found {
		group = ""
	}
	k, ok := kinds.Lookup(group, o.Kind)
	if !ok {
		return nil
	}
	var cur any = o.Body
	for _, key := range k.PodSpec {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[key]
	}
	spec, _ := cur.(map[string]any)
	return spec
}

// resourceValue returns a container's rendered value of f.
func resourceValue(container map[string]any, f Field) (any, bool) {
	section, name := f.split()
	resources, _ := container["resources"].(map[string]any)
	values, _ := resources[section].(map[string]any)
	v, ok := values[name]
	return v, ok
}

// split returns the field's section (requests or limits) and resource
// (cpu or memory).
func (f Field) split() (section, resource string) {
	section, resource, _ = strings.Cut(string(f), ".")
	return section, resource
}

// matches reports whether c names the rendered container; c's empty
// namespace is the release's.
func (c Container) matches(rendered Container, releaseNamespace string) bool {
	ns := c.Namespace
	if ns == "" {
		ns = releaseNamespace
	}
	return c.Kind == rendered.Kind && ns == rendered.Namespace && c.Name == rendered.Name && c.Container == rendered.Container
}
