package appset

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/recommend-job/recommend-job/internal/tree"
)

// TestExpandAsWritten checks what Expand gives a caller that asks which
// Applications may exist: the Applications of the generators it
// evaluates, and the templates of those it cannot, as written, their
// parameters left for the caller to read as any text.
func TestExpandAsWritten(t *testing.T) {
	const set = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: shop, namespace: argocd}
spec:
  generators:
  - list:
      elements:
      - {env: qa, tier: {name: small}}
  - pullRequest: {github: {owner: o, repo: r}}
  - git:
      repoURL: https://git.example.com/org/other.git
      directories: [{path: 'envs/*'}]
  - git:
      repoURL: https://git.example.com/org/fleet.git
      directories: [{path: 'envs/*'}]
      template:
        spec: {source: {path: 'charts/{{path.basename}}'}}
  - list:
      elements: [{env: 'x'}]
      values: {size: '{{env}}-big'}
      template:
        spec: {source: {helm: {valueFiles: ['{{values.size}}.yaml']}}}
  template:
    metadata: {name: 'shop-{{env}}'}
    spec:
      source:
        path: 'charts/shop'
        helm: {valueFiles: ['values-{{env}}.yaml', '{{tier.name}}.yaml']}
`
	tests := []struct {
		name string
		// nilFS expands without the repository.
		nilFS     bool
		apps      []string
		asWritten []string
	}{
		{name: "the repository read", apps: []string{
			"shop-qa charts/shop [values-qa.yaml small.yaml]",
			"shop-x charts/shop [x-big.yaml]",
			"shop-{{env}} charts/prod [values-{{env}}.yaml {{tier.name}}.yaml]",
		}, asWritten: []string{
			"shop-{{env}} charts/shop [values-{{env}}.yaml {{tier.name}}.yaml]",
			"shop-{{env}} charts/shop [values-{{env}}.yaml {{tier.name}}.yaml]",
		}},
		{name: "no repository to read", nilFS: true, apps: []string{
			"shop-qa charts/shop [values-qa.yaml small.yaml]",
			"shop-x charts/shop [x-big.yaml]",
		}, asWritten: []string{
			"shop-{{env}} charts/shop [values-{{env}}.yaml {{tier.name}}.yaml]",
			"shop-{{env}} charts/shop [values-{{env}}.yaml {{tier.name}}.yaml]",
			"shop-{{env}} charts/{{path.basename}} [values-{{env}}.yaml {{tier.name}}.yaml]",
		}},
	}
	show := func(app map[string]any) string {
		name, _ := tree.Dig(app, "metadata", "name").(string)
		p, _ := tree.Dig(app, "spec", "source", "path").(string)
		vf, _ := tree.Dig(app, "spec", "source", "helm", "valueFiles").([]any)
		var files []string
		for _, f := range vf {
			files = append(files, f.(string))
		}
		return name + " " + p + " [" + strings.Join(files, " ") + "]"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fsys fs.FS = repoFS("envs/prod/values.yaml")
			if tt.nilFS {
				fsys = nil
			}
			x, err := Expand(context.Background(), fsys, Options{RepoURL: "git@git.example.com:org/fleet.git"}, []byte(set), "argocd/shop.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var apps, asWritten []string
			for _, a := range x.Apps {
				apps = append(apps, show(a.Object))
			}
			for _, a := range x.AsWritten {
				asWritten = append(asWritten, show(a))
			}
			for _, l := range [][]string{apps, asWritten, tt.apps, tt.asWritten} {
				slices.Sort(l)
			}
			if !slices.Equal(apps, tt.apps) {
				t.Errorf("Apps = %q, want %q", apps, tt.apps)
			}
			if !slices.Equal(asWritten, tt.asWritten) {
				t.Errorf("AsWritten = %q, want %q", asWritten, tt.asWritten)
			}
			if len(x.Unsupported) != 1 || !strings.Contains(x.Unsupported[0], "the pullRequest generator needs more than the repository") {
				t.Errorf("Unsupported = %q, want the pull request generator named", x.Unsupported)
			}
		})
	}
}

// TestExpandBudget checks that Expand refuses what Generate refuses, with
// the same budgets and an error naming the file, and that calls given one
// RunLeft share the run's budget.
func TestExpandBudget(t *testing.T) {
	const head = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: bomb, namespace: argocd}\nspec:\n"
	tests := []struct{ name, set, want string }{
		{"printf width", head + `  goTemplate: true
  generators: [{list: {elements: [{v: x}]}}]
  template:
    metadata: {name: '{{ .v }}{{ printf "%0999999999d" 0 }}'}
`, "above the evaluation budget"},
		{"aliases", head + "  generators:\n  - list:\n      elements:\n      - {v: &a " + strings.Repeat("y", 100<<10) + "}\n" +
			strings.Repeat("      - {v: *a}\n", 1000) + "  template: {metadata: {name: '{{v}}'}}\n",
			"its aliases expand to more than 16777216 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := Expand(context.Background(), repoFS(), Options{}, []byte(tt.set), "argocd/bomb.yaml")
			if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "argocd/bomb.yaml") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Expand() error = %v, want %v naming argocd/bomb.yaml: %s", err, ErrBudget, tt.want)
			}
			if len(x.Apps)+len(x.AsWritten) != 0 {
				t.Errorf("Expand() = %d Applications and %d templates, want none", len(x.Apps), len(x.AsWritten))
			}
		})
	}

	t.Run("the run's budget, shared", func(t *testing.T) {
		set := head + "  generators: [{list: {elements: [{v: " + strings.Repeat("z", 40<<10) + "}]}}]\n  template: {metadata: {name: '{{v}}'}}\n"
		var left int64
		opts := Options{RunBudget: 100 << 10, RunLeft: &left}
		if _, err := Expand(context.Background(), repoFS(), opts, []byte(set), "a.yaml"); err != nil {
			t.Fatalf("first Expand() error = %v, want none", err)
		}
		_, err := Expand(context.Background(), repoFS(), opts, []byte(set), "b.yaml")
		if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "b.yaml") || !strings.Contains(err.Error(), "the repository's ApplicationSets produce more than 102400 bytes") {
			t.Errorf("second Expand() error = %v, want the run's budget spent, naming b.yaml", err)
		}
	})
}

// repoFS is a repository of the files named, each holding "x: 1".
func repoFS(files ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, f := range files {
		fsys[f] = &fstest.MapFile{Data: []byte("x: 1\n")}
	}
	return fsys
}
