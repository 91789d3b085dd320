package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// newRemote makes a bare repository with one commit on main holding files,
// and returns its file:// URL.
func newRemote(t *testing.T, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	repo, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}
	if _, err := wt.Commit("initial", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{bare}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	return "file://" + bare
}

// readBranchFile returns a file's content at the tip of branch on the remote.
func readBranchFile(t *testing.T, url, branch, name string) (string, *object.Commit) {
	t.Helper()
	repo, err := git.PlainClone(t.TempDir(), false, &git.CloneOptions{
		URL: url, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	head, _ := repo.Head()
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File(name)
	if err != nil {
		t.Fatalf("reading %s at %s: %v", name, branch, err)
	}
	content, _ := f.Contents()
	return content, commit
}

func testOptions(url string) Options {
	return Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main", AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}
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
	if err := os.WriteFile(filepath.Join(ws.Dir(), "apps/web.yaml"), []byte("cpu: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hash, committed, err := ws.Commit([]string{"apps/web.yaml"}, "Right-size web")
	if err != nil || !committed {
		t.Fatalf("Commit() = %q, %v, %v; want a commit", hash, committed, err)
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	got, commit := readBranchFile(t, url, opts.PushBranch, "apps/web.yaml")
	if got != "cpu: 2\n" {
		t.Errorf("pushed file = %q, want %q", got, "cpu: 2\n")
	}
	if commit.Hash.String() != hash || commit.Author.Name != "recommend-job" || commit.Message != "Right-size web" {
		t.Errorf("pushed commit = %s by %s %q, want %s by recommend-job", commit.Hash, commit.Author.Name, commit.Message, hash)
	}
	if base, _ := readBranchFile(t, url, "main", "apps/web.yaml"); base != "cpu: 1\n" {
		t.Errorf("main changed to %q", base)
	}

	// Second run: it checks out the existing push branch, where the file is
	// already up to date, so there is nothing to commit.
	ws2, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("second Checkout() error = %v", err)
	}
	if head, _ := ws2.Head(); head != hash {
		t.Errorf("second checkout HEAD = %s, want the push branch tip %s", head, hash)
	}
	if err := os.WriteFile(filepath.Join(ws2.Dir(), "apps/web.yaml"), []byte("cpu: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, committed, err := ws2.Commit([]string{"apps/web.yaml"}, "again"); err != nil || committed {
		t.Errorf("second Commit() = %q, %v, %v; want no commit", h, committed, err)
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
		{name: "file url", opts: Options{URL: "file:///srv/r.git", Token: "s3cret"}, wantURL: "file:///srv/r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, auth, err := authFor(tt.opts)
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
			if auth == nil || !strings.Contains(auth.String(), tt.wantUser) {
				t.Fatalf("auth = %v, want basic auth for %s", auth, tt.wantUser)
			}
			if strings.Contains(auth.String(), tt.wantPassword) {
				t.Errorf("auth.String() = %q shows the password", auth.String())
			}
		})
	}
}

func TestRedact(t *testing.T) {
	opts := Options{URL: "https://bot:hunter2@git.example.com/r.git", Token: "tok3n"}
	err := redact(errorString("clone https://bot:hunter2@git.example.com/r.git with tok3n failed"), opts)
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tok3n") {
		t.Errorf("redact() = %q, still holds a credential", err)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
