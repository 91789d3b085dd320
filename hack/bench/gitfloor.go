package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// floorBranch is the branch the git floor pushes.
const floorBranch = "bench/floor"

// GitRemote is a repository on the git server and how to reach it.
type GitRemote struct {
	// Git is the git binary.
	Git string
	// URL is the clone URL, through the proxy.
	URL                string
	Username, Password string
}

// GitFloor clones the base branch as the job does (shallow, one branch, no
// tags), writes into it the files the job changed, as the job's branch
// holds them, commits them and pushes a branch, with the git CLI, and
// returns when all that began and ended. The job's files are read
// beforehand from a clone of its branch in dir, which is not timed.
func GitFloor(ctx context.Context, remote GitRemote, base, jobBranch string, files []string, dir string) (Span, error) {
	job := filepath.Join(dir, "job")
	if err := remote.run(ctx, dir, "clone", "--quiet", "--depth=1", "--single-branch", "--no-tags", "--branch="+jobBranch, remote.URL, job); err != nil {
		return Span{}, err
	}
	list := filepath.Join(dir, "files")
	if err := os.WriteFile(list, []byte(strings.Join(files, "\n")+"\n"), 0o644); err != nil {
		return Span{}, fmt.Errorf("git floor: %w", err)
	}
	work := filepath.Join(dir, "floor")
	began := time.Now()
	if err := remote.run(ctx, dir, "clone", "--quiet", "--depth=1", "--single-branch", "--no-tags", "--branch="+base, remote.URL, work); err != nil {
		return Span{}, err
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(job, filepath.FromSlash(f)), filepath.Join(work, filepath.FromSlash(f))); err != nil {
			return Span{}, fmt.Errorf("git floor: %w", err)
		}
	}
	steps := [][]string{
		{"add", "--pathspec-from-file=" + list},
		{"commit", "--quiet", "--message=floor: the job's change"},
		{"push", "--quiet", "--force", "origin", "HEAD:refs/heads/" + floorBranch},
	}
	for _, args := range steps {
		if err := remote.run(ctx, work, args...); err != nil {
			return Span{}, err
		}
	}
	return Span{Start: began, End: time.Now()}, nil
}

// run runs git in dir with the remote's credentials in a header, so that
// they are in no URL and no error.
func (r GitRemote) run(ctx context.Context, dir string, args ...string) error {
	auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
	cmd := exec.CommandContext(ctx, r.Git, append([]string{"-c", "http.extraHeader=Authorization: Basic " + auth}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}
