package gitops

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Skip is an entry of the base branch's tree that Checkout did not write
// into the checkout: a file, or a directory with all it holds. The job's
// commits keep it as the base has it.
type Skip struct {
	// Path is slash-separated, relative to the root, as the tree names it.
	Path string
	// Reason says why it was left out.
	Reason string
}

// materialize writes the tree of the commit base into w.dir and records
// in w.skipped what it cannot or must not write: the repository is the
// tenants' text, and one bad name must not stop the checkout of the rest.
// It writes each file itself, rather than through go-git's worktree,
// which stops at the first path it refuses.
func (w *Workspace) materialize(base plumbing.Hash) error {
	commit, err := w.repo.CommitObject(base)
	if err != nil {
		return fmt.Errorf("reading the base commit: %w", err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return fmt.Errorf("reading the base tree: %w", err)
	}
	return w.writeTree(tree, "")
}

// writeTree writes the entries of tree into the directory dir (slash-
// separated, "" for the root), which exists.
func (w *Workspace) writeTree(tree *object.Tree, dir string) error {
	seen := make(map[string]bool, len(tree.Entries))
	for _, e := range tree.Entries {
		name := e.Name
		if dir != "" {
			name = dir + "/" + e.Name
		}
		if why := badName(e.Name); why != "" {
			w.skip(name, e.Mode, why)
			continue
		}
		if seen[e.Name] {
			w.skip(name, e.Mode, "a second entry of the same name")
			continue
		}
		seen[e.Name] = true
		err := w.writeEntry(e, name)
		if why := unholdable(err); why != "" {
			w.skip(name, e.Mode, why)
			continue
		}
		if err != nil {
			return fmt.Errorf("checking out %q: %w", name, err)
		}
	}
	return nil
}

// writeEntry writes one entry whose name is valid. Nothing it creates
// exists before, and every directory on its way was made by writeTree, so
// no write follows a symbolic link of the repository's.
func (w *Workspace) writeEntry(e object.TreeEntry, name string) error {
	full := filepath.Join(w.dir, filepath.FromSlash(name))
	switch e.Mode {
	case filemode.Dir:
		if err := os.Mkdir(full, 0o755); err != nil {
			return err
		}
		sub, err := w.repo.TreeObject(e.Hash)
		if err != nil {
			return err
		}
		return w.writeTree(sub, name)
	case filemode.Submodule:
		// git leaves an empty directory where a submodule goes.
		return os.Mkdir(full, 0o755)
	case filemode.Symlink:
		target, err := w.blobBytes(e.Hash)
		if err != nil {
			return err
		}
		return os.Symlink(string(target), full)
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
		perm := os.FileMode(0o644)
		if e.Mode == filemode.Executable {
			perm = 0o755
		}
		return w.writeFile(e.Hash, full, perm)
	}
	return errMode
}

// errMode is the error of a tree entry of a mode git does not write.
var errMode = errors.New("unknown file mode")

func (w *Workspace) writeFile(hash plumbing.Hash, full string, perm os.FileMode) error {
	blob, err := w.repo.BlobObject(hash)
	if err != nil {
		return err
	}
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (w *Workspace) blobBytes(hash plumbing.Hash) ([]byte, error) {
	blob, err := w.repo.BlobObject(hash)
	if err != nil {
		return nil, err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, maxSymlinkTarget))
}

// maxSymlinkTarget bounds what is read of a symbolic link's target: Linux
// holds no longer one.
const maxSymlinkTarget = 4096

func (w *Workspace) skip(name string, mode filemode.FileMode, why string) {
	if mode == filemode.Dir {
		why = "directory left out with all it holds: " + why
	}
	w.skipped = append(w.skipped, Skip{Path: name, Reason: why})
}

// badName says why the checkout does not write an entry named name, or
// "": what git refuses in a path (see validPath), and what only a
// hand-made tree holds, a name that is empty or has a slash.
func badName(name string) string {
	switch {
	case name == "":
		return "empty name"
	case strings.ContainsAny(name, "/\x00"):
		return "the name holds a slash"
	case name == "." || name == "..":
		return fmt.Sprintf("the name is %q", name)
	case isDotGit(name):
		return "the name is .git"
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return "the name holds a control character"
		}
	}
	return ""
}

// isDotGit reports whether a path component names the .git directory, as
// a case-insensitive file system or Windows would read it.
func isDotGit(part string) bool {
	part = strings.TrimRight(part, ". ")
	return strings.EqualFold(part, ".git") || strings.EqualFold(part, "git~1")
}

// unholdable says why the file system could not hold an entry, when err
// says it cannot (a name or path too long, a second entry of the same
// name on a case-insensitive file system, a mode git does not know), or
// "".
func unholdable(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errMode):
		return "unknown file mode"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "the name or the path is too long for the file system"
	case errors.Is(err, os.ErrExist):
		return "a second entry of the same name"
	case errors.Is(err, syscall.EILSEQ), errors.Is(err, syscall.EINVAL):
		return "the file system refuses the name"
	}
	return ""
}

// skippedAt returns the skipped entry that name is or lies in, if any.
func (w *Workspace) skippedAt(name string) (Skip, bool) {
	for _, s := range w.skipped {
		if name == s.Path || strings.HasPrefix(name, s.Path+"/") {
			return s, true
		}
	}
	return Skip{}, false
}

// Skipped lists the entries of the base branch's tree that the checkout
// left out, in tree order.
func (w *Workspace) Skipped() []Skip { return w.skipped }

// editTree returns the tree root with each path of edits (slash-separated)
// set to its entry, or removed when the entry is nil. Every other entry,
// and every subtree no edit reaches, is kept as it is, byte for byte: the
// job rewrites only what it wrote.
func (w *Workspace) editTree(root plumbing.Hash, edits map[string]*object.TreeEntry) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !root.IsZero() {
		tree, err := w.repo.TreeObject(root)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, tree.Entries...)
	}
	// The edits of each entry of this tree: its own, or those below it.
	own := map[string]*object.TreeEntry{}
	below := map[string]map[string]*object.TreeEntry{}
	var order []string
	for p, e := range edits {
		first, rest, deeper := strings.Cut(p, "/")
		if _, ok := own[first]; !ok && below[first] == nil {
			order = append(order, first)
		}
		if !deeper {
			own[first] = e
			continue
		}
		if below[first] == nil {
			below[first] = map[string]*object.TreeEntry{}
		}
		below[first][rest] = e
	}
	for _, name := range order {
		i := entryIndex(entries, name)
		if sub, ok := below[name]; ok {
			var subRoot plumbing.Hash
			if i >= 0 && entries[i].Mode == filemode.Dir {
				subRoot = entries[i].Hash
			}
			h, err := w.editTree(subRoot, sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			// A directory left empty is no entry: git has no empty trees.
			var e *object.TreeEntry
			if h != emptyTree {
				e = &object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
			}
			entries = setEntry(entries, i, name, e)
			continue
		}
		entries = setEntry(entries, i, name, own[name])
	}
	if len(entries) == 0 {
		return emptyTree, nil
	}
	obj := w.repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.repo.Storer.SetEncodedObject(obj)
}

// emptyTree is the hash of the tree without entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// entryIndex is the index of the first entry named name, or -1.
func entryIndex(entries []object.TreeEntry, name string) int {
	for i, e := range entries {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// setEntry replaces entries[i] with e, removes it when e is nil, or, when
// i < 0, inserts e where git's order puts it, leaving the others in their
// order.
func setEntry(entries []object.TreeEntry, i int, name string, e *object.TreeEntry) []object.TreeEntry {
	switch {
	case i >= 0 && e == nil:
		return append(entries[:i], entries[i+1:]...)
	case i >= 0:
		entries[i] = *e
		return entries
	case e == nil:
		return entries
	}
	at := len(entries)
	for j, x := range entries {
		if treeOrder(x) > treeOrder(*e) {
			at = j
			break
		}
	}
	return append(entries[:at], append([]object.TreeEntry{*e}, entries[at:]...)...)
}

// treeOrder is the key git sorts a tree's entries by: a directory's name
// as if it ended in a slash.
func treeOrder(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
