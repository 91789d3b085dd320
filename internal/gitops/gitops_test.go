package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// newRemote makes a bare repository with one commit on main holding files,
// and returns its file:// URL.
func newRemote(t *testing.T, files map[string]string) string {
	t.Helper()
	return testbedtest.FileRemote(t, files)
}

func testOptions(url string) Options {
	return Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main", AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}
}

// writeAndCommit writes files into ws and commits them.
func writeAndCommit(t *testing.T, ws *Workspace, files map[string]string, message string) (string, bool) {
	t.Helper()
	var names []string
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws.Dir(), name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	hash, committed, err := ws.Commit(names, message)
	if err != nil {
		t.Fatalf("Commit() error = %v", err)
	}
	return hash, committed
}

func TestCheckoutCommitPush(t *testing.T) {
	ctx := context.Background()
	url := newRemote(t, map[string]string{"apps/web.yaml": "cpu: 1\n", "README.md": "hi\n"})
	opts := testOptions(url)

	// First run: the push branch does not exist yet and starts from main.
	ws, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("Checkout() error = %v", err)
	}
	hash, committed := writeAndCommit(t, ws, map[string]string{"apps/web.yaml": "cpu: 2\n"}, "Right-size web")
	if !committed {
		t.Fatal("Commit() made no commit")
	}
	if upToDate, err := ws.UpToDate(ctx); err != nil || upToDate {
		t.Fatalf("UpToDate() = %v, %v; want false for a new branch", upToDate, err)
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	got, commit := testbedtest.BranchFile(t, url, nil, opts.PushBranch, "apps/web.yaml")
	if got != "cpu: 2\n" {
		t.Errorf("pushed file = %q, want %q", got, "cpu: 2\n")
	}
	if commit.Hash.String() != hash || commit.Author.Name != "recommend-job" || commit.Message != "Right-size web" {
		t.Errorf("pushed commit = %s by %s %q, want %s by recommend-job", commit.Hash, commit.Author.Name, commit.Message, hash)
	}
	if base, _ := testbedtest.BranchFile(t, url, nil, "main", "apps/web.yaml"); base != "cpu: 1\n" {
		t.Errorf("main changed to %q", base)
	}

	// Second run, same change: it starts again from main, and the result
	// is the tree already on the push branch.
	ws2, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("second Checkout() error = %v", err)
	}
	writeAndCommit(t, ws2, map[string]string{"apps/web.yaml": "cpu: 2\n"}, "Right-size web")
	if upToDate, err := ws2.UpToDate(ctx); err != nil || !upToDate {
		t.Errorf("second UpToDate() = %v, %v; want true", upToDate, err)
	}

	// A change on main after the branch was made reaches the branch on the
	// next run, which rebuilds it on the new base.
	pushToMain(t, url, "README.md", "hello\n")
	ws3, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("third Checkout() error = %v", err)
	}
	writeAndCommit(t, ws3, map[string]string{"apps/web.yaml": "cpu: 2\n"}, "Right-size web")
	if upToDate, err := ws3.UpToDate(ctx); err != nil || upToDate {
		t.Fatalf("UpToDate() after main moved = %v, %v; want false", upToDate, err)
	}
	if err := ws3.Push(ctx); err != nil {
		t.Fatalf("Push() onto the moved base error = %v", err)
	}
	if readme, _ := testbedtest.BranchFile(t, url, nil, opts.PushBranch, "README.md"); readme != "hello\n" {
		t.Errorf("push branch README = %q, want main's new %q", readme, "hello\n")
	}
	if web, _ := testbedtest.BranchFile(t, url, nil, opts.PushBranch, "apps/web.yaml"); web != "cpu: 2\n" {
		t.Errorf("push branch web.yaml = %q, want the change kept", web)
	}
}

func TestPushLosesNoConcurrentCommit(t *testing.T) {
	ctx := context.Background()
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n"})
	opts := testOptions(url)
	first, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, first, map[string]string{"a.yaml": "a: 2\n"}, "one")
	if err := first.Push(ctx); err != nil {
		t.Fatal(err)
	}

	// Two runs check out at the same time; the second one to push must
	// fail rather than overwrite the first one's push.
	slow, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, fast, map[string]string{"a.yaml": "a: 3\n"}, "fast")
	if err := fast.Push(ctx); err != nil {
		t.Fatalf("fast Push() error = %v", err)
	}
	writeAndCommit(t, slow, map[string]string{"a.yaml": "a: 4\n"}, "slow")
	if err := slow.Push(ctx); err == nil {
		t.Fatal("slow Push() error = nil, want the lease to refuse it")
	}
	if got, _ := testbedtest.BranchFile(t, url, nil, opts.PushBranch, "a.yaml"); got != "a: 3\n" {
		t.Errorf("push branch = %q, want the fast run's %q", got, "a: 3\n")
	}
}

// pushToMain commits one file on the remote's main branch.
func pushToMain(t *testing.T, url, name, content string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if _, err := wt.Add(name); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "human", Email: "human@example.com", When: time.Now()}
	if _, err := wt.Commit("human change", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckoutMissingBaseBranch(t *testing.T) {
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n"})
	opts := testOptions(url)
	opts.BaseBranch = "production"
	_, err := Checkout(context.Background(), opts, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `base branch "production"`) {
		t.Fatalf("Checkout() error = %v, want a missing base branch error", err)
	}
}

func TestAuthForMovesCredentialsOutOfURL(t *testing.T) {
	tests := []struct {
		name         string
		opts         Options
		wantURL      string
		wantUser     string
		wantPassword string
	}{
		{name: "token option", opts: Options{URL: "https://git.example.com/org/repo.git", Token: "s3cret"}, wantURL: "https://git.example.com/org/repo.git", wantUser: "git", wantPassword: "s3cret"},
		{name: "username and token", opts: Options{URL: "https://git.example.com/r.git", Username: "bot", Token: "s3cret"}, wantURL: "https://git.example.com/r.git", wantUser: "bot", wantPassword: "s3cret"},
		{name: "credentials in url", opts: Options{URL: "https://bot:s3cret@git.example.com/r.git"}, wantURL: "https://git.example.com/r.git", wantUser: "bot", wantPassword: "s3cret"},
		{name: "token as the url's user", opts: Options{URL: "https://s3cret@git.example.com/r.git"}, wantURL: "https://git.example.com/r.git", wantUser: "git", wantPassword: "s3cret"},
		{name: "file url", opts: Options{URL: "file:///srv/r.git", Token: "s3cret"}, wantURL: "file:///srv/r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, auth, err := authFor(tt.opts, parseGitURL(tt.opts.URL), gitRedactor(tt.opts, parseGitURL(tt.opts.URL)))
			if err != nil {
				t.Fatal(err)
			}
			if url != tt.wantURL {
				t.Errorf("url = %q, want %q", url, tt.wantURL)
			}
			if tt.wantPassword == "" {
				if auth != nil {
					t.Errorf("auth = %v, want none", auth)
				}
				return
			}
			basic, ok := auth.(*githttp.BasicAuth)
			if !ok {
				t.Fatalf("auth = %T, want basic auth", auth)
			}
			if basic.Username != tt.wantUser || basic.Password != tt.wantPassword {
				t.Errorf("basic auth = %s/%s, want %s/%s", basic.Username, basic.Password, tt.wantUser, tt.wantPassword)
			}
			if strings.Contains(auth.String(), tt.wantPassword) {
				t.Errorf("auth.String() = %q shows the password", auth.String())
			}
		})
	}
}

func TestRedact(t *testing.T) {
	opts := Options{URL: "https://bot:hunter2@git.example.com/r.git", Token: "tok3n"}
	err := redactErr(fmt.Errorf("clone https://bot:hunter2@git.example.com/r.git with tok3n: %w", context.Canceled), opts)
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tok3n") {
		t.Errorf("redact() = %q, still holds a credential", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("redact() = %v, no longer matches context.Canceled", err)
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("redact() unwraps to %q, which holds the credentials", errors.Unwrap(err))
	}
	plain := errorString("no credentials here")
	if got := redactErr(plain, opts); got != error(plain) { //nolint:errorlint // identity: redact returns such an error itself
		t.Errorf("redact() changed an error without credentials: %v", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestCommitStagesTheFilesGiven(t *testing.T) {
	ctx := context.Background()
	url := newRemote(t, map[string]string{
		"apps/web.yaml":  "cpu: 1\n",
		"apps/api.yaml":  "cpu: 1\n",
		"apps/old.yaml":  "cpu: 1\n",
		"apps/note.yaml": "cpu: 1\n",
		"README.md":      "hi\n",
	})
	ws, err := Checkout(ctx, testOptions(url), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(ws.Dir(), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Files rewritten with the content they had make no commit.
	write("apps/web.yaml", "cpu: 1\n")
	if hash, committed, err := ws.Commit([]string{"apps/web.yaml", "apps/api.yaml"}, "nothing"); err != nil || committed || hash != "" {
		t.Fatalf("Commit() of unchanged files = %q, %v, %v; want no commit", hash, committed, err)
	}

	// A changed file, a new one in a new directory and a removed one are
	// committed; a changed file not given is not.
	write("apps/web.yaml", "cpu: 2\n")
	write("overlays/prod/patch.yaml", "cpu: 3\n")
	write("apps/note.yaml", "cpu: 9\n")
	if err := os.Remove(filepath.Join(ws.Dir(), "apps", "old.yaml")); err != nil {
		t.Fatal(err)
	}
	hash, committed, err := ws.Commit([]string{"overlays/prod/patch.yaml", "apps/web.yaml", "apps/old.yaml", "apps/web.yaml"}, "Right-size")
	if err != nil || !committed {
		t.Fatalf("Commit() = %v, %v; want a commit", committed, err)
	}
	commit, err := ws.repo.CommitObject(plumbing.NewHash(hash))
	if err != nil {
		t.Fatal(err)
	}
	if commit.Message != "Right-size" || commit.Author.Email != "recommend-job@example.com" || commit.Committer.Email != "recommend-job@example.com" {
		t.Errorf("commit = %q by %s, committed by %s", commit.Message, commit.Author.Email, commit.Committer.Email)
	}
	if len(commit.ParentHashes) != 1 || commit.ParentHashes[0].String() != ws.BaseHead() {
		t.Errorf("commit parents = %v, want the base %s", commit.ParentHashes, ws.BaseHead())
	}
	want := map[string]string{
		"apps/web.yaml":            "cpu: 2\n",
		"apps/api.yaml":            "cpu: 1\n",
		"apps/note.yaml":           "cpu: 1\n",
		"overlays/prod/patch.yaml": "cpu: 3\n",
		"README.md":                "hi\n",
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := tree.Files().ForEach(func(f *object.File) error {
		got[f.Name], err = f.Contents()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("committed tree = %v, want %v", got, want)
	}
}

func TestCommitRefusesPathsGitRefuses(t *testing.T) {
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n"})
	ws, err := Checkout(context.Background(), testOptions(url), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".git/config", "a/../../b.yaml", "", "apps/.GIT/x", "apps/x\ty"} {
		if _, _, err := ws.Commit([]string{name}, "bad"); err == nil {
			t.Errorf("Commit(%q) error = nil, want the path refused", name)
		}
	}
}
