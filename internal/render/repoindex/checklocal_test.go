package repoindex

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestCheckLocalFields checks every field through which kustomize would
// load a file, and so fetch a URL: each names the field and the entry;
// a generator directory, whose build cannot be checked before it runs,
// and Helm charts, which are never inflated, are refused too.
func TestCheckLocalFields(t *testing.T) {
	const url = "https://example.com/x.yaml"
	tests := []struct {
		name, kustomization, want string
	}{
		{"bases", "bases: ['" + url + "']\n", "resources: " + url},
		{"components", "components: ['" + url + "']\n", "components: " + url},
		{"configurations", "configurations: ['" + url + "']\n", "configurations: " + url},
		{"generator files", "configMapGenerator:\n- name: a\n  files: ['k=" + url + "']\n", "configMapGenerator.files: k=" + url},
		{"generator envs", "secretGenerator:\n- name: a\n  envs: ['" + url + "']\n", "secretGenerator.envs: " + url},
		{"replacements", "replacements:\n- path: '" + url + "'\n", "replacements.path: " + url},
		{"transformers", "transformers: ['" + url + "']\n", "transformers: " + url},
		{"validators", "validators: ['" + url + "']\n", "validators: " + url},
		{"an inline transformer", "transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: x}\n  path: '" + url + "'\n", "PatchTransformer x path: " + url},
		{"patchesJson6902", "patchesJson6902:\n- target: {kind: Deployment, name: x}\n  path: '" + url + "'\n", "patchesJson6902.path: " + url},
		{"patchesStrategicMerge", "patchesStrategicMerge: ['" + url + "']\n", "patchesStrategicMerge: " + url},
		{"a git repository in scp style", "resources: ['git@github.com:org/repo']\n", "resources: git@github.com:org/repo"},
		{"a URL after a tab", "resources: [\"\\t" + url + "\"]\n", url},
		{"a generator directory", "generators: [gen]\n", "gen is a directory"},
		{"Helm charts", "helmCharts:\n- name: x\n  repo: https://charts.example.com\n", "charts are not inflated"},
		{"a local patch file", "patches:\n- path: p.yaml\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := filesys.MakeFsInMemory()
			for name, data := range map[string]string{
				"/r/kustomization.yaml":     tt.kustomization,
				"/r/p.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
				"/r/gen/kustomization.yaml": "resources: [p.yaml]\n",
			} {
				if err := fsys.WriteFile(name, []byte(data)); err != nil {
					t.Fatal(err)
				}
			}
			err := ProofFS{FileSystem: fsys, Root: "/r"}.CheckLocal("/r")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckLocal = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckLocal = %v, want ErrRemote saying %q", err, tt.want)
			}
		})
	}
}
