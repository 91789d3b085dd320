package helmsource

import (
	"context"
	"errors"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// docs are Edits of one document per file, as written: the ApplicationSets
// a test expands.
type docs map[string]string

func (d docs) Doc(file string, i int) (*yaml.Node, error) {
	text, ok := d[file]
	if !ok || i != 0 {
		return nil, errors.New("no such document")
	}
	n, err := yaml.Parse(text)
	if err != nil {
		return nil, err
	}
	return n.YNode(), nil
}

func (d docs) FileEdits(string) (data, orig []byte, ok bool) { return nil, nil, false }

func (d docs) BuildEnv(string, bool) (map[string]map[string]any, error) {
	return nil, errors.New("no kustomizations")
}

// appSetRef is the index's reference to the ApplicationSet of file.
func appSetRef(file string) repoindex.DocRef {
	return repoindex.DocRef{File: file, Key: repoindex.IdentKey{Group: repoindex.ArgoGroup, Kind: "ApplicationSet", Name: "shop"}, Namespace: "argocd"}
}

// TestApplicationSetReads checks which values files an ApplicationSet's
// Applications read, as appset expands them: a list generator's elements
// fill the template in, a generator that cannot be evaluated (here a git
// generator with no repository to read) leaves parameters that match any
// text.
func TestApplicationSetReads(t *testing.T) {
	const head = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: shop, namespace: argocd}\n"
	// {{.env}} is goTemplate's: fasttemplate, Argo CD's default, leaves
	// it as written (TestApplicationSetFastTemplate).
	const template = `
  goTemplate: true
  template:
    metadata:
      name: '{{.env}}'
    spec:
      source:
        repoURL: https://git.example.com/fleet.git
        path: charts/shop
        helm:
          valueFiles:
            - values-{{.env}}.yaml
            - '/envs/{{ .type }}/common.yaml'
`
	list := head + "spec:\n  generators:\n    - list:\n        elements:\n          - {env: qa, type: test}\n          - {env: prod-eu, type: prod}\n" + template
	git := head + "spec:\n  generators:\n    - git:\n        repoURL: https://git.example.com/fleet.git\n        directories: [{path: envs/*}]\n" + template
	tests := []struct {
		name, appset string
		reads        []string
		not          []string
	}{
		{"a list generator's elements", list,
			[]string{"charts/shop/values-qa.yaml", "charts/shop/values-prod-eu.yaml", "envs/prod/common.yaml"},
			[]string{"charts/shop/values-prod-us.yaml", "envs/staging/common.yaml"}},
		{"another generator's parameters match anything", git,
			[]string{"charts/shop/values-prod-us.yaml", "envs/staging/common.yaml"},
			[]string{"charts/shop/values.yaml", "charts/other/values-qa.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Sources{Index: &repoindex.Index{Charts: map[string]bool{"charts/shop": true}}, Edits: docs{"argocd/appset.yaml": tt.appset}}
			apps, err := a.generatedApps(context.Background(), appSetRef("argocd/appset.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			reads := func(file string) bool {
				return slices.ContainsFunc(apps, func(app map[string]any) bool { return a.ReadsValueFile(app, file) })
			}
			for _, f := range tt.reads {
				if !reads(f) {
					t.Errorf("%s: not read, want read", f)
				}
			}
			for _, f := range tt.not {
				if reads(f) {
					t.Errorf("%s: read, want not", f)
				}
			}
		})
	}
}
