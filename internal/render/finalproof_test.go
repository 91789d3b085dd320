package render

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/recommend-job/recommend-job/internal/render/edits"
)

// TestFinalProofFaults breaks each step of Apply in turn, for the first
// change of a case, and checks the outcome against the tree written: the
// broken change is not reported changed and says the proof failed; every
// change reported changed has its file written, with its values in it;
// and the files reported written are exactly those that differ from the
// original.
func TestFinalProofFaults(t *testing.T) {
	// The cpu request each case's first change sets.
	cases := map[string]string{
		"kustomize-overlays": "250m", "helm-flux-marker-sibling": "250m", "helm-argo-valuefiles": "150m",
		"shared-base-replaced": "150m",
	}
	faults := []struct {
		name string
		step string
		// only, when set, is the one case the fault applies to.
		only string
		// breakFile breaks file, written by the first change.
		breakFile func(t *testing.T, fe *edits.File, r *os.Root, cpu string)
		// breakEdit, instead, breaks the first change's edit as a whole.
		breakEdit func(t *testing.T, a *applier, touched [][]string)
		// reason, when set, is what the first change's error must name.
		reason string
	}{
		{
			name: "the edit writes a wrong value, before the proof",
			step: stepPlaced,
			breakFile: func(t *testing.T, fe *edits.File, _ *os.Root, cpu string) {
				fe.SetData(bytes.Replace(fe.Data, []byte("cpu: "+cpu), []byte("cpu: 1"+cpu), 1))
			},
		},
		{
			name: "the edit writes a wrong value, after the proof",
			step: stepProved,
			breakFile: func(t *testing.T, fe *edits.File, _ *os.Root, cpu string) {
				fe.SetData(bytes.Replace(fe.Data, []byte("cpu: "+cpu), []byte("cpu: 1"+cpu), 1))
			},
		},
		{
			name: "a sibling undoes the file behind the change's back",
			step: stepProved,
			breakFile: func(t *testing.T, fe *edits.File, _ *os.Root, _ string) {
				fe.SetData(fe.Orig)
			},
		},
		{
			name: "the write is lost",
			step: stepWritten,
			breakFile: func(t *testing.T, fe *edits.File, r *os.Root, _ string) {
				var err error
				if fe.Created {
					err = r.Remove(filepath.FromSlash(fe.Name))
				} else {
					err = r.WriteFile(filepath.FromSlash(fe.Name), fe.Orig, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// Canary's patch replaces the base's containers: its own
			// build cannot show the base's edit, only prod's can.
			name:   "the edit also writes a shared base that only another environment shows",
			step:   stepProved,
			only:   "shared-base-replaced",
			reason: "last proof: overlays/prod/kustomization.yaml also reads base/deployment.yaml",
			breakEdit: func(t *testing.T, a *applier, touched [][]string) {
				fe, err := a.File("base/deployment.yaml")
				if err != nil {
					t.Fatal(err)
				}
				fe.SetData(bytes.Replace(fe.Orig, []byte("cpu: 500m"), []byte("cpu: 150m"), 1))
				touched[0] = append(touched[0], fe.Name)
			},
		},
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		base := filepath.Join("testdata", name)
		spec := readSpec(t, filepath.Join(base, "changes.yaml"))
		var changes []Change
		for _, g := range spec.Changes {
			changes = append(changes, g.change())
		}
		opts := []Option{WithMode(Mode(spec.Mode))}
		if spec.Mode == "" {
			opts = nil
		}
		apply := func(t *testing.T, more ...Option) (string, map[string][]byte, *Outcome) {
			dir := t.TempDir()
			copyTree(t, filepath.Join(base, "original"), dir)
			before := snapshot(t, dir)
			out, err := Apply(context.Background(), dir, spec.Path, changes, append(slices.Clip(opts), more...)...)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			return dir, before, out
		}
		_, _, clean := apply(t)
		if !clean.Results[0].Changed {
			t.Fatalf("%s: without a fault, change 0 is not changed: %v", name, clean.Results[0].Err)
		}
		file := clean.Results[0].File
		for _, f := range faults {
			if f.only != "" && f.only != name {
				continue
			}
			t.Run(name+"/"+f.name, func(t *testing.T) {
				hook := withStepHook(func(step string, a *applier, touched [][]string, r *os.Root) {
					switch {
					case step != f.step:
					case f.breakEdit != nil:
						f.breakEdit(t, a, touched)
					case a.Files[file] != nil:
						f.breakFile(t, a.Files[file], r, cases[name])
					}
				})
				dir, before, out := apply(t, hook)
				if r := out.Results[0]; r.Changed || !errors.Is(r.Err, ErrProofFailed) {
					t.Errorf("change 0: changed %v, err %v; want not changed, the proof failed", r.Changed, r.Err)
				} else if r.Err != nil && !strings.Contains(r.Err.Error(), f.reason) {
					t.Errorf("change 0: err %v; want it to name %q", r.Err, f.reason)
				}
				after := snapshot(t, dir)
				var differ []string
				for _, n := range slices.Sorted(maps.Keys(after)) {
					if !bytes.Equal(after[n], before[n]) {
						differ = append(differ, n)
					}
				}
				for n := range before {
					if _, ok := after[n]; !ok {
						differ = append(differ, n)
					}
				}
				slices.Sort(differ)
				if diff := cmp.Diff(differ, out.Files, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("files reported written (-differ on disk +reported):\n%s", diff)
				}
				for i, r := range out.Results {
					if !r.Changed {
						continue
					}
					if !slices.Contains(out.Files, r.File) {
						t.Errorf("change %d: reported changed in %s, which is not written", i, r.File)
					}
					for res, q := range changes[i].Requests.All() {
						if !strings.Contains(string(after[r.File]), string(res)+": "+q.String()) {
							t.Errorf("change %d: reported changed, but %s holds no %s %s:\n%s", i, r.File, res, q.String(), after[r.File])
						}
					}
				}
			})
		}
	}
}
