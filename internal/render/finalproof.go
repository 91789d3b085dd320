package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// Steps of Apply that a step hook (withStepHook) is called after.
const (
	stepPlaced  = "placed"  // every edit made in memory, none proved
	stepProved  = "proved"  // the proofs done, nothing written
	stepWritten = "written" // the files written, the last proof not made
)

// stepHook is called after each step of Apply with the applier, the
// files each change's edit touched and the repository: a test breaks one
// step through it (a wrong value, a lost write, a file undone behind a
// change's back, a shared base edited with the change) and checks that
// the results claim nothing the written tree does not hold.
type stepHook func(step string, a *applier, touched [][]string, r *os.Root)

// withStepHook has Apply call h after each of its steps; for tests.
func withStepHook(h stepHook) Option { return func(o *options) { o.stepHook = h } }

// errSharedFile marks a change undone only because a change that failed
// wrote one of its files: Apply makes it again without that change.
var errSharedFile = errors.New("undone with a change that failed and wrote the same file")

// finalProof checks the tree as written against every result that says
// its change landed, whatever the steps before said: each file the change
// wrote must be on disk as its edit left it, and every environment that
// proved it or reads one of its files must build from the written tree to
// its output from the base with the changes' values on their own objects,
// and nothing else (lastBuilds). A change that fails
// is undone on disk, with every change that wrote one of its files, and
// its result says why; it returns the files that stay written.
func (a *applier) finalProof(r *os.Root, pl placement, edited []edit, results []Result, written []string) ([]string, error) {
	failed := map[int]error{}
	for i := range results {
		if !results[i].Changed || results[i].Err != nil {
			continue
		}
		if err := a.onDisk(r, wroteBy(i, pl.touched, results), written); err != nil {
			failed[i] = err
			continue
		}
		if e := edited[i]; e.find != nil && results[i].File == e.ref.File {
			// Edited in place: the values are read back where they went.
			if err := proof.Holds(a.Files[e.ref.File].Data, e.ref.Doc, e.find, results[i].Change.resources(), results[i].Held); err != nil {
				failed[i] = fmt.Errorf("%s: %w", e.ref.File, err)
			}
		}
	}
	a.lastBuilds(pl, results, written, failed)
	// A written file a proof has undone since (the Helm proof's second
	// pass) goes back on disk too.
	var clean []string
	for _, f := range written {
		if fe := a.Files[f]; fe != nil && !fe.Dirty() {
			clean = append(clean, f)
		}
	}
	if len(failed) == 0 && len(clean) == 0 {
		return written, nil
	}
	return a.undoWritten(r, pl.touched, results, failed, clean, written)
}

// lastBuilds builds, once from the base (the files as they were before
// this run's writes) and once from the written tree, every environment
// that proves a standing change or reads a file one wrote, and records
// in failed the changes whose files make a difference beyond the values
// of the changes it proves on their own objects. The changes of a
// kustomization it includes show in its output under its names: their
// files are as written in both builds, their own proof checks them; so
// are those of a change no kustomization proves (a deployer's patch, a
// Helm values file), which its deployer or release proof renders.
func (a *applier) lastBuilds(pl placement, results []Result, written []string, failed map[int]error) {
	lp := lastProof{a: a, pl: pl, results: results, failed: failed, proofOf: map[int]*repoindex.Kustomization{}, readers: map[string][]*repoindex.Kustomization{}}
	for dir, idx := range pl.proofs {
		for _, i := range idx {
			lp.proofOf[i] = a.Index.Graph.ByDir[dir]
		}
	}
	// Files undone since or written by a change that failed are as they
	// were in both builds: they are put back.
	for _, f := range written {
		if fe := a.Files[f]; fe != nil && !fe.Dirty() {
			lp.common = append(lp.common, f)
		}
	}
	for i := range results {
		if results[i].Changed && results[i].Err == nil && failed[i] != nil {
			lp.common = append(lp.common, wroteBy(i, pl.touched, results)...)
		}
	}
	lp.fsys = repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: a.Abs, Limit: a.Limit}
	for _, e := range lp.roots() {
		lp.prove(e)
	}
}

// lastProof is the last proof of the written tree: the environments that
// render what the standing changes wrote, each built from the base and
// from the written tree.
type lastProof struct {
	a       *applier
	pl      placement
	results []Result
	failed  map[int]error
	// proofOf is the kustomization that proves each change; readers the
	// kustomizations that read each written file; common the files as
	// they were in both builds.
	proofOf map[int]*repoindex.Kustomization
	readers map[string][]*repoindex.Kustomization
	common  []string
	fsys    repoindex.ProofFS
}

// standing reports whether change i's edit stands: written, and failed
// neither before nor in this proof.
func (lp *lastProof) standing(i int) bool {
	return lp.results[i].Changed && lp.results[i].Err == nil && lp.failed[i] == nil
}

// roots returns the kustomizations to build, in order: those that prove a
// standing change, and the environments that read a file one wrote.
func (lp *lastProof) roots() []*repoindex.Kustomization {
	var roots []*repoindex.Kustomization
	addRoot := func(k *repoindex.Kustomization) {
		if k != nil && !slices.Contains(roots, k) {
			roots = append(roots, k)
		}
	}
	for i := range lp.results {
		if !lp.standing(i) || lp.proofOf[i] == nil {
			continue
		}
		addRoot(lp.proofOf[i])
		for _, f := range wroteBy(i, lp.pl.touched, lp.results) {
			if _, ok := lp.readers[f]; !ok {
				lp.readers[f] = lp.a.Index.Readers(f)
			}
			for _, e := range lp.readers[f] {
				if lp.a.Index.IsEnv(e) {
					addRoot(e)
				}
			}
		}
	}
	slices.SortFunc(roots, func(x, y *repoindex.Kustomization) int { return strings.Compare(x.Dir, y.Dir) })
	return roots
}

// asWas returns the files, as the base has them, to lay over the tree.
func (lp *lastProof) asWas(files ...[]string) map[string][]byte {
	out := map[string][]byte{}
	for _, names := range files {
		for _, f := range names {
			if fe := lp.a.Files[f]; fe != nil {
				out[filepath.Join(lp.a.Abs, filepath.FromSlash(f))] = fe.Orig
			}
		}
	}
	return out
}

// prove builds e from the base and from the written tree, and fails the
// changes to blame when its output differs by more than their values.
func (lp *lastProof) prove(e *repoindex.Kustomization) {
	// own are the changes e proves; others wrote a file e reads and are
	// proved elsewhere, in no kustomization e includes.
	var own, others []int
	var ownFiles, otherFiles []string
	for i := range lp.results {
		if !lp.standing(i) || lp.proofOf[i] == nil {
			continue
		}
		files := wroteBy(i, lp.pl.touched, lp.results)
		switch k := lp.proofOf[i]; {
		case k == e:
			own, ownFiles = append(own, i), append(ownFiles, files...)
		case e.Includes(k):
		case slices.ContainsFunc(files, func(f string) bool { return slices.Contains(lp.readers[f], e) }):
			others, otherFiles = append(others, i), append(otherFiles, files...)
		}
	}
	if len(own) == 0 && len(others) == 0 {
		return
	}
	// Every change may show its own values on its own objects; those e
	// proves must.
	var exps, siblings []proof.Expectation
	for _, i := range own {
		exps = append(exps, lp.pl.exps[i])
		exps = append(exps, lp.pl.exps[i].Also...)
	}
	for _, i := range append(sharing(ownFiles, lp.pl.touched, lp.results), others...) {
		if !slices.Contains(own, i) && lp.failed[i] == nil && lp.pl.exps[i].Want.Target.Name != "" {
			siblings = append(siblings, lp.pl.exps[i])
			siblings = append(siblings, lp.pl.exps[i].Also...)
		}
	}
	edir := filepath.Join(lp.a.Abs, filepath.FromSlash(e.Dir))
	err := lp.a.repo().CheckExternal(e.Dir)
	var base, now map[string]map[string]any
	if err == nil {
		lp.fsys.Files = lp.asWas(lp.common, ownFiles, otherFiles)
		if base, err = lp.fsys.Build(edir); err != nil {
			err = fmt.Errorf("does not build from the base: %w", err)
		}
	}
	if err == nil {
		lp.fsys.Files = lp.asWas(lp.common)
		if now, err = lp.fsys.Build(edir); err != nil {
			err = fmt.Errorf("does not build from the written tree: %w", err)
		}
	}
	if err == nil {
		err = proof.Compare(base, now, exps, siblings)
	}
	if err == nil {
		return
	}
	blame := own
	if len(others) > 0 {
		blame = others
		if len(own) > 0 && base != nil && now != nil {
			// Both wrote what e reads: with the others' files as they
			// were, e shows the difference of its own changes.
			lp.fsys.Files = lp.asWas(lp.common, otherFiles)
			mid, merr := lp.fsys.Build(edir)
			if merr == nil {
				merr = proof.Compare(base, mid, exps, siblings)
			}
			if merr != nil {
				blame = own
			}
		}
	}
	if len(own) > 0 && slices.Equal(blame, own) {
		err = fmt.Errorf("%s, built from the written tree and from the base: %w", e.File, err)
	} else {
		err = fmt.Errorf("%s also reads %s, and built from the written tree its output is not the base's: %w",
			e.File, strings.Join(slices.Compact(slices.Sorted(slices.Values(otherFiles))), ", "), err)
	}
	for _, i := range blame {
		if lp.failed[i] == nil {
			lp.failed[i] = err
		}
	}
}

// edit is where a change was edited in place: its document and how to
// find its values there.
type edit struct {
	ref  repoindex.DocRef
	find repoindex.Finder
}

// wroteBy returns the files change i wrote.
func wroteBy(i int, touched [][]string, results []Result) []string {
	if touched[i] != nil {
		return touched[i]
	}
	return []string{results[i].File}
}

// onDisk checks that each of files is on disk as the run's edits left it,
// and written when they changed it.
func (a *applier) onDisk(r *os.Root, files, written []string) error {
	for _, f := range files {
		fe := a.Files[f]
		if fe == nil {
			return fmt.Errorf("%s was never opened for the edit", f)
		}
		if !fe.Dirty() {
			return fmt.Errorf("%s holds none of the edit: it was undone", f)
		}
		if !slices.Contains(written, f) {
			return fmt.Errorf("%s was not written", f)
		}
		data, err := r.ReadFile(filepath.FromSlash(f))
		if err != nil {
			return fmt.Errorf("reading %s back: %w", f, err)
		}
		if !bytes.Equal(data, fe.Data) {
			return fmt.Errorf("%s on disk is not what the edit wrote", f)
		}
	}
	return nil
}

// undoWritten puts the files of the failed changes back as they were,
// and with them every change that wrote one of those files, until no
// change left standing shares a file with an undone one.
func (a *applier) undoWritten(r *os.Root, touched [][]string, results []Result, failed map[int]error, clean, written []string) ([]string, error) {
	undone := map[string]bool{}
	for _, f := range clean {
		undone[f] = true
	}
	for grew := true; grew; {
		grew = false
		for i := range failed {
			for _, f := range wroteBy(i, touched, results) {
				if !undone[f] {
					undone[f], grew = true, true
				}
			}
		}
		for _, i := range sharing(slices.Collect(maps.Keys(undone)), touched, results) {
			if failed[i] == nil && results[i].Changed {
				failed[i] = fmt.Errorf("%w: %s", errSharedFile, strings.Join(wroteBy(i, touched, results), ", "))
				grew = true
			}
		}
	}
	var errs []error
	for _, f := range slices.Sorted(maps.Keys(undone)) {
		fe := a.Files[f]
		if fe == nil || !slices.Contains(written, f) {
			continue
		}
		var err error
		if fe.Created {
			err = r.Remove(filepath.FromSlash(f))
		} else {
			err = yamledit.WriteFile(r, fe.Name, fe.Orig, fe.Mode)
		}
		if err != nil && !(fe.Created && errors.Is(err, fs.ErrNotExist)) {
			errs = append(errs, fmt.Errorf("undoing %s: %w", f, err))
		}
		fe.Revert()
	}
	if err := errors.Join(errs...); err != nil {
		// The tree holds some edits it must not: the run must discard it.
		return nil, fmt.Errorf("writing the edited files: %w", err)
	}
	for i, err := range failed {
		results[i].Changed, results[i].Method, results[i].Autoscaler = false, "", nil
		results[i].Err = fmt.Errorf("%s: %w: last proof: %w", results[i].File, ErrProofFailed, err)
	}
	return slices.DeleteFunc(written, func(f string) bool { return undone[f] }), nil
}

// oneSource refuses the changes of different targets placed in the same
// container of the same document: the file holds one value, whichever
// edit came last would win, and both would say they landed. Their edits
// are undone, with every change that wrote one of their files.
func (a *applier) oneSource(changes []Change, refs []repoindex.DocRef, finds []repoindex.Finder, results []Result, touched [][]string) {
	type source struct {
		file      string
		doc       int
		container string
	}
	by := map[source][]int{}
	for i, res := range results {
		// A marker names its container: two markers are two sources.
		if res.Err != nil || res.File == "" || res.File != refs[i].File || finds[i] != nil {
			continue
		}
		k := source{res.File, refs[i].Doc, changes[i].Container}
		by[k] = append(by[k], i)
	}
	failed := map[int]error{}
	for k, idx := range by {
		for _, i := range idx {
			var others []string
			for _, j := range idx {
				if t := changes[j].Target.String(); t != changes[i].Target.String() && !slices.Contains(others, t) {
					others = append(others, t)
				}
			}
			if len(others) > 0 {
				failed[i] = fmt.Errorf("%w: container %q of document %d of %s is also the source of %s; one file cannot hold the values of both (an overlay per deployer can)",
					ErrProofFailed, k.container, k.doc+1, k.file, strings.Join(others, ", "))
			}
		}
	}
	if len(failed) == 0 {
		return
	}
	undone := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for i := range failed {
			for _, f := range wroteBy(i, touched, results) {
				if !undone[f] {
					undone[f], grew = true, true
				}
			}
		}
		for _, i := range sharing(slices.Collect(maps.Keys(undone)), touched, results) {
			if failed[i] == nil && results[i].Changed {
				failed[i] = fmt.Errorf("%w: %w: %s", ErrProofFailed, errSharedFile, strings.Join(wroteBy(i, touched, results), ", "))
				grew = true
			}
		}
	}
	for f := range undone {
		if fe := a.Files[f]; fe != nil {
			fe.Revert()
		}
	}
	for i, err := range failed {
		results[i].Changed, results[i].Method, results[i].Autoscaler = false, "", nil
		results[i].Err = fmt.Errorf("%s: %w", results[i].File, err)
	}
}

// sharedOnly returns the changes undone only for sharing a file with one
// that failed.
func sharedOnly(results []Result) []int {
	var out []int
	for i, r := range results {
		if errors.Is(r.Err, errSharedFile) {
			out = append(out, i)
		}
	}
	return out
}
