package gitops

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// BenchmarkCommit commits n changed manifests in a repository of n
// manifests, 20 to a namespace directory, as a run that right-sizes every
// workload of a cluster does. Cloning and writing the files are not timed.
func BenchmarkCommit(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			files := manifestNames(n)
			url := newBareRemote(b, files, func(string) string { return "resources:\n  cpu: 100m\n" })
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ws, err := Checkout(context.Background(), testOptions(url), b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				for _, f := range files {
					if err := os.WriteFile(filepath.Join(ws.Dir(), filepath.FromSlash(f)), []byte("resources:\n  cpu: 250m\n"), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, committed, err := ws.Commit(files, "Right-size"); err != nil || !committed {
					b.Fatalf("Commit() = %v, %v; want a commit", committed, err)
				}
			}
		})
	}
}

// manifestNames returns n manifest paths, 20 to a directory.
func manifestNames(n int) []string {
	files := make([]string, n)
	for i := range files {
		files[i] = fmt.Sprintf("apps/team-%03d/svc-%05d.yaml", i/20, i)
	}
	return files
}

// newBareRemote makes a bare repository whose main branch is one commit
// holding files with content(name), writing the objects directly (staging
// thousands of files through a worktree would time the setup, not the
// job), and returns its file:// URL.
func newBareRemote(tb testing.TB, files []string, content func(string) string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "remote.git")
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	// Entries of each directory, keyed by its slash-separated path ("" for
	// the root); each directory's tree is written after its children.
	entries := map[string][]object.TreeEntry{}
	var dirs []string
	var addDir func(d string)
	addDir = func(d string) {
		if _, ok := entries[d]; ok {
			return
		}
		entries[d] = nil
		dirs = append(dirs, d)
		if d != "" {
			parent := path.Dir(d)
			if parent == "." {
				parent = ""
			}
			addDir(parent)
		}
	}
	for _, f := range files {
		d := path.Dir(f)
		if d == "." {
			d = ""
		}
		addDir(d)
		h, err := writeBlob(repo.Storer, []byte(content(f)))
		if err != nil {
			tb.Fatal(err)
		}
		entries[d] = append(entries[d], object.TreeEntry{Name: path.Base(f), Mode: filemode.Regular, Hash: h})
	}
	// Deepest first, so that a directory's subtrees are written before it.
	depth := func(d string) int {
		if d == "" {
			return -1
		}
		return strings.Count(d, "/")
	}
	sort.SliceStable(dirs, func(i, j int) bool { return depth(dirs[i]) > depth(dirs[j]) })
	var root plumbing.Hash
	for _, d := range dirs {
		h, err := writeTree(repo.Storer, entries[d])
		if err != nil {
			tb.Fatal(err)
		}
		if d == "" {
			root = h
			continue
		}
		parent := path.Dir(d)
		if parent == "." {
			parent = ""
		}
		entries[parent] = append(entries[parent], object.TreeEntry{Name: path.Base(d), Mode: filemode.Dir, Hash: h})
	}
	sig := object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "initial", TreeHash: root}
	obj := repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		tb.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		tb.Fatal(err)
	}
	main := plumbing.NewBranchReferenceName("main")
	if err := repo.Storer.SetReference(plumbing.NewHashReference(main, h)); err != nil {
		tb.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, main)); err != nil {
		tb.Fatal(err)
	}
	return "file://" + dir
}

func writeBlob(s storage.Storer, data []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

func writeTree(s storage.Storer, entries []object.TreeEntry) (plumbing.Hash, error) {
	sortTreeEntries(entries)
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// sortTreeEntries sorts entries in git's order, a directory named as if
// it ended in a slash.
func sortTreeEntries(entries []object.TreeEntry) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
}
