package job

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
)

// fileRemote makes a bare repository whose main branch holds files, and
// returns its file:// URL.
func fileRemote(t *testing.T, files map[string]string) string {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	repo, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(work, filepath.FromSlash(name))
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
	sig := &object.Signature{Name: "alice", Email: "alice@example.com", When: time.Now()}
	if _, err := wt.Commit("manifests", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{remote}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	return "file://" + remote
}

// TestWriteBackReportsSkippedFiles checks that a file above max-file-size
// is listed in the report and logged, and that the run renders the rest.
func TestWriteBackReportsSkippedFiles(t *testing.T) {
	url := fileRemote(t, map[string]string{
		"clusters/prod/web.yaml": webDeployment,
		"clusters/prod/big.yaml": "# " + strings.Repeat("x", 4096) + "\n",
	})
	cfg := Config{Path: "clusters", DryRun: true, RenderOptions: []render.Option{render.WithMaxFileSize(1024)},
		Git: gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main",
			AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}}
	rep := webPlan("390m")
	var logs bytes.Buffer
	if err := writeBack(t.Context(), cfg, rep, slog.New(slog.NewJSONHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if src := rep.Items[0].Source; src == nil || !src.Changed || src.Error != "" {
		t.Errorf("source = %+v, want web.yaml changed", src)
	}
	const reason = "clusters/prod/big.yaml is 4 KiB, above max-file-size 1Ki: not read"
	if s := rep.Git.Skipped; len(s) != 1 || s[0].File != "clusters/prod/big.yaml" || !strings.Contains(s[0].Reason, reason) {
		t.Errorf("git.skipped = %+v, want clusters/prod/big.yaml: %s", s, reason)
	}
	if !strings.Contains(logs.String(), `"msg":"file not read","file":"clusters/prod/big.yaml"`) {
		t.Errorf("logs do not name the skipped file:\n%s", logs.String())
	}
}
