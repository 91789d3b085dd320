package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestCheckoutBaseWritesEachBranchFromTheBase writes three branches from
// one checkout: each gets the base plus its own file, on top of the base
// head, whatever the others did; a branch the job already holds is judged
// up to date, and one whose tip is someone else's is refused alone.
func TestCheckoutBaseWritesEachBranchFromTheBase(t *testing.T) {
	ctx := context.Background()
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "c.yaml": "c: 1\n"})
	opts := testOptions(url)
	// Before the run: the job wrote branch -b, a person wrote -c.
	own, err := Checkout(ctx, opts.OnBranch("rj-b"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, own, map[string]string{"b.yaml": "b: 2\n"}, "b")
	if err := own.Push(ctx); err != nil {
		t.Fatal(err)
	}
	human := opts
	human.AuthorEmail = "human@example.com"
	other, err := Checkout(ctx, human.OnBranch("rj-c"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, other, map[string]string{"c.yaml": "c: 9\n"}, "c")
	if err := other.Push(ctx); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	base, err := CheckoutBase(ctx, opts, dir, []string{"rj-a", "rj-b", "rj-c"})
	if err != nil {
		t.Fatalf("CheckoutBase() error = %v", err)
	}
	if _, _, err := base.Commit([]string{"a.yaml"}, "x"); !errors.Is(err, errNoBranch) {
		t.Errorf("Commit() before OnBranch error = %v, want %v", err, errNoBranch)
	}
	if len(base.tips) != 2 {
		t.Errorf("tips fetched = %d, want the 2 branches the remote has", len(base.tips))
	}

	a, err := base.OnBranch(ctx, "rj-a")
	if err != nil {
		t.Fatalf("OnBranch(rj-a) error = %v", err)
	}
	hashA, _ := writeAndCommit(t, a, map[string]string{"a.yaml": "a: 2\n"}, "a")
	if err := a.Push(ctx); err != nil {
		t.Fatalf("Push(rj-a) error = %v", err)
	}
	// The caller puts the file back before the next branch.
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	b, err := base.OnBranch(ctx, "rj-b")
	if err != nil {
		t.Fatalf("OnBranch(rj-b) error = %v", err)
	}
	writeAndCommit(t, b, map[string]string{"b.yaml": "b: 2\n"}, "b")
	if up, err := b.UpToDate(ctx); err != nil || !up {
		t.Errorf("UpToDate(rj-b) = %v, %v; want true: the branch holds this tree", up, err)
	}
	if _, err := base.OnBranch(ctx, "rj-c"); !errors.Is(err, ErrForeignCommit) {
		t.Errorf("OnBranch(rj-c) error = %v, want %v", err, ErrForeignCommit)
	}

	gotA, commitA := testbedtest.BranchFile(t, url, nil, "rj-a", "a.yaml")
	gotB, _ := testbedtest.BranchFile(t, url, nil, "rj-a", "b.yaml")
	if gotA != "a: 2\n" || gotB != "b: 1\n" || commitA.Hash.String() != hashA {
		t.Errorf("rj-a holds a=%q b=%q at %s, want a: 2, b: 1 at %s", gotA, gotB, commitA.Hash, hashA)
	}
	if len(commitA.ParentHashes) != 1 || commitA.ParentHashes[0].String() != base.BaseHead() {
		t.Errorf("rj-a's parents = %v, want the base head %s", commitA.ParentHashes, base.BaseHead())
	}
	if c, _ := testbedtest.BranchFile(t, url, nil, "rj-c", "c.yaml"); c != "c: 9\n" {
		t.Errorf("rj-c = %q, want the person's commit left alone", c)
	}
}

// TestPushAllOneSession pushes three branches of one checkout together:
// each is judged on its own lease, so the one someone moved after the
// checkout is refused (ErrStale) and the others land; withdrawn, the one
// the push created is gone and the other is back at its tip. Once the
// base moves, every branch is refused and none is pushed.
func TestPushAllOneSession(t *testing.T) {
	ctx := context.Background()
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "c.yaml": "c: 1\n"})
	opts := testOptions(url)
	before := map[string]string{}
	for _, name := range []string{"b", "c"} {
		first, err := Checkout(ctx, opts.OnBranch("rj-"+name), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		before["rj-"+name], _ = writeAndCommit(t, first, map[string]string{name + ".yaml": name + ": 2\n"}, name)
		if err := first.Push(ctx); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	base, err := CheckoutBase(ctx, opts, dir, []string{"rj-a", "rj-b", "rj-c"})
	if err != nil {
		t.Fatal(err)
	}
	var branches []*Workspace
	for _, name := range []string{"a", "b", "c"} {
		ws, err := base.OnBranch(ctx, "rj-"+name)
		if err != nil {
			t.Fatal(err)
		}
		file := name + ".yaml"
		writeAndCommit(t, ws, map[string]string{file: name + ": 3\n"}, name)
		if err := os.WriteFile(filepath.Join(dir, file), []byte(name+": 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		branches = append(branches, ws)
	}
	// Another run of the job moves rj-b after the checkout.
	second, err := Checkout(ctx, opts.OnBranch("rj-b"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, second, map[string]string{"b.yaml": "b: 4\n"}, "b")
	if err := second.Push(ctx); err != nil {
		t.Fatal(err)
	}

	errs := PushAll(ctx, branches)
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], ErrStale) {
		t.Fatalf("PushAll() = %v, want rj-a and rj-c pushed, rj-b stale", errs)
	}
	for branch, want := range map[string]string{"rj-a": "a: 3\n", "rj-b": "b: 4\n", "rj-c": "c: 3\n"} {
		file := "a.yaml"
		if branch != "rj-a" {
			file = branch[3:] + ".yaml"
		}
		got, tip := testbedtest.BranchFile(t, url, nil, branch, file)
		if got != want {
			t.Errorf("%s: %s = %q, want %q", branch, file, got, want)
		}
		if branch != "rj-b" && tip.ParentHashes[0].String() != base.BaseHead() {
			t.Errorf("%s: parent %s, want the base head %s", branch, tip.ParentHashes[0], base.BaseHead())
		}
	}

	if errs := Withdraw(ctx, []*Workspace{branches[0], branches[2]}); errs[0] != nil || errs[1] != nil {
		t.Fatalf("Withdraw() = %v", errs)
	}
	heads, err := base.remoteHeads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, c := heads[plumbing.NewBranchReferenceName("rj-a")], heads[plumbing.NewBranchReferenceName("rj-c")]; !a.IsZero() || c.String() != before["rj-c"] {
		t.Errorf("after Withdraw rj-a = %s, rj-c = %s; want none and %s", a, c, before["rj-c"])
	}

	again, err := CheckoutBase(ctx, opts, t.TempDir(), []string{"rj-d"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := again.OnBranch(ctx, "rj-d")
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, d, map[string]string{"d.yaml": "d: 1\n"}, "d")
	pushToMain(t, url, "README.md", "moved\n")
	if errs := PushAll(ctx, []*Workspace{d}); !errors.Is(errs[0], ErrStale) {
		t.Errorf("PushAll() after the base moved = %v, want %v", errs, ErrStale)
	}
	if heads, err := d.remoteHeads(ctx); err != nil || !heads[plumbing.NewBranchReferenceName("rj-d")].IsZero() {
		t.Errorf("rj-d on the remote after a stale push: %v, %v; want none", heads, err)
	}
}
