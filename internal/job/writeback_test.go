//go:build integration

package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// gitToken is the test git server's password; no log line may hold it.
const gitToken = "tok-9f8e7d6c5b4a"

// fixture is a git server with one repository holding webDeployment.
type fixture struct {
	url  string
	auth *githttp.BasicAuth
	logs *bytes.Buffer
	log  *slog.Logger
	// beforePush runs between commit and push of every attempt of run.
	beforePush func(attempt int)
}

// startGitServer starts the loopback git server, its user bot with
// gitToken, for the test's life.
func startGitServer(tb testing.TB, opts ...testbed.Option) *testbed.GitServer {
	tb.Helper()
	ctx := tb.Context()
	root, err := testbed.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := testbed.EnsureTools(ctx, root)
	if err != nil {
		tb.Fatalf("EnsureTools() error = %v", err)
	}
	srv, err := testbed.StartGitServer(ctx, tools, tb.TempDir(), "bot", gitToken, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	srv := startGitServer(t)
	url, err := srv.CreateRepo(ctx, "org/fleet", map[string]string{"clusters/prod/web.yaml": webDeployment, "README.md": "fleet\n"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), gitToken) {
			t.Errorf("the logs hold the git token:\n%s", logs)
		}
	})
	return &fixture{url: url, auth: &githttp.BasicAuth{Username: "bot", Password: gitToken}, logs: logs,
		log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func (f *fixture) config() Config {
	return Config{Path: "clusters", Git: gitops.Options{
		URL: f.url, BaseBranch: "main", PushBranch: "recommend-job/main",
		Username: "bot", Token: gitToken,
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com",
	}}
}

// run runs the write-back of webPlan(cpu).
func (f *fixture) run(t *testing.T, cfg Config, cpu string) (*plan.Plan, error) {
	t.Helper()
	rep := webPlan(cpu)
	r := newRun(cfg)
	r.beforePush = f.beforePush
	err := writeBack(t.Context(), r, rep, f.log)
	// The report never holds the token either.
	b, _ := json.Marshal(rep)
	if strings.Contains(string(b), gitToken) {
		t.Errorf("the report holds the git token: %s", b)
	}
	return rep, err
}

// branchFile reads name at the tip of branch on the remote.
func (f *fixture) branchFile(t *testing.T, branch, name string) (string, *object.Commit) {
	t.Helper()
	return testbedtest.BranchFile(t, f.url, f.auth, branch, name)
}

// pushAs commits name=content on branch as someone else and pushes it.
func (f *fixture) pushAs(t *testing.T, who, branch, name, content string) plumbing.Hash {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{
		URL: f.url, Auth: f.auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if _, err := wt.Add(name); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: who, Email: who + "@example.com", When: time.Now()}
	hash, err := wt.Commit("edit by "+who, &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: f.auth}); err != nil {
		t.Fatal(err)
	}
	return hash
}

func TestWriteBackPushesOnceOverHTTP(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()

	first, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("first writeBack() error = %v", err)
	}
	if g := first.Git; !g.Pushed || g.Commit == "" || g.Branch != "recommend-job/main" || g.Attempts != 1 {
		t.Fatalf("first run git = %+v, want one attempt pushing to recommend-job/main", g)
	}
	got, commit := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml")
	want := strings.Replace(webDeployment, "cpu: 500m", "cpu: 390m", 1)
	if got != want {
		t.Errorf("pushed manifest:\n%s\nwant:\n%s", got, want)
	}
	if commit.Hash.String() != first.Git.Commit {
		t.Errorf("branch tip = %s, want the reported %s", commit.Hash, first.Git.Commit)
	}
	// The default template: a title, the workload and the change; then
	// the trailer that lets a later run find the change once merged.
	wantMsg := "Right-size resource requests\n\nshop/web-rec: Deployment web (clusters/prod/web.yaml)\n  app: cpu 500m -> 390m\n" +
		"\nRecommend-Job-Change: shop/web-rec app cpu 500m 390m\n"
	if commit.Message != wantMsg {
		t.Errorf("commit message = %q, want %q", commit.Message, wantMsg)
	}

	// The same plan again: rebuilt from main, it is what the branch holds.
	second, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("second writeBack() error = %v", err)
	}
	if second.Git.Pushed || second.Git.Commit != "" {
		t.Errorf("second run git = %+v, want nothing pushed", second.Git)
	}
	if _, tip := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml"); tip.Hash != commit.Hash {
		t.Errorf("branch moved to %s on a no-op run", tip.Hash)
	}
}

func TestWriteBackRetriesWhenBaseMoves(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	// Between the first attempt's commit and its push, someone merges a
	// change into main: the push would build the branch on a stale base.
	var moved plumbing.Hash
	f.beforePush = func(attempt int) {
		if attempt == 1 {
			moved = f.pushAs(t, "alice", "main", "README.md", "fleet, now with docs\n")
		}
	}

	rep, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	if !rep.Git.Pushed || rep.Git.Attempts != 2 {
		t.Fatalf("git = %+v, want a push on the second attempt", rep.Git)
	}
	readme, tip := f.branchFile(t, "recommend-job/main", "README.md")
	if readme != "fleet, now with docs\n" {
		t.Errorf("README on the branch = %q, want main's new one", readme)
	}
	if len(tip.ParentHashes) != 1 || tip.ParentHashes[0] != moved {
		t.Errorf("branch tip parents = %v, want the moved main %s", tip.ParentHashes, moved)
	}
	if web, _ := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml"); !strings.Contains(web, "cpu: 390m") {
		t.Errorf("re-rendered manifest lost the change:\n%s", web)
	}
}

func TestWriteBackGivesUpAfterAttempts(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Git.Attempts = 2
	n := 0
	f.beforePush = func(int) {
		n++
		f.pushAs(t, "alice", "main", "README.md", strings.Repeat("x", n)+"\n")
	}

	rep, err := f.run(t, cfg, "390m")
	if !errors.Is(err, gitops.ErrStale) {
		t.Fatalf("writeBack() error = %v, want ErrStale after the attempts", err)
	}
	if rep.Git.Pushed || rep.Git.Attempts != 2 || n != 2 {
		t.Errorf("git = %+v after %d pushes by others, want 2 attempts and nothing pushed", rep.Git, n)
	}
}

func TestWriteBackStopsOnHumanCommit(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	if _, err := f.run(t, cfg, "390m"); err != nil {
		t.Fatal(err)
	}
	// A reviewer fixes up the job's branch by hand.
	human := f.pushAs(t, "bob", "recommend-job/main", "clusters/prod/web.yaml",
		strings.Replace(webDeployment, "cpu: 500m", "cpu: 450m", 1))

	rep, err := f.run(t, cfg, "420m")
	if !errors.Is(err, gitops.ErrForeignCommit) {
		t.Fatalf("writeBack() error = %v, want ErrForeignCommit", err)
	}
	if rep.Git.Pushed || !strings.Contains(rep.Git.Stopped, "bob <bob@example.com>") {
		t.Errorf("git = %+v, want nothing pushed and bob's commit named", rep.Git)
	}
	web, tip := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml")
	if tip.Hash != human || !strings.Contains(web, "cpu: 450m") {
		t.Errorf("branch = %s with\n%s\nwant bob's commit %s kept", tip.Hash, web, human)
	}
}

func TestWriteBackDryRunShowsDiffAndBody(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.DryRun = true
	rep, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatal(err)
	}
	// Line 14 of the 15-line manifest is the cpu request: three lines of
	// context before it (11-13) and the one line after, so the hunk spans
	// lines 11-15, five lines on either side.
	wantDiff := "--- a/clusters/prod/web.yaml\n+++ b/clusters/prod/web.yaml\n" +
		"@@ -11,5 +11,5 @@\n" +
		"         image: nginx:1.27\n" +
		"         resources:\n" +
		"           requests:\n" +
		"-            cpu: 500m  # launch-day guess\n" +
		"+            cpu: 390m  # launch-day guess\n" +
		"             memory: 512Mi\n"
	if rep.Git.Diff != wantDiff {
		t.Errorf("diff =\n%s\nwant\n%s", rep.Git.Diff, wantDiff)
	}
	pr := rep.Git.PullRequest
	if pr == nil || pr.Action != plan.PRPlanned || !strings.Contains(pr.Body, "| app | cpu | 500m | 390m | -22.0% |") {
		t.Errorf("pull request = %+v, want the planned body with app's cpu row", pr)
	}
	if rep.Git.Pushed || rep.Git.Commit != "" {
		t.Errorf("dry run git = %+v, want nothing committed or pushed", rep.Git)
	}
	heads := remoteBranches(t, f)
	if len(heads) != 1 || heads[0] != "main" {
		t.Errorf("remote branches after a dry run = %v, want only main", heads)
	}
}

// remoteBranches lists the branches of f's remote.
func remoteBranches(t *testing.T, f *fixture) []string {
	t.Helper()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{f.url}})
	refs, err := remote.List(&git.ListOptions{Auth: f.auth})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		if r.Name().IsBranch() {
			names = append(names, r.Name().Short())
		}
	}
	return names
}

func TestCommitTemplate(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.CommitTemplate = template.Must(markdown.ParseCommitTemplate("chore({{.Path}}): right-size{{range .Workloads}} {{.Target}}{{end}} for {{.Base}}\n"))
	cfg.Git.CommitterName, cfg.Git.CommitterEmail = "ci", "ci@example.com"
	if _, err := f.run(t, cfg, "390m"); err != nil {
		t.Fatal(err)
	}
	_, commit := f.branchFile(t, "recommend-job/main", "README.md")
	// The trailers follow whatever the template says.
	if commit.Message != "chore(clusters): right-size web for main\n\nRecommend-Job-Change: shop/web-rec app cpu 500m 390m\n" {
		t.Errorf("message = %q", commit.Message)
	}
	if commit.Author.Email != "recommend-job@example.com" || commit.Committer.Email != "ci@example.com" {
		t.Errorf("author %s, committer %s; want recommend-job@example.com and ci@example.com", commit.Author.Email, commit.Committer.Email)
	}
}

func TestWriteBackDirectPush(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Git.PushBranch = "main"
	// A commit lands on main between this run's commit and its push: a
	// plain push would be refused as non-fast-forward, so the run starts
	// again on the new main.
	f.beforePush = func(attempt int) {
		if attempt == 1 {
			f.pushAs(t, "alice", "main", "README.md", "fleet, now with docs\n")
		}
	}

	rep, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	if !rep.Git.Pushed || rep.Git.Branch != "main" || rep.Git.Attempts != 2 || rep.Git.PullRequest != nil {
		t.Fatalf("git = %+v, want main pushed on the second attempt, no pull request", rep.Git)
	}
	web, tip := f.branchFile(t, "main", "clusters/prod/web.yaml")
	if !strings.Contains(web, "cpu: 390m") || tip.Hash.String() != rep.Git.Commit {
		t.Errorf("main = %s with\n%s\nwant the reported commit %s with cpu 390m", tip.Hash, web, rep.Git.Commit)
	}
	if readme, _ := f.branchFile(t, "main", "README.md"); readme != "fleet, now with docs\n" {
		t.Errorf("README = %q: alice's commit was lost", readme)
	}
	if heads := remoteBranches(t, f); len(heads) != 1 {
		t.Errorf("branches = %v, want main only", heads)
	}

	// Main holds the value now: nothing to change, nothing pushed.
	f.beforePush = nil
	again, err := f.run(t, cfg, "390m")
	if err != nil || again.Git.Pushed || len(again.Git.Files) != 0 {
		t.Errorf("second run git = %+v, %v; want nothing to do", again.Git, err)
	}
}

// TestWriteBackRebuildsOnConflictingBase: after the job pushed its branch,
// someone changes the very line on main. A rebase would conflict; the next
// run instead applies the intent (app's cpu is 390m) to the new main.
func TestWriteBackRebuildsOnConflictingBase(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	if _, err := f.run(t, cfg, "390m"); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(webDeployment, "cpu: 500m  # launch-day guess", "cpu: 450m  # tuned by hand", 1)
	merged := f.pushAs(t, "alice", "main", "clusters/prod/web.yaml", edited)

	rep, err := f.run(t, cfg, "390m")
	if err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	if !rep.Git.Pushed {
		t.Fatalf("git = %+v, want the branch rebuilt and pushed", rep.Git)
	}
	web, tip := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml")
	if want := strings.Replace(edited, "cpu: 450m", "cpu: 390m", 1); web != want {
		t.Errorf("branch manifest:\n%s\nwant main's with the cpu set:\n%s", web, want)
	}
	if len(tip.ParentHashes) != 1 || tip.ParentHashes[0] != merged {
		t.Errorf("branch tip parents = %v, want alice's main commit %s", tip.ParentHashes, merged)
	}
}

func TestWriteBackUnreachableRepositoryReportsNoGit(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	// A port nothing listens on: the repository is never reached.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Git.URL = "http://" + l.Addr().String() + "/org/fleet"
	l.Close()

	rep, err := f.run(t, cfg, "390m")
	var opErr *net.OpError
	if err == nil || !errors.As(err, &opErr) || !strings.Contains(err.Error(), "checking out the repository") {
		t.Fatalf("writeBack() error = %v, want a network error checking out the repository", err)
	}
	if rep.Git != nil {
		t.Errorf("report git = %+v, want none: the repository was not reached", rep.Git)
	}
	var table bytes.Buffer
	if err := report.Write(&table, rep, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "up to date") || strings.Contains(table.String(), "nothing to commit") {
		t.Errorf("the table says the branch is up to date although git was not reached:\n%s", table.String())
	}
}
