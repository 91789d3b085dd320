package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// Session renders several sets of changes, a run's groups, each on its own
// from the same tree: the repository is indexed once, for all of them,
// and the charts a release needs are loaded or fetched once. Each Apply
// starts from the tree as Prepare found it (the base): its edits, proofs
// and last proof see the base and its own changes only, and the next
// Apply, or Restore, puts back the files it wrote. A Session is for one
// goroutine.
type Session struct {
	root           *os.Root
	rootPath, path string
	dir, abs       string
	o              options
	opts           []Option
	idx            *repoindex.Index
	unsupported    []string
	keys           *helm.Finder
	local          map[string]*helm.Chart
	fetched        map[chartfetch.ChartRef]helmsource.FetchedChart
	declared       map[string]bool
	patches        map[*repoindex.Kustomization][]string
	written        map[string]baseFile
	broken         error
	prepareOK      bool
}

// baseFile is a file an Apply opened, as the base has it: its bytes and
// mode, or gone when the Apply created it.
type baseFile struct {
	data []byte
	mode fs.FileMode
	gone bool
}

// Prepare indexes root/path for every change of changes, as Apply would
// for all of them at once, and returns the session whose Apply renders any
// part of them. The options are Apply's. The tree must stay as it is
// between the Applies but for what they write.
func Prepare(ctx context.Context, root, path string, changes []Change, opts ...Option) (*Session, error) {
	s := &Session{rootPath: root, path: path, opts: opts, o: options{mode: ModeAuto, maxFileSize: repoindex.DefaultMaxFileSize}}
	for _, opt := range opts {
		opt(&s.o)
	}
	// The mode came parsed (WithMode); one made up in code may be none.
	if err := s.o.mode.check(); err != nil {
		return nil, err
	}
	var err error
	if s.dir, err = localDir(path); err != nil {
		return nil, err
	}
	if s.root, err = os.OpenRoot(root); err != nil {
		return nil, fmt.Errorf("open repository root: %w", err)
	}
	defer func() {
		if !s.prepareOK {
			s.Close()
		}
	}()
	// os.Root refuses symlinks that lead out of root, here and below.
	if _, err := s.root.Stat(filepath.FromSlash(s.dir)); err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}
	changes, w := wantsOf(changes, s.o.paths, s.dir, make([]Result, len(changes)))
	if s.abs, err = filepath.Abs(root); err == nil {
		s.abs, err = filepath.EvalSymlinks(s.abs)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve repository root: %w", err)
	}
	if s.unsupported, err = s.o.addDeployers(ctx, s.root.FS(), s.abs, &w, changes); err != nil {
		return nil, err
	}
	if s.idx, err = repoindex.BuildIndex(ctx, s.root.FS(), s.dir, w, s.o.maxFileSize); err != nil {
		return nil, err
	}
	s.keys = s.o.keys
	if s.keys == nil {
		s.keys = helm.NewFinder(s.o.engine)
	}
	s.local, s.fetched = map[string]*helm.Chart{}, map[chartfetch.ChartRef]helmsource.FetchedChart{}
	// What an Apply adds to the index (the environments its targets
	// declare, the patches it lists) is its own: the next starts again
	// from these.
	s.declared = maps.Clone(s.idx.Declared)
	s.patches = map[*repoindex.Kustomization][]string{}
	for _, k := range s.idx.Graph.ByDir {
		s.patches[k] = slices.Clone(k.Patches)
	}
	s.written = map[string]baseFile{}
	s.prepareOK = true
	return s, nil
}

// Apply is Apply (the function) of changes, a part of those Prepare was
// given, on the tree as Prepare found it: the files the last Apply wrote
// are put back first. A change Prepare was not given may not be found.
// After an error the tree must be discarded, and the session with it.
func (s *Session) Apply(ctx context.Context, changes []Change) (*Outcome, error) {
	if s.broken != nil {
		return nil, fmt.Errorf("the tree is not the base any more: %w", s.broken)
	}
	if err := s.Restore(); err != nil {
		return nil, err
	}
	s.idx.Declared = maps.Clone(s.declared)
	for k, p := range s.patches {
		k.Patches = slices.Clone(p)
	}
	out, err := s.apply(ctx, changes)
	if err != nil {
		s.broken = err
	}
	return out, err
}

// Restore puts back, as the base has them, the files the last Apply
// wrote: the tree is the base again.
func (s *Session) Restore() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.written)) {
		f := s.written[name]
		var err error
		if f.gone {
			if err = s.root.Remove(filepath.FromSlash(name)); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else {
			// In place: the tree is a checkout the caller discards if
			// this is cut short, and a rename per file would double the
			// cost of putting a group back.
			err = s.root.WriteFile(filepath.FromSlash(name), f.data, f.mode)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("putting back %s: %w", name, err))
		}
	}
	s.written = map[string]baseFile{}
	if err := errors.Join(errs...); err != nil {
		s.broken = err
		return err
	}
	return nil
}

// Close releases the tree; its files stay as the last Apply left them.
func (s *Session) Close() error {
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

// keep records, for Restore, the files a's edits may have written, as
// they were when a opened them; the first record of a file stands.
func (s *Session) keep(a *applier) {
	for name, fe := range a.Files {
		if _, ok := s.written[name]; ok || !fe.Created && !fe.Dirty() {
			continue
		}
		s.written[name] = baseFile{data: fe.Orig, mode: fe.Mode, gone: fe.Created}
	}
}
