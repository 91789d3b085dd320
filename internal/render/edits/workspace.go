package edits

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// Resources are what one change sets: requests and limits of one
// container of a target.
type Resources struct {
	Target    repoindex.Target
	Container string
	// Path is where the search for the target was restricted to, for
	// the hints of errors.
	Path string
	// Requests and Limits are the values to set; only these are set.
	Requests, Limits corev1.ResourceList
}

// sought is what resolving c's target looks for.
func (c Resources) sought() repoindex.Sought {
	return repoindex.Sought{Target: c.Target, Container: c.Container, Path: c.Path}
}

// Placed is what placing one change did: the file edited for the target
// (the file that defines it, or the patch that sets its values), whether
// its bytes changed, and why it could not be placed.
type Placed struct {
	File    string
	Changed bool
	Err     error
}

// Workspace holds the files being edited during one run.
type Workspace struct {
	// FS is the repository, Index what it renders.
	FS    fs.FS
	Index *repoindex.Index
	// Files are the files opened, by slash-separated name.
	Files map[string]*File
	// Limit is the size above which files are not read; <= 0: no limit.
	Limit int64
	// Abs is the repository root as an absolute path without symlinks.
	Abs string

	// recent are the files whose parsed documents are kept, the most
	// recently used last.
	recent []*File
	// journal, when not nil, records the files an edit touches so that
	// it can be undone (Undo).
	journal journal
	// builds are the environments built without edits, once in this run.
	builds map[string]map[string]map[string]any
}

// NewWorkspace returns a workspace of the repository fsys, whose root is
// abs, indexed by idx.
func NewWorkspace(fsys fs.FS, idx *repoindex.Index, limit int64, abs string) *Workspace {
	return &Workspace{FS: fsys, Index: idx, Files: map[string]*File{}, Limit: limit, Abs: abs, builds: map[string]map[string]map[string]any{}}
}

// FileEdits returns the bytes of a file the run has opened, as edited and
// as they were; ok is false for a file it has not.
func (w *Workspace) FileEdits(name string) (data, orig []byte, ok bool) {
	fe := w.Files[name]
	if fe == nil {
		return nil, nil, false
	}
	return fe.Data, fe.Orig, true
}

// parsedFiles bounds the files whose parsed documents are kept between
// uses: a run edits thousands of files, and their trees, not their bytes,
// would fill its memory. A file used again after it was dropped is parsed
// again.
const parsedFiles = 16

// File returns the edit of an existing file, creating it on first use,
// and counts it among the recent files, whose parsed documents are kept.
func (w *Workspace) File(name string) (*File, error) {
	fe, err := w.open(name)
	if err != nil {
		return nil, err
	}
	w.record(name, fe)
	if i := slices.Index(w.recent, fe); i >= 0 {
		w.recent = slices.Delete(w.recent, i, i+1)
	} else if len(w.recent) == parsedFiles {
		w.recent[0].docs = nil
		w.recent = slices.Delete(w.recent, 0, 1)
	}
	w.recent = append(w.recent, fe)
	return fe, nil
}

// Doc returns document i of file as it reads now, with the run's edits.
func (w *Workspace) Doc(file string, i int) (*yaml.Node, error) {
	fe, err := w.File(file)
	if err != nil {
		return nil, err
	}
	docs, err := fe.CurrentDocs()
	if err != nil {
		return nil, err
	}
	if i >= len(docs) {
		return nil, fmt.Errorf("%s: document %d is gone", file, i+1)
	}
	return docs[i], nil
}

// open returns the edit of an existing file, creating it on first use.
func (w *Workspace) open(name string) (*File, error) {
	if fe, ok := w.Files[name]; ok {
		return fe, nil
	}
	f := w.Index.Files[name]
	if f == nil {
		data, info, err := repoindex.ReadLimited(w.FS, name, w.Limit)
		if err != nil {
			return nil, err
		}
		docs, err := yamledit.ParseDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", repoindex.ErrUnsafeFile, name, err)
		}
		f = &repoindex.IndexedFile{Name: name, Data: data, Mode: info.Mode().Perm(), Unsafe: yamledit.UnsafeFile(data, docs)}
	}
	fe := newFile(f)
	w.Files[name] = fe
	return fe, nil
}

// Edited returns the bytes of every file the run changed, by absolute
// path, as a proof lays them over the repository.
func (w *Workspace) Edited() map[string][]byte {
	out := map[string][]byte{}
	for name, fe := range w.Files {
		if fe.Dirty() {
			out[filepath.Join(w.Abs, filepath.FromSlash(name))] = fe.Data
		}
	}
	return out
}

// BuildEnv builds the kustomization in dir, with the run's edits when
// edited; builds without edits are kept for the run.
func (w *Workspace) BuildEnv(dir string, edited bool) (map[string]map[string]any, error) {
	if out, ok := w.builds[dir]; ok && !edited {
		return out, nil
	}
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: w.Abs, Limit: w.Limit}
	if edited {
		fsys.Files = w.Edited()
	}
	out, err := fsys.Build(filepath.Join(w.Abs, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	if !edited {
		w.builds[dir] = out
	}
	return out, nil
}

// Write writes the files whose bytes changed and returns their names,
// sorted. Writes are not interrupted by a context so that the tree is
// never left with only some of the edits that were reported. New patch
// files go first, so that a kustomization never lists one that failed to
// be written.
func (w *Workspace) Write(r *os.Root) ([]string, error) {
	order := slices.Sorted(maps.Keys(w.Files))
	slices.SortStableFunc(order, func(x, y string) int {
		return cmpBool(w.Files[y].Created, w.Files[x].Created)
	})
	var written []string
	for _, name := range order {
		fe := w.Files[name]
		if !fe.Dirty() {
			continue
		}
		if err := yamledit.WriteFile(r, fe.Name, fe.Data, fe.Mode); err != nil {
			// A full disk or a read-only tree is the run's problem, not a
			// change's: the edits already written must not be committed
			// as if the others had never been asked for.
			return nil, fmt.Errorf("writing the edited files: %w", err)
		}
		written = append(written, fe.Name)
	}
	slices.Sort(written)
	return written, nil
}

// cmpBool orders false before true.
func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// InPlace edits the document that defines the target.
func (w *Workspace) InPlace(c Resources, ref repoindex.DocRef, find repoindex.Finder) (bool, error) {
	fe, err := w.File(ref.File)
	if err != nil {
		return false, err
	}
	if errors.Is(fe.Unsafe, yamledit.ErrTemplate) {
		return false, fmt.Errorf("%s: %w: the chart renders the target from values; %s", ref.File, fe.Unsafe, repoindex.MarkerHint(c.sought()))
	}
	if fe.Unsafe != nil {
		return false, fmt.Errorf("%s: %w", ref.File, fe.Unsafe)
	}
	return fe.Apply(c, ref.Doc, find)
}

// journal holds, while an edit may still be undone, the state of each
// file before it: File records a file the first time it hands it out,
// newPatch a file it creates (nil). Only the files the edit touched are
// kept, however many the run has edited.
type journal map[string]*File

// Begin opens the journal: the edits from here on can be undone (Undo)
// until End.
func (w *Workspace) Begin() { w.journal = journal{} }

// End closes the journal.
func (w *Workspace) End() { w.journal = nil }

// record keeps fe's state in the journal, if one is open and fe is not in
// it yet.
func (w *Workspace) record(name string, fe *File) {
	if w.journal == nil {
		return
	}
	if _, seen := w.journal[name]; seen {
		return
	}
	if fe == nil {
		w.journal[name] = nil
		return
	}
	before := *fe
	w.journal[name] = &before
}

// Undo puts every file the journal recorded back as it was, and drops
// the patches written since, from their kustomizations too. It closes the
// journal.
func (w *Workspace) Undo() {
	var gone []string
	for name, before := range w.journal {
		fe := w.Files[name]
		switch {
		case fe == nil:
		case before == nil:
			delete(w.Files, name)
			w.recent = slices.DeleteFunc(w.recent, func(r *File) bool { return r == fe })
			gone = append(gone, name)
		default:
			*fe = *before
			fe.docs = nil
		}
	}
	w.journal = nil
	if len(gone) == 0 {
		return
	}
	for _, k := range w.Index.Graph.ByDir {
		k.Patches = slices.DeleteFunc(k.Patches, func(f string) bool { return slices.Contains(gone, f) })
	}
}

// sortedNames are the resources of l in the order of their names.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.SortedFunc(maps.Keys(l), cmp.Compare)
}
