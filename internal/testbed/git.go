package testbed

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	// GitPasswordEnv is the environment variable through which Up hands
	// the git password to an external git server process.
	GitPasswordEnv = "TESTBED_GIT_PASSWORD"
	// GitAuthor is the author and committer of the commits CreateRepo
	// makes.
	GitAuthor = "testbed <testbed@example.com>"
	// gitBranch is the branch CreateRepo commits to.
	gitBranch = "main"
	// maxChunkedBody bounds a chunked request body, which the CGI handler
	// needs buffered.
	maxChunkedBody = 256 << 20
)

// GitServer serves the bare repositories under Root over smart HTTP with
// git http-backend. Every request needs basic auth with the server's
// username and password (a token may stand in for the password), and
// pushes are accepted.
type GitServer struct {
	// BaseURL is the server's URL with a trailing slash; the repository
	// <name> is served at BaseURL + name + ".git".
	BaseURL string
	// Root holds the bare repositories, <Root>/<name>.git.
	Root string
	// Username is the user basic auth expects.
	Username string

	password string
	git      string
	server   *http.Server
	serveErr chan error
	proc     *Process

	closeOnce sync.Once
	closeErr  error
}

// StartGitServer starts an in-process git server on a free loopback port
// for the repositories under root.
func StartGitServer(ctx context.Context, tools Tools, root, username, password string, opts ...Option) (*GitServer, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	if username == "" || password == "" {
		return nil, errors.New("start git server: username and password must not be empty")
	}
	if tools.Git == "" {
		return nil, errors.New("start git server: no git binary given; see EnsureTools")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	o := buildOptions(opts)
	s := &GitServer{
		BaseURL:  fmt.Sprintf("http://%s/", l.Addr()),
		Root:     root,
		Username: username,
		password: password,
		git:      tools.Git,
		serveErr: make(chan error, 1),
	}
	s.server = &http.Server{
		Handler:           NewGitHandler(tools.Git, root, username, password, o.gitLog),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(o.gitLog, "git server: ", log.LstdFlags),
	}
	go func() { s.serveErr <- s.server.Serve(l) }()
	return s, nil
}

// URL returns the clone URL of the repository name.
func (s *GitServer) URL(name string) string {
	return s.BaseURL + strings.TrimSuffix(name, ".git") + ".git"
}

// Password returns the password (or token) basic auth expects.
func (s *GitServer) Password() string {
	return s.password
}

// CreateRepo creates the bare repository <Root>/<name>.git with one commit
// on main holding files (path to content, slash separated) and returns its
// clone URL. name may contain slashes, e.g. "org/fleet".
func (s *GitServer) CreateRepo(ctx context.Context, name string, files map[string]string) (string, error) {
	if err := CreateBareRepo(ctx, s.git, s.Root, name, files); err != nil {
		return "", err
	}
	return s.URL(name), nil
}

// Process returns the server process when the server runs as an external
// process, nil when it runs in this process.
func (s *GitServer) Process() *Process {
	return s.proc
}

// Close stops the server. It is safe to call more than once.
func (s *GitServer) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *GitServer) close() error {
	if s.proc != nil {
		return s.proc.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.server.Shutdown(ctx); err != nil {
		_ = s.server.Close()
	}
	if err := <-s.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("git server: %w", err)
	}
	return nil
}

// ServeGit runs an in-process git server until ctx ends, logging to logw.
// Once the server accepts requests its base URL is written to readyFile.
// It is the body of the external git server that Up starts with
// Options.GitServerCommand.
func ServeGit(ctx context.Context, tools Tools, root, username, password, readyFile string, logw io.Writer) error {
	s, err := StartGitServer(ctx, tools, root, username, password, GitLog(logw))
	if err != nil {
		return err
	}
	if err := writeFileAtomic(readyFile, []byte(s.BaseURL)); err != nil {
		_ = s.Close()
		return fmt.Errorf("serve git: %w", err)
	}
	select {
	case <-ctx.Done():
	case err := <-s.serveErr:
		s.serveErr <- err
	}
	return s.Close()
}

// startExternalGitServer runs command (with the flags --git, --root,
// --username and --ready-file, and the password in GitPasswordEnv) as a
// server process and waits until it serves.
func startExternalGitServer(ctx context.Context, command []string, tools Tools, root, username, password string, o options) (*GitServer, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	dir := filepath.Dir(root)
	readyFile := filepath.Join(dir, "git-server.url")
	_ = os.Remove(readyFile)
	args := append(command[1:len(command):len(command)],
		"--git="+tools.Git, "--root="+root, "--username="+username, "--ready-file="+readyFile)
	env := append(os.Environ(), GitPasswordEnv+"="+password)
	proc, err := startProcess("git-server", command[0], args, filepath.Join(dir, "git-server.log"), env, o)
	if err != nil {
		return nil, err
	}
	s := &GitServer{Root: root, Username: username, password: password, git: tools.Git, proc: proc}
	ready := func(ctx context.Context) error {
		if s.BaseURL == "" {
			url, err := os.ReadFile(readyFile)
			if err != nil {
				return err
			}
			s.BaseURL = string(url)
		}
		return probeHTTP(ctx, http.DefaultClient, s.BaseURL, nil, http.StatusUnauthorized, "")
	}
	if err := proc.WaitReady(ctx, ready); err != nil {
		return nil, proc.Fail(err)
	}
	return s, nil
}

// gitHandler checks basic auth and hands requests to git http-backend.
type gitHandler struct {
	git      string
	root     string
	username []byte
	password []byte
	log      *log.Logger
	stderr   io.Writer
}

// NewGitHandler returns an http.Handler serving the bare repositories under
// root through git http-backend, for clients authenticating with username
// and password. Requests and the backend's output are logged to logw,
// without credentials.
func NewGitHandler(gitPath, root, username, password string, logw io.Writer) http.Handler {
	if logw == nil {
		logw = io.Discard
	}
	return &gitHandler{
		git:      gitPath,
		root:     root,
		username: []byte(username),
		password: []byte(password),
		log:      log.New(logw, "git server: ", log.LstdFlags),
		stderr:   &lockedWriter{w: logw},
	}
}

func (h *gitHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || !h.authorized(user, pass) {
		h.log.Printf("%s %s: 401 (credentials missing or wrong)", r.Method, r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Basic realm="testbed"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	r = r.Clone(r.Context())
	// The backend needs no credentials; keep them out of its environment.
	r.Header.Del("Authorization")
	if err := unchunkBody(r); err != nil {
		h.log.Printf("%s %s: 400 (%v)", r.Method, r.URL.Path, err)
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	h.log.Printf("%s %s", r.Method, r.URL.RequestURI())
	backend := &cgi.Handler{
		Path: h.git,
		Args: []string{"http-backend"},
		Dir:  h.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + h.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"REMOTE_USER=" + user,
			// Accept pushes into every repository, including those not
			// made by CreateRepo.
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
		},
		Logger: h.log,
		Stderr: h.stderr,
	}
	backend.ServeHTTP(w, r)
}

// authorized compares the credentials in constant time.
func (h *gitHandler) authorized(user, pass string) bool {
	userOK := subtle.ConstantTimeCompare([]byte(user), h.username)
	passOK := subtle.ConstantTimeCompare([]byte(pass), h.password)
	return userOK&passOK == 1
}

// unchunkBody buffers a chunked request body, which net/http/cgi refuses;
// git sends pushes larger than http.postBuffer chunked.
func unchunkBody(r *http.Request) error {
	if len(r.TransferEncoding) == 0 || r.TransferEncoding[0] != "chunked" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxChunkedBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxChunkedBody {
		return fmt.Errorf("chunked body larger than %d bytes", maxChunkedBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	return nil
}

// lockedWriter serialises writes of concurrent backends.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// CreateBareRepo creates the bare repository <root>/<name>.git with one
// commit on main, authored by GitAuthor, holding files (slash separated
// path to content). With no files the commit is empty.
func CreateBareRepo(ctx context.Context, gitPath, root, name string, files map[string]string) error {
	name = strings.TrimSuffix(name, ".git")
	if name == "" || !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("create repository: invalid name %q", name)
	}
	repo := filepath.Join(root, filepath.FromSlash(name)+".git")
	if _, err := os.Stat(repo); err == nil {
		return fmt.Errorf("create repository %s: %w", name, fs.ErrExist)
	}
	work, err := os.MkdirTemp("", "testbed-repo-")
	if err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	if err := writeTree(tree, files); err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	g := gitRunner{git: gitPath, env: gitEnv(filepath.Join(work, "index"))}
	steps := [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=" + gitBranch, repo},
		{"--git-dir=" + repo, "config", "http.receivepack", "true"},
		{"--git-dir=" + repo, "--work-tree=" + tree, "add", "--all"},
		{"--git-dir=" + repo, "--work-tree=" + tree, "commit", "--quiet", "--allow-empty", "--message=initial commit"},
	}
	for _, args := range steps {
		if err := g.run(ctx, args...); err != nil {
			_ = os.RemoveAll(repo)
			return fmt.Errorf("create repository %s: %w", name, err)
		}
	}
	// The commit left COMMIT_EDITMSG behind, as a clone would not.
	_ = os.Remove(filepath.Join(repo, "COMMIT_EDITMSG"))
	return nil
}

// writeTree writes files below dir.
func writeTree(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		rel := filepath.FromSlash(name)
		if !filepath.IsLocal(rel) || isGitPath(rel) {
			return fmt.Errorf("invalid file name %q", name)
		}
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// isGitPath reports whether a relative path lies in a .git directory.
func isGitPath(rel string) bool {
	for part := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}

// gitEnv returns an environment that shields git from the caller's git
// configuration and repository variables and sets the test bed's identity.
func gitEnv(indexFile string) []string {
	name, email, _ := strings.Cut(strings.TrimSuffix(GitAuthor, ">"), " <")
	return append(EnvironWithout("GIT_"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_INDEX_FILE="+indexFile,
		"GIT_AUTHOR_NAME="+name,
		"GIT_AUTHOR_EMAIL="+email,
		"GIT_COMMITTER_NAME="+name,
		"GIT_COMMITTER_EMAIL="+email,
	)
}

// gitRunner runs git commands.
type gitRunner struct {
	git string
	env []string
}

func (g gitRunner) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, g.git, args...)
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w\n%s", subcommand(args), err, tailLines(string(out), logTailLines))
	}
	return nil
}

// subcommand returns the first argument that is not an option.
func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so that readers never see a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
