package render

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// checkBuilds builds, with kustomize, every kustomization of the case's
// original tree (components aside) from original and from got. Those that
// builds names may differ only in the resources of the containers it lists
// ("Kind/namespace/name:container", "Kind/name:container" for an object
// without a namespace) or in the fields at the paths it lists
// ("Kind/namespace/name@spec.values.resources"), and those must differ;
// every other one must render byte-identical output.
func checkBuilds(t *testing.T, original, got string, builds map[string][]string) {
	t.Helper()
	dirs := kustomizationDirs(t, original)
	for d := range builds {
		if !slices.Contains(dirs, d) {
			t.Errorf("builds names %s, which holds no kustomization", d)
		}
	}
	for _, d := range dirs {
		before, err := buildYAML(filepath.Join(original, filepath.FromSlash(d)))
		if err != nil {
			t.Errorf("%s does not build before: %v", d, err)
			continue
		}
		after, err := buildYAML(filepath.Join(got, filepath.FromSlash(d)))
		if err != nil {
			t.Errorf("%s does not build after: %v", d, err)
			continue
		}
		allowed, ok := builds[d]
		if !ok {
			if !bytes.Equal(before, after) {
				t.Errorf("%s: output changed, want it byte-identical:\n%s", d, firstDiff(before, after))
			}
			continue
		}
		b, a := objectsOf(t, before), objectsOf(t, after)
		for _, e := range allowed {
			var rb, ra any
			var id, ctr string
			if obj, at, ok := strings.Cut(e, "@"); ok {
				id, ctr = obj, at
				rb, ra = takeAt(b[id], at), takeAt(a[id], at)
			} else {
				id, ctr, _ = strings.Cut(e, ":")
				rb, ra = takeResources(b[id], ctr), takeResources(a[id], ctr)
			}
			if rb == nil && ra == nil {
				t.Errorf("%s: %s has no container %s, or it has no resources after the edit", d, id, ctr)
				continue
			}
			if reflect.DeepEqual(rb, ra) {
				t.Errorf("%s: resources of %s container %s did not change", d, id, ctr)
			}
		}
		if !reflect.DeepEqual(b, a) {
			for id := range a {
				if !reflect.DeepEqual(b[id], a[id]) {
					t.Errorf("%s: %s changes beyond the listed containers' resources", d, id)
				}
			}
			for id := range b {
				if _, ok := a[id]; !ok {
					t.Errorf("%s: %s is no longer rendered", d, id)
				}
			}
		}
	}
}

// kustomizationDirs lists the directories of root holding a kustomization
// that is not a component, slash-separated and relative to root.
func kustomizationDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !repoindex.IsKustomizationName(d.Name()) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct {
			Kind string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil || k.Kind == "Component" {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		dirs = append(dirs, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	return dirs
}

// buildYAML runs kustomize with its defaults on dir, from disk.
func buildYAML(dir string) ([]byte, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// objectsOf splits a build's output into objects by Kind/namespace/name.
func objectsOf(t *testing.T, out []byte) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("build output: %v", err)
		}
		kind, _ := o["kind"].(string)
		meta, _ := o["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		objs[path.Join(kind, ns, name)] = o
	}
	return objs
}

// takeResources removes, and returns, the resources of the named container
// (or native sidecar) of obj's pod template.
func takeResources(obj map[string]any, container string) any {
	for _, p := range objectPodSpecPaths(obj) {
		spec, ok := tree.Dig(obj, p...).(map[string]any)
		if !ok {
			continue
		}
		for _, field := range []string{"containers", "initContainers"} {
			if c := tree.Item(spec[field], container); c != nil {
				r := c["resources"]
				delete(c, "resources")
				return r
			}
		}
	}
	return nil
}

// takeAt removes, and returns, the field of obj at a dotted path.
func takeAt(obj map[string]any, at string) any {
	keys := strings.Split(at, ".")
	parent, ok := tree.Dig(obj, keys[:len(keys)-1]...).(map[string]any)
	if !ok {
		return nil
	}
	v := parent[keys[len(keys)-1]]
	delete(parent, keys[len(keys)-1])
	return v
}

// commentedEntry is a commented-out list entry, as kustomizations carry
// them for users to uncomment.
var commentedEntry = regexp.MustCompile(`(?m)^(\s*)#\s?(-\s.*)$`)

// checkUncommented uncomments the commented-out list entries of the
// kustomization file k in a copy of the result tree got, builds it, and
// checks that every change's target it renders still has the change's
// values: the edit kept each list whole.
func checkUncommented(t *testing.T, got, k string, changes []Change) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, got, dir)
	name := filepath.Join(dir, filepath.FromSlash(k))
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	open := commentedEntry.ReplaceAll(data, []byte("$1$2"))
	if bytes.Equal(open, data) {
		t.Fatalf("%s has no commented-out entries", k)
	}
	if err := os.WriteFile(name, open, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Dir(name))
	if err != nil {
		t.Errorf("%s does not build with its entries uncommented: %v", k, err)
		return
	}
	rendered := 0
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			if r.GetKind() != c.Target.Kind || r.GetName() != c.Target.Name || (r.GetNamespace() != "" && r.GetNamespace() != c.Target.Namespace) {
				continue
			}
			rendered++
			if err := expect(tree.DeepCopy(obj).(map[string]any), obj, c); err != nil {
				t.Errorf("%s with its entries uncommented: %s/%s: %v", k, c.Target.Namespace, c.Target.Name, err)
			}
		}
	}
	if rendered == 0 {
		t.Errorf("%s with its entries uncommented renders none of the targets", k)
	}
}
