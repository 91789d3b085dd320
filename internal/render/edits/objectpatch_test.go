package edits

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// TestNewObjectPatch covers a new patch of the target's object with a
// body of the caller's, ObjectPatch finding it afterwards, and the
// refusal to write the same new patch twice.
func TestNewObjectPatch(t *testing.T) {
	r := newTestRepo(t, repoFiles(nil))
	c := webChange("app", "250m")
	ref := r.resolve(t, c)
	if file, fe, _, err := r.w.ObjectPatch(ref); err != nil || fe != nil || file != "" {
		t.Fatalf("ObjectPatch before = %q, %v, %v; want none", file, fe, err)
	}
	var steps []int
	body := func(step int) []string {
		steps = append(steps, step)
		return []string{"spec:", strings.Repeat(" ", step) + "replicas: 3"}
	}
	const newPatch = "env/recommend-job-deployment-web.yaml"
	file, changed, touched, err := r.w.NewObjectPatch(ref, body)
	if err != nil {
		t.Fatal(err)
	}
	if file != newPatch || !changed || !slices.Equal(touched, []string{newPatch, "env/kustomization.yaml"}) {
		t.Errorf("NewObjectPatch = %s, %v, %v", file, changed, touched)
	}
	// The base indents by 2: so does the patch.
	if !slices.Equal(steps, []int{2}) {
		t.Errorf("body asked at steps %v, want [2]", steps)
	}
	out, err := r.w.BuildEnv("env", true)
	if err != nil {
		t.Fatal(err)
	}
	web := out["apps/Deployment/shop/web"]
	if got := tree.Dig(web, "spec", "replicas"); got != 3 {
		t.Errorf("env renders replicas %v, want 3", got)
	}
	if got := tree.Dig(tree.Item(tree.Dig(web, "spec", "template", "spec", "containers"), "app"), "resources", "requests", "cpu"); got != "300m" {
		t.Errorf("env renders cpu %v, want the base's 300m", got)
	}
	if before, err := r.w.BuildEnv("env", false); err != nil || tree.Dig(before["apps/Deployment/shop/web"], "spec", "replicas") != nil {
		t.Errorf("the build without edits has replicas: %v", err)
	}
	pf, fe, doc, err := r.w.ObjectPatch(ref)
	if err != nil || pf != newPatch || fe == nil || doc != 0 {
		t.Errorf("ObjectPatch after = %q, %v, %d, %v; want %s", pf, fe, doc, err, newPatch)
	}
	if _, _, _, err := r.w.NewObjectPatch(ref, body); !errors.Is(err, repoindex.ErrUnsafeFile) {
		t.Errorf("a second new patch: error %v, want %v", err, repoindex.ErrUnsafeFile)
	}
}

// TestNewPatchRefusals covers the kustomizations a new patch cannot be
// listed in, and a patch file of that name already there.
func TestNewPatchRefusals(t *testing.T) {
	tests := []struct {
		name string
		kust string
		file string // an extra file, "" for none
	}{
		{name: "patches is not a list", kust: "namespace: shop\nresources:\n- ../base\npatches: p.yaml\n"},
		{name: "a patch of that name exists unlisted", kust: "namespace: shop\nresources:\n- ../base\n", file: "env/recommend-job-deployment-web.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]string{"env/kustomization.yaml": tt.kust}
			if tt.file != "" {
				extra[tt.file] = "# someone else's\n"
			}
			r := newTestRepo(t, repoFiles(extra))
			c := webChange("app", "250m")
			_, changed, _, err := r.w.Patch(c, r.resolve(t, c))
			if !errors.Is(err, repoindex.ErrUnsafeFile) || changed {
				t.Errorf("Patch = changed %v, error %v; want %v", changed, err, repoindex.ErrUnsafeFile)
			}
			if data, orig, _ := r.w.FileEdits("env/kustomization.yaml"); string(data) != string(orig) {
				t.Errorf("a refused patch edited the kustomization:\n%s", data)
			}
		})
	}
}
