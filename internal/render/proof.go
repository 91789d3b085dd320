package render

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// prove builds every kustomization that renders an edited target, before
// and after the edits, and undoes the edits of those whose output is not
// exactly the old output with the new values on the targets. It also
// builds every environment that reads an edited file without including
// that kustomization: its output must not change at all. Edits that share
// a file stand or fall together.
func (a *applier) prove(ctx context.Context, proofs map[string][]int, changes []proof.Expectation, touched [][]string, results []Result) error {
	if len(proofs) == 0 {
		return nil
	}
	abs, after := a.Abs, a.Edited()
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: abs, Limit: a.Limit}
	dirs := slices.Sorted(maps.Keys(proofs))
	// files[dir] are the edited files of the changes dir renders.
	files := map[string][]string{}
	failed := map[string]error{}
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, i := range proofs[dir] {
			for _, f := range touched[i] {
				if a.Files[f] != nil && a.Files[f].Dirty() && !slices.Contains(files[dir], f) {
					files[dir] = append(files[dir], f)
				}
			}
		}
		if len(files[dir]) == 0 {
			continue
		}
		var exps []proof.Expectation
		for _, i := range proofs[dir] {
			exps = append(exps, changes[i])
			exps = append(exps, changes[i].Also...)
		}
		// Changes of other targets written in the same files are proved
		// with these: each is allowed its own values and nothing more.
		var siblings []proof.Expectation
		for _, i := range sharing(files[dir], touched, results) {
			if !slices.Contains(proofs[dir], i) && changes[i].Want.Target.Name != "" {
				siblings = append(siblings, changes[i])
				siblings = append(siblings, changes[i].Also...)
			}
		}
		err := a.repo().CheckExternal(dir)
		if err == nil {
			// The run's other edits are in both builds: only these are compared.
			fsys.Files = proof.Without(after, abs, files[dir])
			err = proof.ProveBuild(fsys, filepath.Join(abs, filepath.FromSlash(dir)), after, exps, siblings)
		}
		if err == nil {
			err = a.repo().ProveOthers(fsys, dir, files[dir], after)
		}
		if err != nil {
			failed[dir] = fmt.Errorf("%w: %s, built with the edits of %s: %w", ErrProofFailed, a.Index.Graph.ByDir[dir].File, strings.Join(files[dir], ", "), err)
		}
	}
	// An edit that fails takes down every edit sharing a file with it.
	for changed := true; changed; {
		changed = false
		for _, dir := range dirs {
			if failed[dir] != nil {
				continue
			}
			for _, other := range dirs {
				if failed[other] != nil && slices.ContainsFunc(files[dir], func(f string) bool { return slices.Contains(files[other], f) }) {
					failed[dir] = fmt.Errorf("%w: %s: undone with the edits for %s, which share a file: %w",
						ErrProofFailed, a.Index.Graph.ByDir[dir].File, a.Index.Graph.ByDir[other].File, failed[other])
					changed = true
					break
				}
			}
		}
	}
	for _, dir := range dirs {
		err := failed[dir]
		if err == nil {
			continue
		}
		for _, f := range files[dir] {
			if fe := a.Files[f]; fe != nil {
				fe.Revert()
			}
		}
		// Whoever else wrote an undone file is undone with it, whatever
		// proof it was in.
		for _, i := range append(slices.Clone(proofs[dir]), sharing(files[dir], touched, results)...) {
			if results[i].Err != nil {
				continue
			}
			results[i].Changed, results[i].Method, results[i].Autoscaler = false, "", nil
			results[i].Err = fmt.Errorf("%s: %w", results[i].File, err)
		}
	}
	return nil
}

// sharing returns the changes, applied without error, whose edits wrote
// one of files.
func sharing(files []string, touched [][]string, results []Result) []int {
	var out []int
	for i := range results {
		if results[i].Err != nil {
			continue
		}
		wrote := touched[i]
		if wrote == nil && results[i].Changed {
			wrote = []string{results[i].File}
		}
		if slices.ContainsFunc(wrote, func(f string) bool { return slices.Contains(files, f) }) {
			out = append(out, i)
		}
	}
	return out
}
