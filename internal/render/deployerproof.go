package render

import (
	"context"
	"fmt"
	"slices"

	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// deployerProof is a change written into its deployer's document (a patch
// of its own, or the variable its postBuild fills), which is proved by
// building as that deployer builds.
type deployerProof struct {
	d     *repoindex.Deployer
	index int // the change's, in Apply's results
	exp   proof.Expectation
	files []string
}

// proveDeployers builds, before and after the edits, every deployer whose
// document a change was written into, and every other deployer of those
// files, as the deployer builds: the kustomization of its path (or the
// one kustomize-controller generates for a directory without one) with
// its own overrides, its namespace and its postBuild substitution. The
// targets must render with the new values and nothing else may change;
// otherwise the edits of that file are undone.
func (a *applier) proveDeployers(ctx context.Context, results []Result) error {
	if len(a.deployerProofs) == 0 {
		return nil
	}
	after := a.Edited()
	byFile := map[string][]deployerProof{}
	for _, p := range a.deployerProofs {
		if len(p.files) > 0 {
			byFile[p.files[0]] = append(byFile[p.files[0]], p)
		}
	}
	for _, file := range slices.Sorted(mapKeys(byFile)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		proofs := byFile[file]
		fe := a.Files[file]
		if fe == nil || !fe.Dirty() {
			continue
		}
		err := a.proveDeployerFile(file, proofs, after)
		if err == nil {
			continue
		}
		fe.Revert()
		for _, p := range proofs {
			r := &results[p.index]
			r.Changed, r.Method = false, ""
			r.Err = fmt.Errorf("%s: %w: %w", r.File, ErrProofFailed, err)
		}
	}
	return nil
}

// proveDeployerFile proves the edits of one file: a deployer's document
// (each deployer written in it is built before and after), or a source
// that only the proofs' deployers render, edited in place.
func (a *applier) proveDeployerFile(file string, proofs []deployerProof, after map[string][]byte) error {
	fe := a.Files[file]
	was, err := yamledit.ParseDocuments(fe.Orig)
	if err != nil {
		return err
	}
	now, err := yamledit.ParseDocuments(fe.Data)
	if err != nil {
		return err
	}
	before := proof.Without(after, a.Abs, []string{file})
	var deployers []*repoindex.Deployer
	for _, d := range a.Index.Deployers {
		if d.File == file && !d.Chart || slices.ContainsFunc(proofs, func(p deployerProof) bool { return proof.SameDeployer(p.d, d) }) {
			deployers = append(deployers, d)
		}
	}
	for _, d := range deployers {
		if err := a.repo().CheckExternal(d.Path); err != nil {
			return fmt.Errorf("%s cannot be built: %w", d, err)
		}
		var exps []proof.Expectation
		for _, p := range proofs {
			if proof.SameDeployer(p.d, d) {
				exps = append(exps, p.exp)
			}
		}
		db, da := d, d
		if d.File == file {
			db, da = proof.Redecode(was, d), proof.Redecode(now, d)
		}
		if db == nil || da == nil {
			return fmt.Errorf("%s no longer reads as a deployer", d)
		}
		old, err := a.repo().BuildAs(before, db)
		if err != nil {
			return fmt.Errorf("%s does not build before the edit: %w", d, err)
		}
		built, err := a.repo().BuildAs(after, da)
		if err != nil {
			return fmt.Errorf("%s does not build after the edit: %w", d, err)
		}
		if err := proof.Compare(old, built, exps, nil); err != nil {
			return fmt.Errorf("built as %s: %w", d, err)
		}
	}
	return nil
}

// mapKeys yields the keys of m.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
