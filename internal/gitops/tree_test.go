package gitops

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// hostileRemote makes a bare repository whose main branch holds, beside
// apps/web.yaml, entries that git, go-git's worktree or the file system
// refuse, written as objects since no worktree would add them. It returns
// its file:// URL and the skips a checkout must report.
func hostileRemote(t *testing.T) (string, []Skip) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	s := repo.Storer
	blob := func(content string) plumbing.Hash {
		t.Helper()
		h, err := writeBlob(s, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// tree writes entries in git's order, those of the same name in the
	// order given.
	tree := func(entries ...object.TreeEntry) plumbing.Hash {
		t.Helper()
		slices.SortStableFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(treeOrder(a), treeOrder(b)) })
		obj := s.NewEncodedObject()
		if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := s.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	file := func(name, content string) object.TreeEntry {
		return object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob(content)}
	}
	long := strings.Repeat("l", 300) + ".yaml"
	apps := tree(
		file("web.yaml", "cpu: 1\n"),
		file("evil\n.yaml", "cpu: 9\n"),
		file("..", "x\n"),
		file(long, "x\n"),
		object.TreeEntry{Name: "run.sh", Mode: filemode.Executable, Hash: blob("#!/bin/sh\n")},
		object.TreeEntry{Name: "link.yaml", Mode: filemode.Symlink, Hash: blob("web.yaml")},
		// Windows' device names, which go-git's worktree refuses on
		// every platform, are files like any other here.
		file("aux.yaml", "aux: 1\n"),
	)
	root := tree(
		object.TreeEntry{Name: "apps", Mode: filemode.Dir, Hash: apps},
		object.TreeEntry{Name: ".git", Mode: filemode.Dir, Hash: tree(file("config", "[core]\n"))},
		object.TreeEntry{Name: "bad\tdir", Mode: filemode.Dir, Hash: tree(file("a.yaml", "a: 1\n"))},
		object.TreeEntry{Name: ".GIT.", Mode: filemode.Regular, Hash: blob("x\n")},
		file("a/b.yaml", "slash\n"),
		file("README.md", "hi\n"),
		file("README.md", "a second README\n"),
	)
	sig := object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "initial", TreeHash: root}
	obj := s.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	setMain(t, s, h)
	return "file://" + dir, []Skip{
		{".GIT.", "the name is .git"},
		{".git", "directory left out with all it holds: the name is .git"},
		{"README.md", "a second entry of the same name"},
		{"a/b.yaml", "the name holds a slash"},
		{"apps/..", `the name is ".."`},
		{"apps/evil\n.yaml", "the name holds a control character"},
		{"apps/" + long, "the name or the path is too long for the file system"},
		{"bad\tdir", "directory left out with all it holds: the name holds a control character"},
	}
}

func setMain(t *testing.T, s storage.Storer, h plumbing.Hash) {
	t.Helper()
	main := plumbing.NewBranchReferenceName("main")
	if err := s.SetReference(plumbing.NewHashReference(main, h)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, main)); err != nil {
		t.Fatal(err)
	}
}

// TestCheckoutSkipsWhatItCannotHold checks that a checkout leaves out,
// and lists, each entry of the base it cannot or must not write, writes
// the rest, and that a commit changes only the file it is given: every
// entry left out is in the pushed tree as the base has it.
func TestCheckoutSkipsWhatItCannotHold(t *testing.T) {
	ctx := context.Background()
	url, wantSkips := hostileRemote(t)
	opts := testOptions(url)
	ws, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("Checkout() error = %v", err)
	}
	got := ws.Skipped()
	slices.SortFunc(got, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(got, wantSkips) {
		t.Errorf("Skipped() =\n%q\nwant\n%q", got, wantSkips)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(ws.Dir(), filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("apps/web.yaml"); got != "cpu: 1\n" {
		t.Errorf("apps/web.yaml = %q", got)
	}
	if got := read("apps/aux.yaml"); got != "aux: 1\n" {
		t.Errorf("apps/aux.yaml = %q", got)
	}
	if got := read("README.md"); got != "hi\n" {
		t.Errorf("README.md = %q, want the first entry's", got)
	}
	if info, err := os.Stat(filepath.Join(ws.Dir(), "apps", "run.sh")); err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("apps/run.sh = %v, %v; want an executable", info, err)
	}
	if target, err := os.Readlink(filepath.Join(ws.Dir(), "apps", "link.yaml")); err != nil || target != "web.yaml" {
		t.Errorf("apps/link.yaml links to %q, %v; want web.yaml", target, err)
	}
	entries, err := os.ReadDir(ws.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".git", "README.md", "apps"}; !slices.Equal(names, want) {
		t.Errorf("checkout root = %q, want %q (.git being the clone's own)", names, want)
	}
	if b := read(".git/config"); b == "[core]\n" {
		t.Error(".git/config is the repository's file, not the clone's")
	}

	// A path left out is never committed, written or deleted.
	for _, name := range []string{"apps/" + strings.Repeat("l", 300) + ".yaml", ".GIT./x"} {
		if _, _, err := ws.Commit([]string{name}, "bad"); err == nil {
			t.Errorf("Commit(%q) error = nil, want the path refused", name)
		}
	}
	if err := os.WriteFile(filepath.Join(ws.Dir(), "apps", "web.yaml"), []byte("cpu: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, committed, err := ws.Commit([]string{"apps/web.yaml"}, "Right-size web"); err != nil || !committed {
		t.Fatalf("Commit() = %v, %v; want a commit", committed, err)
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	remote, err := git.PlainOpen(strings.TrimPrefix(url, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	treeOf := func(branch string) *object.Tree {
		t.Helper()
		ref, err := remote.Reference(plumbing.NewBranchReferenceName(branch), true)
		if err != nil {
			t.Fatal(err)
		}
		c, err := remote.CommitObject(ref.Hash())
		if err != nil {
			t.Fatal(err)
		}
		tree, err := c.Tree()
		if err != nil {
			t.Fatal(err)
		}
		return tree
	}
	base, pushed := treeOf("main"), treeOf(opts.PushBranch)
	// Only apps changed in the root, and only web.yaml in apps: every
	// other entry, hostile or not, is the base's, in the base's order.
	sameBut(t, "", base.Entries, pushed.Entries, "apps")
	baseApps, err := base.Tree("apps")
	if err != nil {
		t.Fatal(err)
	}
	var pushedApps *object.Tree
	for _, e := range pushed.Entries {
		if e.Name == "apps" {
			pushedApps, _ = remote.TreeObject(e.Hash)
		}
	}
	if pushedApps == nil {
		t.Fatal("no apps in the pushed tree")
	}
	sameBut(t, "apps/", baseApps.Entries, pushedApps.Entries, "web.yaml")
	f, err := pushedApps.File("web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Contents(); got != "cpu: 2\n" {
		t.Errorf("pushed apps/web.yaml = %q, want the change", got)
	}
}

// sameBut checks that two trees' entries are the same, in the same order,
// but for the one named changed.
func sameBut(t *testing.T, dir string, base, pushed []object.TreeEntry, changed string) {
	t.Helper()
	if len(base) != len(pushed) {
		t.Fatalf("%s: %d entries pushed, want the base's %d", dir, len(pushed), len(base))
	}
	for i := range base {
		b, p := base[i], pushed[i]
		if b.Name != p.Name || b.Mode != p.Mode || (b.Name != changed && b.Hash != p.Hash) {
			t.Errorf("%s: entry %d pushed = %q %v %s, base %q %v %s", dir, i, p.Name, p.Mode, p.Hash, b.Name, b.Mode, b.Hash)
		}
		if b.Name == changed && b.Hash == p.Hash {
			t.Errorf("%s%s: unchanged", dir, changed)
		}
	}
}
