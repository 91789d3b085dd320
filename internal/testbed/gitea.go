package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// giteaModule is the module path Gitea is built from; its source holds the
// templates and locale files Gitea reads at run time.
const giteaModule = "code.gitea.io/gitea"

// GiteaTools is a Gitea binary, the module source it serves its assets
// from, and the git it runs.
type GiteaTools struct {
	Binary string
	// Source is code.gitea.io/gitea's directory in the module cache.
	Source string
	// Git is the git binary Gitea runs; CreateRepo runs it too.
	Git string
	// Mermaid is Mermaid's browser bundle, set for a server that gets the
	// stand-in frontend (GiteaFrontend).
	Mermaid string
}

// EnsureGitea builds Gitea from the tools module in hack/tools/gitea into
// .cache/bin unless that binary is newer than the module's sources, and
// finds the module's source and git (installing git's package when it is
// missing and the process runs as root). It takes the same lock as
// EnsureTools, so concurrent test binaries build it once. A cold build
// takes minutes and reports its progress on stderr.
func EnsureGitea(ctx context.Context, repoRoot string) (GiteaTools, error) {
	cacheDir := filepath.Join(repoRoot, ".cache")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return GiteaTools{}, fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(cacheDir, "testbed-tools.lock"))
	if err != nil {
		return GiteaTools{}, err
	}
	defer unlock()

	out, err := buildTool(ctx, repoRoot, giteaTool)
	if err != nil {
		return GiteaTools{}, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return GiteaTools{}, fmt.Errorf("find the gitea module source: go not found on PATH: %w", err)
	}
	module := filepath.Join(repoRoot, "hack", "tools", giteaTool.name)
	env := append(os.Environ(), "GOWORK=off")
	cmd := exec.CommandContext(ctx, goBin, "list", "-C", module, "-m", "-f", "{{.Dir}}", giteaModule)
	cmd.Env = env
	dir, err := cmd.Output()
	if err != nil {
		return GiteaTools{}, fmt.Errorf("find the gitea module source: %w", err)
	}
	git, err := lookPath("git")
	if err != nil {
		if err := installPackages(ctx, []string{"git"}); err != nil {
			return GiteaTools{}, fmt.Errorf("gitea runs git: %w", err)
		}
		if git, err = lookPath("git"); err != nil {
			return GiteaTools{}, fmt.Errorf("gitea runs git: %w", err)
		}
	}
	return GiteaTools{Binary: out, Source: strings.TrimSpace(string(dir)), Git: git}, nil
}

// Gitea is a running Gitea server with one admin user, on loopback, with
// sqlite in a directory of its own.
type Gitea struct {
	// URL is the server's root URL with a trailing slash; the API is at
	// URL + "api/v1".
	URL string
	// Username is the admin user; Password and Token are its password and
	// an API token with every scope.
	Username string
	password string
	token    string
	git      string
	proc     *Process
}

// StartGitea builds Gitea on first use (see EnsureGitea) for the
// repository at repoRoot, initialises it in dir (app.ini, database
// migration, the admin user and its token) and starts its web server on a
// free loopback port. Tests get one through testbedtest.Gitea.
func StartGitea(ctx context.Context, repoRoot, dir string, opts ...Option) (*Gitea, error) {
	tools, err := EnsureGitea(ctx, repoRoot)
	if err != nil {
		return nil, err
	}
	if buildOptions(opts).giteaFrontend {
		if tools.Mermaid, err = EnsureMermaid(ctx, repoRoot); err != nil {
			return nil, err
		}
	}
	return startWithRetry(func() (*Gitea, error) { return startGitea(ctx, tools, dir, opts...) })
}

func startGitea(ctx context.Context, tools GiteaTools, dir string, opts ...Option) (*Gitea, error) {
	o := buildOptions(opts)
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start gitea: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start gitea: %w", err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, fmt.Errorf("start gitea: %w", err)
	}
	g := &Gitea{URL: fmt.Sprintf("http://%s:%d/", o.host(), ports[0]), Username: "testbed", password: secretHex(16), git: tools.Git}
	ini := filepath.Join(dir, "app.ini")
	if err := os.WriteFile(ini, []byte(giteaINI(dir, tools, o.host(), ports[0])), 0o600); err != nil {
		return nil, fmt.Errorf("start gitea: %w", err)
	}
	if tools.Mermaid != "" {
		// Gitea's custom path is WORK_PATH/custom.
		if err := writeGiteaFrontend(filepath.Join(dir, "custom"), tools); err != nil {
			return nil, fmt.Errorf("start gitea: %w", err)
		}
	}
	// Gitea reads HOME for its git configuration; keep the caller's out.
	env := append(EnvironWithout("GIT_", "GITEA_", "HOME="), "HOME="+dir, "GITEA_WORK_DIR="+dir)
	base := []string{"--config", ini, "--work-path", dir}
	steps := [][]string{
		{"migrate"},
		{"admin", "user", "create", "--admin", "--username", g.Username, "--password", g.password,
			"--email", "testbed@example.com", "--must-change-password=false"},
	}
	for _, step := range steps {
		cmd := exec.CommandContext(ctx, tools.Binary, append(base, step...)...)
		cmd.Env = env
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			// The output never holds the password: Gitea does not echo it.
			return nil, fmt.Errorf("start gitea: gitea %s: %w\n%s", step[0], err, tailLines(string(out), logTailLines))
		}
	}
	g.proc, err = startProcess("gitea", tools.Binary, append(base, "web"), filepath.Join(dir, "gitea.log"), env, o)
	if err != nil {
		return nil, err
	}
	ready := func(ctx context.Context) error {
		return probeHTTP(ctx, http.DefaultClient, g.URL+"api/v1/version", nil, http.StatusOK, "version")
	}
	if err := g.proc.WaitReady(ctx, ready); err != nil {
		return nil, g.proc.Fail(err)
	}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	if err := g.api(ctx, http.MethodPost, "users/"+g.Username+"/tokens", true,
		map[string]any{"name": "testbed", "scopes": []string{"all"}}, &tok); err != nil {
		return nil, g.proc.Fail(fmt.Errorf("create token: %w", err))
	}
	g.token = tok.SHA1
	return g, nil
}

// giteaINI is the configuration of a local, offline Gitea.
func giteaINI(dir string, tools GiteaTools, host string, port int) string {
	var b strings.Builder
	if os.Geteuid() == 0 {
		b.WriteString("I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n")
	}
	fmt.Fprintf(&b, `APP_NAME = testbed
RUN_MODE = prod
WORK_PATH = %[1]s

[database]
DB_TYPE = sqlite3
PATH = %[1]s/gitea.db

[server]
PROTOCOL = http
HTTP_ADDR = %[8]s
HTTP_PORT = %[3]d
ROOT_URL = http://%[8]s:%[3]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[2]s
APP_DATA_PATH = %[1]s/data

[repository]
ROOT = %[1]s/repositories
DEFAULT_BRANCH = main

[git]
PATH = %[7]s

[security]
INSTALL_LOCK = true
SECRET_KEY = %[4]s
INTERNAL_TOKEN = %[5]s

[oauth2]
JWT_SECRET = %[6]s

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[mailer]
ENABLED = false

[cron]
ENABLED = false

[log]
MODE = console
LEVEL = warn
ROOT_PATH = %[1]s/log

[session]
PROVIDER = memory
`, dir, tools.Source, port, secretHex(32), "testbed."+secretHex(32), secretHex(22), tools.Git, host)
	return b.String()
}

// secretHex returns n random bytes, hex encoded; crypto/rand.Read does
// not fail.
func secretHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Password returns the admin user's password.
func (g *Gitea) Password() string { return g.password }

// Token returns the admin user's API token.
func (g *Gitea) Token() string { return g.token }

// APIURL is the base URL the Gitea SDK takes.
func (g *Gitea) APIURL() string { return strings.TrimSuffix(g.URL, "/") }

// CreateRepo creates the repository name, owned by the admin user, with
// one commit on main holding files, and returns its clone URL.
func (g *Gitea) CreateRepo(ctx context.Context, name string, files map[string]string) (string, error) {
	var repo struct {
		CloneURL string `json:"clone_url"`
	}
	if err := g.api(ctx, http.MethodPost, "user/repos", false,
		map[string]any{"name": name, "default_branch": gitBranch, "auto_init": false}, &repo); err != nil {
		return "", fmt.Errorf("create repository %s: %w", name, err)
	}
	root, err := os.MkdirTemp("", "testbed-gitea-")
	if err != nil {
		return "", fmt.Errorf("create repository %s: %w", name, err)
	}
	defer os.RemoveAll(root)
	if err := CreateBareRepo(ctx, g.git, root, name, files); err != nil {
		return "", err
	}
	local, err := git.PlainOpen(filepath.Join(root, name+".git"))
	if err != nil {
		return "", fmt.Errorf("create repository %s: %w", name, err)
	}
	if _, err := local.CreateRemote(&config.RemoteConfig{Name: "gitea", URLs: []string{repo.CloneURL}}); err != nil {
		return "", fmt.Errorf("create repository %s: %w", name, err)
	}
	err = local.PushContext(ctx, &git.PushOptions{
		RemoteName: "gitea",
		RefSpecs:   []config.RefSpec{"refs/heads/" + gitBranch + ":refs/heads/" + gitBranch},
		Auth:       &githttp.BasicAuth{Username: g.Username, Password: g.password},
	})
	if err != nil {
		return "", fmt.Errorf("create repository %s: push: %w", name, err)
	}
	// Gitea takes in a push through a queue: until it has, the repository
	// counts as empty and its pull request API answers 404.
	deadline := time.Now().Add(startTimeout)
	for {
		var state struct {
			Empty bool `json:"empty"`
		}
		if err := g.api(ctx, http.MethodGet, "repos/"+g.Username+"/"+name, false, nil, &state); err != nil {
			return "", fmt.Errorf("create repository %s: %w", name, err)
		}
		if !state.Empty {
			return repo.CloneURL, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("create repository %s: still empty after the push", name)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("create repository %s: %w", name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// AddCollaborator creates the user name and gives them permission (read,
// write or admin) on the admin's repository repo, and returns a token of
// theirs: a second person on the forge, for tests of who may do what.
func (g *Gitea) AddCollaborator(ctx context.Context, repo, name, permission string) (string, error) {
	password := secretHex(16)
	if err := g.api(ctx, http.MethodPost, "admin/users", false, map[string]any{
		"username": name, "email": name + "@example.com", "password": password, "must_change_password": false,
	}, nil); err != nil {
		return "", fmt.Errorf("create user %s: %w", name, err)
	}
	if err := g.api(ctx, http.MethodPut, "repos/"+g.Username+"/"+repo+"/collaborators/"+name, false,
		map[string]any{"permission": permission}, nil); err != nil {
		return "", fmt.Errorf("add collaborator %s: %w", name, err)
	}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	as := &Gitea{URL: g.URL, Username: name, password: password}
	if err := as.api(ctx, http.MethodPost, "users/"+name+"/tokens", true,
		map[string]any{"name": "testbed", "scopes": []string{"all"}}, &tok); err != nil {
		return "", fmt.Errorf("create token of %s: %w", name, err)
	}
	return tok.SHA1, nil
}

// api calls the Gitea API at path with a JSON body, authenticating with
// the password when basic is set and the token otherwise, and decodes the
// JSON answer into out.
func (g *Gitea) api(ctx context.Context, method, path string, basic bool, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, g.URL+"api/v1/"+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if basic {
		req.SetBasicAuth(g.Username, g.password)
	} else {
		req.Header.Set("Authorization", "token "+g.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, truncate(string(answer), 300))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}

// Close stops the server. It is safe to call more than once.
func (g *Gitea) Close() error {
	if g == nil || g.proc == nil {
		return errors.New("gitea not started")
	}
	return g.proc.Stop()
}
