package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

var fuzzValues = struct{ cpu, memory, limit string }{"123m", "77Mi", "99Mi"}

// FuzzApply feeds arbitrary bytes to Apply as a manifest. Apply must not
// panic; when it reports the change applied, the file must still parse and,
// decoded to plain values, differ from the original only by the new
// quantities; otherwise the file must be left byte for byte as it was.
func FuzzApply(f *testing.F) {
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !repoindex.IsYAMLName(p) || !strings.Contains(filepath.ToSlash(p), "/original/") {
			return err
		}
		data, err := os.ReadFile(p)
		f.Add(data, false)
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range []string{
		"",
		"        image: x\n",
		"        resources: {}\n",
		"        resources:\n",
		"        resources:\n          requests:\n            cpu: 1 # c\n          limits: {memory: \"1Gi\"}\n",
		"        resources:\n          requests: ~\n\n        # tail\n",
		"        args: |\n          x\n        resources:\n            limits:\n                cpu: 1\n",
		"        env:\n        - {name: A, value: '1'}\n      - name: b\n",
	} {
		f.Add([]byte(body), true)
	}

	// With wrap, data is the rest of container "app" of a Deployment, so
	// that most mutations still reach the editing code.
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = append([]byte(head+"      - name: app\n"), data...)
		}
		target, container, unique := pickTarget(data)
		dir := t.TempDir()
		path := filepath.Join(dir, "m.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c := Change{
			Target:    target,
			Container: container,
			Requests:  quantities(map[string]string{"cpu": fuzzValues.cpu, "memory": fuzzValues.memory}),
			Limits:    quantities(map[string]string{"memory": fuzzValues.limit}),
		}
		out, err := Apply(context.Background(), dir, ".", []Change{c})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := out.Results[0]
		if r.Err != nil || !r.Changed {
			if !bytes.Equal(got, data) {
				t.Fatalf("file changed although Changed=%v, Err=%v:\n%s", r.Changed, r.Err, got)
			}
			return
		}
		if _, err := yamledit.ParseDocuments(got); err != nil {
			t.Fatalf("result does not parse: %v\n%s", err, got)
		}
		if unique {
			checkOnlyResourcesChanged(t, data, got, target, container)
		}
	})
}

// pickTarget names the first container of the first workload in data, read
// without the package's own code; unique reports that no other document has
// the same kind and name, so that the oracle knows which one must change.
func pickTarget(data []byte) (Target, string, bool) {
	fallback := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "fuzz", Name: "x"}
	docs, err := decodeAll(data)
	if err != nil {
		return fallback, "app", false
	}
	for _, d := range docs {
		apiVersion, _ := get(d, "apiVersion").(string)
		kind, _ := get(d, "kind").(string)
		name, _ := get(d, "metadata", "name").(string)
		ns, _ := get(d, "metadata", "namespace").(string)
		list, _ := get(podSpecOf(d), "containers").([]any)
		if apiVersion == "" || kind == "" || name == "" || len(list) == 0 {
			continue
		}
		cname, _ := get(list[0], "name").(string)
		if cname == "" {
			continue
		}
		if ns == "" {
			ns = "fuzz"
		}
		same := 0
		for _, o := range docs {
			if k, _ := get(o, "kind").(string); k == kind && get(o, "metadata", "name") == name {
				same++
			}
		}
		return Target{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}, cname, same == 1
	}
	return fallback, "app", false
}

func checkOnlyResourcesChanged(t *testing.T, before, after []byte, target Target, container string) {
	t.Helper()
	was, err := decodeAll(before)
	if err != nil {
		return // e.g. duplicate keys somewhere: nodes parse, plain values do not
	}
	now, err := decodeAll(after)
	if err != nil {
		t.Fatalf("result does not decode: %v\n%s", err, after)
	}
	if len(now) != len(was) {
		t.Fatalf("%d documents instead of %d:\n%s", len(now), len(was), after)
	}
	for i := range now {
		name, _ := get(now[i], "metadata", "name").(string)
		kind, _ := get(now[i], "kind").(string)
		if kind != target.Kind || name != target.Name {
			continue
		}
		ctr := containerOf(podSpecOf(now[i]), container)
		for _, want := range []struct{ section, res, value string }{
			{"requests", "cpu", fuzzValues.cpu},
			{"requests", "memory", fuzzValues.memory},
			{"limits", "memory", fuzzValues.limit},
		} {
			got := fmt.Sprint(get(ctr, "resources", want.section, want.res))
			q, err := resource.ParseQuantity(got)
			if err != nil || q.Cmp(resource.MustParse(want.value)) != 0 {
				t.Fatalf("%s.%s = %q, want %s:\n%s", want.section, want.res, got, want.value, after)
			}
		}
		stripResources(containerOf(podSpecOf(now[i]), container))
		stripResources(containerOf(podSpecOf(was[i]), container))
	}
	if diff := cmp.Diff(was, now, cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("more than the resources changed (-before +after):\n%s\n%s", diff, after)
	}
}

func decodeAll(data []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		docs = append(docs, v)
	}
}

// get follows keys through decoded mappings.
func get(v any, keys ...string) any {
	for _, k := range keys {
		switch m := v.(type) {
		case map[string]any:
			v = m[k]
		case map[any]any:
			v = m[k]
		default:
			return nil
		}
	}
	return v
}

func podSpecOf(doc any) any {
	if jt := get(doc, "spec", "jobTemplate"); jt != nil {
		return get(jt, "spec", "template", "spec")
	}
	return get(doc, "spec", "template", "spec")
}

func containerOf(pod any, name string) any {
	for _, field := range []string{"containers", "initContainers"} {
		list, _ := get(pod, field).([]any)
		for _, c := range list {
			if get(c, "name") == name {
				return c
			}
		}
	}
	return nil
}

// stripResources removes the quantities the fuzz change sets, and what is
// left empty by that, so that before and after compare equal.
func stripResources(ctr any) {
	res := get(ctr, "resources")
	for _, s := range []struct{ section, res string }{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
		sec := get(res, s.section)
		del(sec, s.res)
		if size(sec) == 0 {
			del(res, s.section)
		}
	}
	if size(res) == 0 {
		del(ctr, "resources")
	}
}

// del deletes key from a decoded mapping of either key type.
func del(m any, key string) {
	switch m := m.(type) {
	case map[string]any:
		delete(m, key)
	case map[any]any:
		delete(m, key)
	}
}

// size returns the number of entries of a decoded mapping, 0 for anything else.
func size(m any) int {
	switch m := m.(type) {
	case map[string]any:
		return len(m)
	case map[any]any:
		return len(m)
	}
	return 0
}
