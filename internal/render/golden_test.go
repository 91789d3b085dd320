package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// goldenSpec is a case's changes.yaml: the changes to apply and what each
// Result must say.
type goldenSpec struct {
	Path    string         `yaml:"path"`
	Mode    string         `yaml:"mode"` // the run's mode, WithMode
	Changes []goldenChange `yaml:"changes"`
	Written []string       `yaml:"written"`
	// Deleted lists the files of original/ the case removes, slash-separated;
	// see goldenProblems.
	Deleted []string `yaml:"deleted"`
	// Builds, when set, names every kustomization whose output may change
	// and what may change in it; see checkBuilds.
	Builds map[string][]string `yaml:"builds"`
	// Uncomment lists kustomizations whose commented-out list entries
	// ("# - x") must still work once uncommented; see checkUncommented.
	Uncomment []string `yaml:"uncomment"`
}

type goldenChange struct {
	Target struct {
		APIVersion  string            `yaml:"apiVersion"`
		Kind        string            `yaml:"kind"`
		Namespace   string            `yaml:"namespace"`
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"target"`
	Mode      string `yaml:"mode"`
	Path      string `yaml:"path"`
	Container string `yaml:"container"`
	// LiveImage, when set, is the image the container runs in the
	// cluster: the target's live pod template, which chooses among
	// candidate sources.
	LiveImage string            `yaml:"liveImage"`
	Requests  map[string]string `yaml:"requests"`
	Limits    map[string]string `yaml:"limits"`

	File    string `yaml:"file"`
	Changed bool   `yaml:"changed"`
	// Method is how the file must have been edited; a changed file is
	// spliced unless it says otherwise, and a new patch is new-file.
	Method string `yaml:"method"`
	Err    string `yaml:"err"` // name of the sentinel the error must wrap
	// ErrHas are texts the error must contain.
	ErrHas []string `yaml:"errHas"`
	// Helm is what Result.Helm must say of a target a chart renders.
	Helm *goldenHelm `yaml:"helm"`
	// Autoscaler is the change's HPA, and where its targets must land.
	Autoscaler *goldenAutoscaler `yaml:"autoscaler"`
	// Held are the resources Result.Held must name, and HeldHas a text
	// its HeldReason must contain.
	Held    []string `yaml:"held"`
	HeldHas string   `yaml:"heldHas"`
}

// goldenAutoscaler is a change's Autoscaler, and what Result.Autoscaler
// must say.
type goldenAutoscaler struct {
	Target struct {
		APIVersion string `yaml:"apiVersion"`
		Namespace  string `yaml:"namespace"`
		Name       string `yaml:"name"`
	} `yaml:"target"`
	Utilization []struct {
		Index     int    `yaml:"index"`
		Resource  string `yaml:"resource"`
		Container string `yaml:"container"`
		Percent   int32  `yaml:"percent"`
	} `yaml:"utilization"`

	File    string `yaml:"file"`
	Changed bool   `yaml:"changed"`
}

// goldenHelm is the part of Result.Helm a case checks: where the values
// went and through which keys.
type goldenHelm struct {
	Layer string            `yaml:"layer"`
	Keys  map[string]string `yaml:"keys"`
}

var sentinels = map[string]error{
	"ErrTargetNotFound":    ErrTargetNotFound,
	"ErrAmbiguousTarget":   ErrAmbiguousTarget,
	"ErrContainerNotFound": ErrContainerNotFound,
	"ErrUnsafeFile":        ErrUnsafeFile,
	"ErrInvalidChange":     ErrInvalidChange,
	"ErrNoOverlay":         ErrNoOverlay,
	"ErrProofFailed":       ErrProofFailed,
	"ErrSharedSource":      ErrSharedSource,
	"ErrHelm":              ErrHelm,
	"ErrNoKey":             helm.ErrNoKey,
	"ErrSharedKey":         helm.ErrSharedKey,
}

func (g goldenChange) change() Change {
	c := Change{
		Target: Target{
			APIVersion: g.Target.APIVersion, Kind: g.Target.Kind, Namespace: g.Target.Namespace, Name: g.Target.Name,
			Labels: g.Target.Labels, Annotations: g.Target.Annotations,
		},
		Container: g.Container,
		Requests:  quantities(g.Requests),
		Limits:    quantities(g.Limits),
		Mode:      Mode(g.Mode),
		Path:      g.Path,
	}
	if g.LiveImage != "" {
		group, _, _ := strings.Cut(g.Target.APIVersion, "/")
		c.Target.PodPrint, _ = kinds.PodPrintOf(group, g.Target.Kind, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": g.Container, "image": g.LiveImage}}}}}})
	}
	if g.Autoscaler != nil {
		t := g.Autoscaler.Target
		c.Autoscaler = &Autoscaler{Target: Target{APIVersion: t.APIVersion, Kind: "HorizontalPodAutoscaler", Namespace: t.Namespace, Name: t.Name}}
		for _, u := range g.Autoscaler.Utilization {
			c.Autoscaler.Utilization = append(c.Autoscaler.Utilization, plan.Utilization{Index: u.Index, Resource: corev1.ResourceName(u.Resource), Container: u.Container, Percent: u.Percent})
		}
	}
	return c
}

// TestGolden applies each testdata/<case>/changes.yaml to a copy of
// original/ and compares the whole tree, byte for byte, with original/
// overlaid with expected/, which holds only the files the case changes or
// adds, minus the files changes.yaml lists under deleted (see
// testdata/README.md). The expected files are hand-written specifications.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		// testdata/fuzz holds the fuzz corpus.
		if !c.IsDir() || c.Name() == "fuzz" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			base := filepath.Join("testdata", c.Name())
			spec := readSpec(t, filepath.Join(base, "changes.yaml"))
			var changes []Change
			for _, g := range spec.Changes {
				changes = append(changes, g.change())
			}

			dir := t.TempDir()
			copyTree(t, filepath.Join(base, "original"), dir)
			before := snapshot(t, dir)
			opts := []Option{WithMode(Mode(spec.Mode))}
			if spec.Mode == "" {
				opts = nil
			}
			out, err := Apply(context.Background(), dir, spec.Path, changes, opts...)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if len(out.Results) != len(changes) {
				t.Fatalf("got %d results for %d changes", len(out.Results), len(changes))
			}
			for i, g := range spec.Changes {
				checkResult(t, filepath.Join(base, "original"), i, g, out.Results[i])
			}
			if diff := cmp.Diff(spec.Written, out.Files, cmpNilEmpty); diff != "" {
				t.Errorf("Outcome.Files (-want +got):\n%s", diff)
			}
			for _, p := range goldenProblems(readTree(t, filepath.Join(base, "original")), readExpected(t, base), spec.Deleted, readTree(t, dir)) {
				t.Error(p)
			}
			checkUntouched(t, dir, before, out.Files)
			if spec.Builds != nil {
				checkBuilds(t, filepath.Join(base, "original"), dir, spec.Builds)
			}
			for _, k := range spec.Uncomment {
				checkUncommented(t, dir, k, changes)
			}

			// Applying the same changes to the result must change nothing.
			again, err := Apply(context.Background(), dir, spec.Path, changes, opts...)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if len(again.Files) > 0 {
				t.Errorf("second Apply wrote %v", again.Files)
			}
			for i, r := range again.Results {
				if r.Changed {
					t.Errorf("second Apply: change %d reported Changed", i)
				}
			}
		})
	}
}

var cmpNilEmpty = cmp.Transformer("nilEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})

func readSpec(t *testing.T, path string) goldenSpec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec goldenSpec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return spec
}

// checkResult compares a Result with the case's; original is the case's
// original tree, where a file that is not is written whole.
func checkResult(t *testing.T, original string, i int, want goldenChange, got Result) {
	t.Helper()
	if got.File != want.File {
		t.Errorf("change %d: File = %q, want %q", i, got.File, want.File)
	}
	if got.Changed != want.Changed {
		t.Errorf("change %d: Changed = %v, want %v (err %v)", i, got.Changed, want.Changed, got.Err)
	}
	wantMethod := Method(want.Method)
	if _, err := os.Stat(filepath.Join(original, filepath.FromSlash(want.File))); wantMethod == "" && errors.Is(err, fs.ErrNotExist) {
		wantMethod = MethodNewFile
	}
	switch {
	case !want.Changed:
		wantMethod = ""
	case wantMethod == "":
		wantMethod = MethodSplice
	}
	if got.Method != wantMethod {
		t.Errorf("change %d: Method = %q, want %q", i, got.Method, wantMethod)
	}
	switch {
	case want.Err == "" && got.Err != nil:
		t.Errorf("change %d: unexpected error: %v", i, got.Err)
	case want.Err != "":
		sentinel, ok := sentinels[want.Err]
		if !ok {
			t.Fatalf("change %d: unknown sentinel %q", i, want.Err)
		}
		if !errors.Is(got.Err, sentinel) {
			t.Errorf("change %d: error %v, want one wrapping %v", i, got.Err, sentinel)
		}
		if got.Err != nil && got.File != "" && !strings.Contains(got.Err.Error(), got.File) {
			t.Errorf("change %d: error %q does not name %s", i, got.Err, got.File)
		}
	}
	switch {
	case want.Helm == nil && got.Helm != nil:
		t.Errorf("change %d: Helm = %+v, want none", i, got.Helm)
	case want.Helm != nil && got.Helm == nil:
		t.Errorf("change %d: no Helm, want %+v", i, want.Helm)
	case want.Helm != nil:
		if got.Helm.Layer != want.Helm.Layer {
			t.Errorf("change %d: Helm.Layer = %q, want %q", i, got.Helm.Layer, want.Helm.Layer)
		}
		if diff := cmp.Diff(want.Helm.Keys, got.Helm.Keys, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("change %d: Helm.Keys (-want +got):\n%s", i, diff)
		}
	}
	switch a := want.Autoscaler; {
	case a == nil || a.File == "":
		if got.Autoscaler != nil {
			t.Errorf("change %d: Autoscaler = %+v, want none", i, got.Autoscaler)
		}
	case got.Autoscaler == nil:
		t.Errorf("change %d: no Autoscaler result, want %s", i, a.File)
	case got.Autoscaler.File != a.File || got.Autoscaler.Changed != a.Changed:
		t.Errorf("change %d: Autoscaler = %+v, want file %s changed %v", i, *got.Autoscaler, a.File, a.Changed)
	}
	var held []string
	for _, r := range got.Held {
		held = append(held, string(r))
	}
	if diff := cmp.Diff(want.Held, held, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("change %d: Held (-want +got):\n%s", i, diff)
	}
	if !strings.Contains(got.HeldReason, want.HeldHas) || (len(want.Held) == 0) != (got.HeldReason == "") {
		t.Errorf("change %d: HeldReason = %q, want one saying %q", i, got.HeldReason, want.HeldHas)
	}
	for _, text := range want.ErrHas {
		if got.Err == nil || !strings.Contains(got.Err.Error(), text) {
			t.Errorf("change %d: error %v does not say %q", i, got.Err, text)
		}
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot sets every file's modification time to one in the past and
// returns the contents, so that checkUntouched can tell a rewrite.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	files := map[string][]byte{}
	for rel, data := range readTree(t, dir) {
		if err := os.Chtimes(filepath.Join(dir, rel), past, past); err != nil {
			t.Fatal(err)
		}
		files[rel] = data
	}
	return files
}

// checkUntouched checks that files outside written were not rewritten and
// that every written file did change.
func checkUntouched(t *testing.T, dir string, before map[string][]byte, written []string) {
	t.Helper()
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for rel, data := range before {
		fi, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if slices.Contains(written, filepath.ToSlash(rel)) {
			now, _ := os.ReadFile(filepath.Join(dir, rel))
			if bytes.Equal(now, data) {
				t.Errorf("%s reported written but unchanged", rel)
			}
			continue
		}
		if !fi.ModTime().Equal(past) {
			t.Errorf("%s was rewritten but is not in Outcome.Files", rel)
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readExpected reads the case's expected/, which a case that changes no
// file does not have.
func readExpected(t *testing.T, base string) map[string][]byte {
	t.Helper()
	dir := filepath.Join(base, "expected")
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}
	}
	return readTree(t, dir)
}

// goldenProblems compares the tree got, which Apply left, with a case's
// expectation: each file of expected as it is there, each file named in
// deleted gone, every other file of original byte-identical, and no file
// beyond those. It also reports a layout that hides what a case changes:
// an expected file identical to its original, or a deletion of a file
// original lacks or expected holds. Each problem names its file; the list
// is sorted.
func goldenProblems(original, expected map[string][]byte, deleted []string, got map[string][]byte) []string {
	var problems []string
	want := maps.Clone(original)
	for name, data := range expected {
		if o, ok := original[name]; ok && bytes.Equal(o, data) {
			problems = append(problems, name+": expected/ holds a copy identical to original/; keep only the files the case changes")
		}
		want[name] = data
	}
	for _, name := range deleted {
		_, inExpected := expected[name]
		_, inOriginal := original[name]
		switch {
		case inExpected:
			problems = append(problems, name+": listed as deleted and held in expected/")
		case !inOriginal:
			problems = append(problems, name+": listed as deleted but not in original/")
		default:
			delete(want, name)
		}
	}
	for name, w := range want {
		g, ok := got[name]
		_, changed := expected[name]
		switch {
		case !ok && changed:
			problems = append(problems, name+": missing from the result")
		case !ok:
			problems = append(problems, name+": removed, want it untouched as in original/")
		case changed:
			if msg := firstDiff(w, g); msg != "" {
				problems = append(problems, name+": "+msg)
			}
		default:
			if msg := firstDiff(w, g); msg != "" {
				problems = append(problems, name+": changed, want it untouched as in original/, "+msg)
			}
		}
	}
	for name := range got {
		if _, ok := want[name]; ok {
			continue
		}
		if slices.Contains(deleted, name) {
			problems = append(problems, name+": listed as deleted but still in the result")
		} else {
			problems = append(problems, name+": not expected in the result")
		}
	}
	slices.Sort(problems)
	return problems
}

// firstDiff describes the first line where got differs from want, line
// breaks included, or returns "".
func firstDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := bytes.SplitAfter(want, []byte("\n")), bytes.SplitAfter(got, []byte("\n"))
	for i := range max(len(wl), len(gl)) {
		w, g := "<end of file>", "<end of file>"
		if i < len(wl) {
			w = strconv.Quote(string(wl[i]))
		}
		if i < len(gl) {
			g = strconv.Quote(string(gl[i]))
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d:\n  want %s\n  got  %s", i+1, w, g)
		}
	}
	return "differs"
}

// TestGoldenProblems checks that the golden comparison fails as it should:
// on a file outside expected/ that was touched, on one that appeared, on
// an expected change missing, and on a layout that would hide a change.
func TestGoldenProblems(t *testing.T) {
	original := map[string][]byte{
		"base/deployment.yaml":    []byte("replicas: 1\n"),
		"base/kustomization.yaml": []byte("resources: [deployment.yaml]\n"),
		"old.yaml":                []byte("old\n"),
	}
	expected := map[string][]byte{
		"base/deployment.yaml": []byte("replicas: 2\n"),
		"prod/patch.yaml":      []byte("patch\n"),
	}
	deleted := []string{"old.yaml"}
	result := func(edit func(map[string][]byte)) map[string][]byte {
		got := map[string][]byte{
			"base/deployment.yaml":    []byte("replicas: 2\n"),
			"base/kustomization.yaml": []byte("resources: [deployment.yaml]\n"),
			"prod/patch.yaml":         []byte("patch\n"),
		}
		edit(got)
		return got
	}
	tests := []struct {
		name     string
		expected map[string][]byte
		deleted  []string
		got      map[string][]byte
		want     []string // a text each problem must contain, in order
	}{{
		name: "as expected",
		got:  result(func(map[string][]byte) {}),
	}, {
		name: "file outside expected modified",
		got: result(func(got map[string][]byte) {
			got["base/kustomization.yaml"] = []byte("resources: [deployment.yaml]\r\n")
		}),
		want: []string{`base/kustomization.yaml: changed, want it untouched as in original/, first difference at line 1`},
	}, {
		name: "file outside expected removed",
		got:  result(func(got map[string][]byte) { delete(got, "base/kustomization.yaml") }),
		want: []string{"base/kustomization.yaml: removed, want it untouched"},
	}, {
		name: "file neither lists appears",
		got:  result(func(got map[string][]byte) { got["prod/kustomization.yaml"] = []byte("x\n") }),
		want: []string{"prod/kustomization.yaml: not expected in the result"},
	}, {
		name: "expected change differs",
		got:  result(func(got map[string][]byte) { got["base/deployment.yaml"] = []byte("replicas: 3\n") }),
		want: []string{`base/deployment.yaml: first difference at line 1:`},
	}, {
		name: "expected new file missing",
		got:  result(func(got map[string][]byte) { delete(got, "prod/patch.yaml") }),
		want: []string{"prod/patch.yaml: missing from the result"},
	}, {
		name: "deleted file still there",
		got:  result(func(got map[string][]byte) { got["old.yaml"] = []byte("old\n") }),
		want: []string{"old.yaml: listed as deleted but still in the result"},
	}, {
		name:     "expected file identical to its original",
		expected: map[string][]byte{"base/kustomization.yaml": []byte("resources: [deployment.yaml]\n")},
		got:      result(func(map[string][]byte) {}),
		want:     []string{"base/kustomization.yaml: expected/ holds a copy identical to original/"},
	}, {
		name:    "deletion of a file original lacks",
		deleted: []string{"old.yaml", "gone.yaml"},
		got:     result(func(map[string][]byte) {}),
		want:    []string{"gone.yaml: listed as deleted but not in original/"},
	}, {
		name:    "deletion of a file expected holds",
		deleted: []string{"old.yaml", "prod/patch.yaml"},
		got:     result(func(map[string][]byte) {}),
		want:    []string{"prod/patch.yaml: listed as deleted and held in expected/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := maps.Clone(expected)
			maps.Copy(exp, tt.expected)
			del := deleted
			if tt.deleted != nil {
				del = tt.deleted
			}
			got := goldenProblems(original, exp, del, tt.got)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d saying %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want one saying %q", i, got[i], w)
				}
			}
		})
	}
}
