package repoindex

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestCheckLocal checks the forms of a kustomization that kustomize reads
// as remote entries but that no plain look at its keys finds: another
// case, merge keys, JSON, aliases; and that local trees pass.
func TestCheckLocal(t *testing.T) {
	const url = "https://example.com/x.yaml"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // in the error; "" for none
	}{
		{"local", map[string]string{"kustomization.yaml": "resources: [web.yaml, base]\n", "base/kustomization.yaml": "resources: [a.yaml]\n"}, ""},
		{"a key in another case", map[string]string{"kustomization.yaml": "Resources: [web.yaml, '" + url + "']\n"}, "resources: " + url},
		{"a merge key", map[string]string{"kustomization.yaml": "<<: {patches: [{path: '" + url + "'}]}\nresources: [web.yaml]\n"}, "patches.path: " + url},
		{"an alias", map[string]string{"kustomization.yaml": "openapi: {path: &u '" + url + "'}\ncrds: [*u]\n"}, "openapi.path: " + url},
		{"JSON", map[string]string{"kustomization.yaml": `{"components": ["` + url + `"]}`}, "components: " + url},
		{"a file name in another case", map[string]string{"Kustomization": "resources: ['" + url + "']\n"}, "Kustomization " + ErrRemote.Error()},
		{"a base of a base", map[string]string{
			"kustomization.yaml":   "resources: [a]\n",
			"a/kustomization.yaml": "resources: [../b]\n",
			"b/kustomization.yaml": "crds: ['" + url + "']\n",
		}, "b/kustomization.yaml " + ErrRemote.Error() + ": crds: " + url},
		{"a cycle", map[string]string{"kustomization.yaml": "resources: [a]\n", "a/kustomization.yaml": "resources: [..]\n"}, ""},
		{"a field kustomize does not know", map[string]string{"kustomization.yaml": "resources: [web.yaml]\nfetch: " + url + "\n"}, "cannot be checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := filesys.MakeFsInMemory()
			for name, data := range tc.files {
				if err := fsys.WriteFile("/r/"+name, []byte(data)); err != nil {
					t.Fatal(err)
				}
			}
			err := ProofFS{FileSystem: fsys, Root: "/r"}.CheckLocal("/r")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckLocal = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckLocal = %v, want ErrRemote saying %q", err, tc.want)
			}
		})
	}
}

// TestIsRemote checks the entries kustomize would fetch, and that paths of
// the tree are not taken for them.
func TestIsRemote(t *testing.T) {
	for entry, want := range map[string]bool{
		"https://example.com/x.yaml":              true,
		"HTTP://example.com/x.yaml":               true,
		"git::https://example.com/r":              true,
		"ssh://git@example.com/r":                 true,
		"file:///etc/passwd":                      true,
		"git@example.com:org/repo":                true,
		"deploy@10.0.0.1/org/repo":                true,
		"github.com/org/repo/deploy?ref=v1":       true,
		"GitHub.com/org/repo":                     true,
		"example.com:org/repo":                    true,
		"base":                                    false,
		"../base":                                 false,
		"overlays/prod/deployment.yaml":           false,
		"web.v2.yaml":                             false,
		"config/app.example.com/kustomization":    false,
		"charts/some-chart-1.0.0/templates/x.yml": false,
	} {
		if got := IsRemote(entry); got != want {
			t.Errorf("IsRemote(%q) = %v, want %v", entry, got, want)
		}
	}
}
