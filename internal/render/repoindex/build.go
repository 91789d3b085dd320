package repoindex

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
)

// Build runs kustomize on the kustomization in dir with its defaults (no
// plugins, files only from the kustomization's root) and returns each
// object by group/kind/namespace/name. A tree that would fetch anything
// is refused before kustomize runs.
func (p ProofFS) Build(dir string) (_ map[string]map[string]any, err error) {
	// A repository's content must not take the run down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	if err := p.CheckLocal(dir); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(p, dir)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, err
		}
		gvk := r.GetGvk()
		out[gvk.Group+"/"+gvk.Kind+"/"+r.GetNamespace()+"/"+r.GetName()] = obj
	}
	return out, nil
}
