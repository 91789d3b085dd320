package proof

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// ProveOthers builds every environment that reads one of the files edited
// for the kustomization in dir without including it, with and without
// those edits (the run's other edits in both), and fails unless its
// output is the same.
func (repo Repo) ProveOthers(fsys repoindex.ProofFS, dir string, edited []string, after map[string][]byte) error {
	k := repo.Index.Graph.ByDir[dir]
	var envs []*repoindex.Kustomization
	for _, f := range edited {
		for _, e := range repo.Index.Readers(f) {
			if e != k && !e.Includes(k) && repo.Index.IsEnv(e) && !slices.Contains(envs, e) {
				envs = append(envs, e)
			}
		}
	}
	slices.SortFunc(envs, func(x, y *repoindex.Kustomization) int { return strings.Compare(x.Dir, y.Dir) })
	before := Without(after, repo.Abs, edited)
	for _, e := range envs {
		if err := repo.CheckExternal(e.Dir); err != nil {
			return fmt.Errorf("%s also reads %s and cannot be checked: %w", e.File, strings.Join(edited, ", "), err)
		}
		edir := filepath.Join(repo.Abs, filepath.FromSlash(e.Dir))
		fsys.Files = before
		was, err := fsys.Build(edir)
		if err != nil {
			return fmt.Errorf("%s also reads %s and does not build: %w", e.File, strings.Join(edited, ", "), err)
		}
		fsys.Files = after
		now, err := fsys.Build(edir)
		if err != nil {
			return fmt.Errorf("%s also reads %s and does not build after the edit: %w", e.File, strings.Join(edited, ", "), err)
		}
		if !reflect.DeepEqual(was, now) {
			return fmt.Errorf("the edit would change the output of %s, another environment", e.File)
		}
	}
	return nil
}

// Without returns the edited files but names.
func Without(edited map[string][]byte, abs string, names []string) map[string][]byte {
	out := maps.Clone(edited)
	for _, f := range names {
		delete(out, filepath.Join(abs, filepath.FromSlash(f)))
	}
	return out
}

// CheckExternal refuses to build a kustomization tree that fetches remote
// resources or reads outside the repository: a proof must not reach the
// network nor the rest of the machine. It also refuses, before kustomize
// would, a tree that lists a file above the size limit.
func (repo Repo) CheckExternal(dir string) error {
	seen := map[string]bool{}
	var walk func(d string) error
	walk = func(d string) error {
		k := repo.Index.Graph.ByDir[d]
		if k == nil || seen[d] {
			return nil
		}
		seen[d] = true
		if len(k.External) > 0 {
			return fmt.Errorf("%s uses resources that are remote or outside the repository (%s); not built", k.File, strings.Join(k.External, ", "))
		}
		if k.TooLarge != nil {
			return k.TooLarge
		}
		for _, f := range append(slices.Clone(k.Resources), k.Patches...) {
			if s, ok := repo.Index.Large[f]; ok {
				return fmt.Errorf("%s includes %s; not built: %w", k.File, f, s.Err)
			}
		}
		for _, r := range k.Resources {
			if err := walk(r); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(dir)
}

// ProveBuild builds the kustomization in kdir from fsys as it is and with
// the edited files laid over it instead, and compares the outputs. Every
// change must show in the output; siblings, the changes of other targets
// written in the same files, may, and then with their own values only.
func ProveBuild(fsys repoindex.ProofFS, kdir string, edited map[string][]byte, changes, siblings []Expectation) error {
	before, err := fsys.Build(kdir)
	if err != nil {
		return fmt.Errorf("does not build before the edit: %w", err)
	}
	fsys.Files = edited
	after, err := fsys.Build(kdir)
	if err != nil {
		return fmt.Errorf("does not build after the edit: %w", err)
	}
	return Compare(before, after, changes, siblings)
}

// Compare fails unless after is before with the changes' values on
// their objects, and nothing else different.
func Compare(before, after map[string]map[string]any, changes, siblings []Expectation) error {
	matched := make([]bool, len(changes))
	for _, id := range slices.Sorted(maps.Keys(before)) {
		got, ok := after[id]
		if !ok {
			return fmt.Errorf("%s is no longer rendered", id)
		}
		want := before[id]
		var mine bool
		for i, c := range append(slices.Clone(changes), siblings...) {
			if !c.Renders(id) {
				continue
			}
			if !mine {
				want = tree.DeepCopy(want).(map[string]any)
				mine = true
			}
			if i < len(changes) {
				matched[i] = true
			}
			if err := c.Expect(want, got); err != nil {
				return fmt.Errorf("%s: %s: %w", id, c, err)
			}
		}
		if !reflect.DeepEqual(want, got) {
			if mine {
				var allowed []string
				for _, c := range append(slices.Clone(changes), siblings...) {
					if c.Renders(id) {
						allowed = append(allowed, c.String())
					}
				}
				return fmt.Errorf("%s changes beyond the container's resources (the changes it may show: %s)", id, strings.Join(allowed, "; "))
			}
			return fmt.Errorf("%s changes too", id)
		}
	}
	for id := range after {
		if _, ok := before[id]; !ok {
			return fmt.Errorf("%s is rendered only after the edit", id)
		}
	}
	for i, ok := range matched {
		if !ok {
			return fmt.Errorf("%s is not in the output", changes[i])
		}
	}
	return nil
}
