package render

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// FuzzIndex feeds arbitrary YAML to the index as a kustomization, a
// manifest it renders and a values file with markers, and runs Apply in
// patch mode and in place with Argo CD and Flux metadata on the target.
// Apply must not panic nor fail as a whole; a change reported unchanged
// or failed must leave every file as it was, and every file written must
// parse.
func FuzzIndex(f *testing.F) {
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(filepath.ToSlash(p), "/original/") {
			return err
		}
		data, err := os.ReadFile(p)
		if repoindex.IsKustomizationName(p) {
			f.Add(data, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"))
		} else {
			f.Add([]byte("resources: [m.yaml]\nnamePrefix: p-\n"), data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("resources: [m.yaml, ../x, ., m.yaml]\npatches: [{path: m.yaml}]\n"), []byte("kind: Kustomization\n"))
	f.Add([]byte("resources:\n- sub\ncomponents: [sub]\nnamespace: 1\n"), []byte("a: # {\"$recommend\": \"ns/p-web:app\"}\n  b: 1\n"))

	f.Fuzz(func(t *testing.T, kust, manifest []byte) {
		dir := t.TempDir()
		files := map[string]string{
			"k/kustomization.yaml": string(kust),
			"k/m.yaml":             string(manifest),
			"values.yaml":          string(manifest),
		}
		writeFiles(t, dir, files)
		target := Target{
			APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "p-web",
			Annotations: map[string]string{ArgoTrackingID: "app:apps/Deployment:ns/p-web"},
			Labels:      map[string]string{FluxNameLabel: "web", FluxNamespaceLabel: "flux-system"},
		}
		changes := []Change{
			{Target: target, Container: "app", Requests: quantities(map[string]string{"cpu": "10m"})},
			{Target: target, Container: "app", Requests: quantities(map[string]string{"memory": "1Mi"}), Mode: ModeInPlace},
			{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}, Container: "app", Requests: quantities(map[string]string{"cpu": "1"}), Path: "k"},
		}
		out, err := Apply(context.Background(), dir, ".", changes, WithMode(ModePatch))
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if len(out.Results) != len(changes) {
			t.Fatalf("%d results for %d changes", len(out.Results), len(changes))
		}
		changed := false
		for _, r := range out.Results {
			changed = changed || r.Changed
		}
		if !changed && len(out.Files) > 0 {
			t.Fatalf("nothing changed, yet %v written", out.Files)
		}
		for name, data := range files {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			if !changed && string(got) != data {
				t.Fatalf("%s changed although no change was applied", name)
			}
		}
		for _, name := range out.Files {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := yamledit.ParseDocuments(got); err != nil {
				t.Fatalf("%s does not parse after the edit: %v\n%s", name, err, got)
			}
		}
	})
}
