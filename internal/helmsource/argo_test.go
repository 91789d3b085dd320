package helmsource

import (
	"slices"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/repoindex"
)

// TestApplicationSetReads checks which values files an ApplicationSet's
// Applications read: a list generator's elements fill the template in,
// any other generator leaves parameters that match any text.
func TestApplicationSetReads(t *testing.T) {
	const template = `
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
	list := "spec:\n  generators:\n    - list:\n        elements:\n          - {env: qa, type: test}\n          - {env: prod-eu, type: prod}\n" + template
	git := "spec:\n  generators:\n    - git:\n        repoURL: https://git.example.com/fleet.git\n        directories: [{path: envs/*}]\n" + template
	a := &Sources{Index: &repoindex.Index{Charts: map[string]bool{"charts/shop": true}}}
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
			var obj map[string]any
			if err := sigsyaml.Unmarshal([]byte(tt.appset), &obj); err != nil {
				t.Fatal(err)
			}
			apps := GeneratedApps(obj)
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
