package repoindex

import "testing"

// TestComponentTransforms checks that a document counts under the name
// and namespace a kustomization gives it through its components too:
// kustomize applies a component's namePrefix and namespace to everything
// the kustomization that lists it holds, so env renders comp/c-web.
func TestComponentTransforms(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml":           "resources: [deploy.yaml]\n",
		"base/deploy.yaml":                  deployment("web", ""),
		"components/pre/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnamePrefix: c-\nnamespace: comp\n",
		"env/kustomization.yaml":            "resources: [../base]\ncomponents: [../components/pre]\n",
	}
	ref, err := resolveIn(files, Sought{Target: web("c-web", "comp")}, 0)
	if err != nil || ref.File != "base/deploy.yaml" || ref.RenderedFrom() != "env" {
		t.Errorf("Resolve(comp/c-web) = %s from %s, %v; want base/deploy.yaml from env", ref.File, ref.RenderedFrom(), err)
	}
	if ref, err := resolveIn(files, Sought{Target: web("web", "shop")}, 0); err == nil && ref.RenderedFrom() == "env" {
		t.Errorf("Resolve(shop/web) = %s from env, which renders comp/c-web", ref.File)
	}
}
