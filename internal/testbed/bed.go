package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Environment variables describing a bed, as returned by Bed.Env.
const (
	EnvKubeconfig    = "KUBECONFIG"
	EnvPrometheusURL = "PROMETHEUS_URL"
	EnvGitURL        = "GIT_URL"
	EnvGitUsername   = "GIT_USERNAME"
	EnvGitToken      = "GIT_TOKEN"
)

// DefaultGitUsername is the git user when Options.GitUsername is empty.
const DefaultGitUsername = "testbed"

// Options configure Up.
type Options struct {
	// Dir holds the servers' data and logs. Required.
	Dir string
	// Tools are the binaries to run. When nil, EnsureTools provides them
	// for RepoRoot.
	Tools *Tools
	// RepoRoot is the repository root passed to EnsureTools; empty means
	// the result of RepoRoot().
	RepoRoot string
	// History is written into Prometheus's TSDB before it starts.
	History []Series
	// HistoryFile, if set, is an OpenMetrics file (see ReadOpenMetrics)
	// written into Prometheus's TSDB before it starts.
	HistoryFile string
	// GitUsername is the git server's user; empty means
	// DefaultGitUsername.
	GitUsername string
	// GitPassword is the git server's password or token; empty means a
	// random one.
	GitPassword string
	// Detached lets the server processes outlive the caller.
	Detached bool
	// GitServerCommand, if set, runs the git server as a process instead
	// of in the caller: the command is run with the flags --git, --root,
	// --username and --ready-file and the password in $TESTBED_GIT_PASSWORD,
	// and must call ServeGit with them.
	GitServerCommand []string
	// Node, if set, is started beside the apiserver, which then serves it
	// (see package node).
	Node Node
	// Logf, if set, receives progress messages. They never hold
	// credentials.
	Logf func(format string, args ...any)
}

// Bed is a running set of servers: etcd with kube-apiserver, Prometheus and
// a git server.
type Bed struct {
	// Dir holds the servers' data and logs.
	Dir string
	// Tools are the binaries the bed runs.
	Tools Tools
	// Etcd backs APIServer.
	Etcd *Etcd
	// APIServer serves the Kubernetes API.
	APIServer *APIServer
	// Prometheus serves the backfilled history.
	Prometheus *Prometheus
	// Git serves the repositories.
	Git *GitServer
	// node is Options.Node, stopped first by Close.
	node Node

	gitLog *os.File
}

// Node is a Kubernetes node that Up starts beside the apiserver, to run
// pods; package node provides one.
type Node interface {
	// Prepare readies the host, with dir for the node's files, before the
	// bed's servers start, and returns the options they start with (see
	// NodeAPIServer and BindAddress).
	Prepare(ctx context.Context, repoRoot, dir string) ([]Option, error)
	// Start starts the node against the running apiserver, its processes
	// with opts, and returns once the node is ready for pods.
	Start(ctx context.Context, repoRoot string, api *APIServer, opts []Option) error
	// Stop stops the node while the apiserver still runs and leaves the
	// host as Prepare found it. It is safe to call more than once, and
	// after a failed Prepare.
	Stop(ctx context.Context) error
}

// Up starts a bed in opts.Dir: etcd and kube-apiserver one after the other,
// Prometheus (with any history backfilled first) and the git server
// alongside. On failure whatever started is stopped again.
func Up(ctx context.Context, opts Options) (*Bed, error) {
	if opts.Dir == "" {
		return nil, errors.New("test bed: no directory given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("test bed: %w", err)
	}
	if opts.HistoryFile != "" {
		if _, err := os.Stat(opts.HistoryFile); err != nil {
			return nil, fmt.Errorf("test bed: history: %w", err)
		}
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	start := time.Now()
	tools, err := toolsFor(ctx, opts)
	if err != nil {
		return nil, err
	}
	logf("tools ready after %s", since(start))

	var o []Option
	if opts.Detached {
		o = append(o, Detached())
	}
	b := &Bed{Dir: dir, Tools: tools}
	if opts.Node != nil {
		nodeOpts, err := opts.Node.Prepare(ctx, repoRootFor(opts), filepath.Join(dir, "node"))
		if err != nil {
			return nil, fmt.Errorf("test bed: %w", err)
		}
		b.node = opts.Node
		o = append(o, nodeOpts...)
	}
	var wg sync.WaitGroup
	var promErr, gitErr error
	wg.Go(func() { promErr = b.startPrometheus(ctx, opts, o, logf) })
	wg.Go(func() { gitErr = b.startGit(ctx, opts, o, logf) })
	kubeErr := b.startKubernetes(ctx, o, logf)
	wg.Wait()
	if err := errors.Join(kubeErr, promErr, gitErr); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("test bed: %w", err)
	}
	if b.node != nil {
		start := time.Now()
		if err := b.node.Start(ctx, repoRootFor(opts), b.APIServer, o); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("test bed: node: %w", err)
		}
		logf("node ready after %s", since(start))
	}
	logf("test bed up in %s", since(start))
	return b, nil
}

// repoRootFor returns opts.RepoRoot or, when empty, RepoRoot's answer
// (empty when there is none: the callers' builds then fail saying so).
func repoRootFor(opts Options) string {
	if opts.RepoRoot != "" {
		return opts.RepoRoot
	}
	root, _ := RepoRoot()
	return root
}

// toolsFor returns opts.Tools or what EnsureTools finds.
func toolsFor(ctx context.Context, opts Options) (Tools, error) {
	if opts.Tools != nil {
		return *opts.Tools, nil
	}
	root := opts.RepoRoot
	if root == "" {
		var err error
		if root, err = RepoRoot(); err != nil {
			return Tools{}, fmt.Errorf("test bed: %w", err)
		}
	}
	tools, err := EnsureTools(ctx, root)
	if err != nil {
		return Tools{}, fmt.Errorf("test bed: tools: %w", err)
	}
	return tools, nil
}

func (b *Bed) startKubernetes(ctx context.Context, o []Option, logf func(string, ...any)) error {
	start := time.Now()
	etcd, err := StartEtcd(ctx, b.Tools, filepath.Join(b.Dir, "etcd"), o...)
	if err != nil {
		return err
	}
	b.Etcd = etcd
	logf("etcd ready at %s after %s", etcd.URL, since(start))
	apiServer, err := StartAPIServer(ctx, b.Tools, etcd.URL, filepath.Join(b.Dir, "kube-apiserver"), o...)
	if err != nil {
		return err
	}
	b.APIServer = apiServer
	logf("kube-apiserver ready at %s after %s", apiServer.URL, since(start))
	return nil
}

func (b *Bed) startPrometheus(ctx context.Context, opts Options, o []Option, logf func(string, ...any)) error {
	start := time.Now()
	dataDir := filepath.Join(b.Dir, "prometheus")
	if opts.HistoryFile != "" {
		series, err := readOpenMetricsFile(opts.HistoryFile)
		if err != nil {
			return err
		}
		if err := WriteBlock(ctx, dataDir, slices.Values(series)); err != nil {
			return fmt.Errorf("history %s: %w", filepath.Base(opts.HistoryFile), err)
		}
	}
	p, err := StartPrometheusWithHistory(ctx, b.Tools, dataDir, opts.History, o...)
	if err != nil {
		return err
	}
	b.Prometheus = p
	logf("prometheus ready at %s after %s", p.URL, since(start))
	return nil
}

func (b *Bed) startGit(ctx context.Context, opts Options, o []Option, logf func(string, ...any)) error {
	start := time.Now()
	username, password := opts.GitUsername, opts.GitPassword
	if username == "" {
		username = DefaultGitUsername
	}
	if password == "" {
		var err error
		if password, err = randomHex(20); err != nil {
			return fmt.Errorf("start git server: %w", err)
		}
	}
	dir := filepath.Join(b.Dir, "git")
	root := filepath.Join(dir, "repos")
	var err error
	if len(opts.GitServerCommand) > 0 {
		b.Git, err = startExternalGitServer(ctx, opts.GitServerCommand, b.Tools, root, username, password, buildOptions(o))
	} else {
		b.Git, err = b.startInProcessGit(ctx, dir, root, username, password, o)
	}
	if err != nil {
		return err
	}
	logf("git server ready at %s after %s", b.Git.BaseURL, since(start))
	return nil
}

func (b *Bed) startInProcessGit(ctx context.Context, dir, root, username, password string, o []Option) (*GitServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "git-server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	s, err := StartGitServer(ctx, b.Tools, root, username, password, append(o, GitLog(logFile))...)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	b.gitLog = logFile
	return s, nil
}

// Env describes the bed as environment variables: KUBECONFIG,
// PROMETHEUS_URL, GIT_URL (the git server's base URL), GIT_USERNAME and
// GIT_TOKEN.
func (b *Bed) Env() []string {
	return []string{
		EnvKubeconfig + "=" + b.APIServer.KubeconfigPath,
		EnvPrometheusURL + "=" + b.Prometheus.URL,
		EnvGitURL + "=" + b.Git.BaseURL,
		EnvGitUsername + "=" + b.Git.Username,
		EnvGitToken + "=" + b.Git.Password(),
	}
}

// Processes describes the bed's server processes, in start order. An
// in-process git server is not among them.
func (b *Bed) Processes() []ProcessInfo {
	var infos []ProcessInfo
	for _, p := range []*Process{b.etcdProc(), b.apiServerProc(), b.prometheusProc(), b.gitProc()} {
		if p != nil {
			infos = append(infos, p.Info())
		}
	}
	return infos
}

func (b *Bed) etcdProc() *Process {
	if b.Etcd == nil {
		return nil
	}
	return b.Etcd.Process()
}

func (b *Bed) apiServerProc() *Process {
	if b.APIServer == nil {
		return nil
	}
	return b.APIServer.Process()
}

func (b *Bed) prometheusProc() *Process {
	if b.Prometheus == nil {
		return nil
	}
	return b.Prometheus.Process()
}

func (b *Bed) gitProc() *Process {
	if b.Git == nil {
		return nil
	}
	return b.Git.Process()
}

// Close stops every server of the bed and waits for them to exit;
// kube-apiserver stops before etcd. It is safe to call more than once.
func (b *Bed) Close() error {
	// The node goes first: its pods are deleted through the apiserver.
	var nodeErr error
	if b.node != nil {
		nodeErr = b.node.Stop(context.Background())
	}
	var wg sync.WaitGroup
	var kubeErr, promErr, gitErr error
	wg.Go(func() {
		if b.Prometheus != nil {
			promErr = b.Prometheus.Stop()
		}
	})
	wg.Go(func() {
		if b.Git != nil {
			gitErr = b.Git.Close()
		}
	})
	if b.APIServer != nil {
		kubeErr = b.APIServer.Stop()
	}
	if b.Etcd != nil {
		kubeErr = errors.Join(kubeErr, b.Etcd.Stop())
	}
	wg.Wait()
	if b.gitLog != nil {
		_ = b.gitLog.Close()
	}
	return errors.Join(nodeErr, kubeErr, promErr, gitErr)
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}

// readOpenMetricsFile reads the OpenMetrics file at path.
func readOpenMetricsFile(path string) ([]Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	series, err := ReadOpenMetrics(f)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", filepath.Base(path), err)
	}
	return series, nil
}
