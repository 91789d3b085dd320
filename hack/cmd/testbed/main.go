// Command testbed runs the test bed (etcd, kube-apiserver, Prometheus and a
// git HTTP server) as background processes for a shell:
//
//	eval "$(hack/testbed up)"     # start, and export KUBECONFIG and friends
//	hack/testbed env              # print the exports again
//	hack/testbed apply FILE|DIR...
//	hack/testbed create-repo NAME [DIR]
//	hack/testbed down             # stop everything, remove the state
//	hack/testbed tools            # install and build the servers and helm only
//
// The servers' data, logs and the state file live in .cache/testbed of the
// repository. Progress goes to stderr; stdout only carries shell code.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/recommend-job/recommend-job/internal/testbed"
	testbednode "github.com/recommend-job/recommend-job/internal/testbed/node"
)

// workDirEnv names the directory hack/testbed was called from, which
// relative paths given on the command line are relative to.
const workDirEnv = "TESTBED_WORKDIR"

const usage = `usage: hack/testbed <command> [flags]

commands:
  up [--history FILE]     start the test bed in the background (or find it
                          running) and print export lines for eval; FILE is
                          OpenMetrics text with timestamps, loaded into
                          Prometheus first
  env                     print the export lines of the running test bed
  apply FILE|DIR...       server-side apply the YAML files (the *.yaml and
                          *.yml files of a directory, recursively) to the
                          test bed's apiserver, CRDs first
  create-repo NAME [DIR]  create the repository NAME on the git server with
                          the files of DIR in its first commit; prints its URL
  down                    stop the test bed and remove its data and state
  tools                   install the packages (VictoriaMetrics, docker-registry, containerd
                          and the node's too) and build kube-apiserver, helm, Gitea, Thanos
                          and the node's servers (once, with progress on stderr), and print
                          the binaries' paths; make test runs it before go
                          test so no test waits for a build
`

// state is what up leaves in .cache/testbed/state.json for the other
// commands.
type state struct {
	Dir       string                `json:"dir"`
	Env       []string              `json:"env"`
	Processes []testbed.ProcessInfo `json:"processes"`
	Git       string                `json:"git"`
	GitRoot   string                `json:"gitRoot"`
	GitURL    string                `json:"gitURL"`
	Started   time.Time             `json:"started"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "up":
		return up(ctx, args, stdout, stderr)
	case "env":
		return env(args, stdout, stderr)
	case "apply":
		return apply(ctx, args, stderr)
	case "create-repo":
		return createRepo(ctx, args, stdout)
	case "down":
		return down(ctx, args, stdout, stderr)
	case "tools":
		return ensureTools(ctx, args, stdout, stderr)
	case "serve-git":
		return serveGit(ctx, args, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// up starts the bed unless it is running already, and prints the exports.
func up(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("up", flag.ContinueOnError)
	fl.SetOutput(stderr)
	history := fl.String("history", "", "OpenMetrics `file`, with timestamps, to load into Prometheus before it starts")
	if err := parseFlags(fl, args, 0); err != nil {
		return err
	}
	dir, st, unlock, err := lockedState()
	if err != nil {
		return err
	}
	defer unlock()
	if st != nil {
		if running(st) {
			if *history != "" {
				fmt.Fprintln(stderr, "testbed: already up; --history ignored (run down first to load it)")
			}
			fmt.Fprintln(stderr, "testbed: already up")
			return printExports(stdout, st.Env)
		}
		fmt.Fprintln(stderr, "testbed: some servers of the previous test bed died; starting afresh")
		stopAll(ctx, st, stderr)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove old test bed: %w", err)
	}
	st, err = start(ctx, dir, callerPath(*history), stderr)
	if err != nil {
		return err
	}
	return printExports(stdout, st.Env)
}

// start brings up a detached bed in dir, .cache/testbed of the repository,
// and records its state.
func start(ctx context.Context, dir, history string, stderr io.Writer) (*state, error) {
	root := filepath.Dir(filepath.Dir(dir))
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	bed, err := testbed.Up(ctx, testbed.Options{
		Dir:              dir,
		RepoRoot:         root,
		HistoryFile:      history,
		Detached:         true,
		GitServerCommand: []string{exe, "serve-git"},
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "testbed: "+format+"\n", args...)
		},
	})
	if err != nil {
		return nil, err
	}
	st := &state{
		Dir:       dir,
		Env:       bed.Env(),
		Processes: bed.Processes(),
		Git:       bed.Tools.Git,
		GitRoot:   bed.Git.Root,
		GitURL:    bed.Git.BaseURL,
		Started:   time.Now().UTC(),
	}
	if err := saveState(dir, st); err != nil {
		_ = bed.Close()
		return nil, err
	}
	fmt.Fprintf(stderr, "testbed: logs and data in %s\n", dir)
	return st, nil
}

// env prints the exports of the running bed.
func env(args []string, stdout, stderr io.Writer) error {
	st, err := requireState(args, stderr)
	if err != nil {
		return err
	}
	if !running(st) {
		fmt.Fprintln(stderr, "testbed: warning: some servers are not running; run hack/testbed up")
	}
	return printExports(stdout, st.Env)
}

// apply server-side applies YAML files to the running bed's apiserver.
func apply(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: hack/testbed apply FILE|DIR [FILE|DIR ...]")
	}
	st, err := requireState(nil, io.Discard)
	if err != nil {
		return err
	}
	var kubeconfig string
	for _, kv := range st.Env {
		if k, v, _ := strings.Cut(kv, "="); k == testbed.EnvKubeconfig {
			kubeconfig = v
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load the test bed's kubeconfig: %w", err)
	}
	var manifests [][]byte
	for _, arg := range args {
		err := filepath.WalkDir(callerPath(arg), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if ext := filepath.Ext(path); path != callerPath(arg) && ext != ".yaml" && ext != ".yml" {
				return nil
			}
			data, err := os.ReadFile(path)
			manifests = append(manifests, data)
			return err
		})
		if err != nil {
			return fmt.Errorf("read manifests: %w", err)
		}
	}
	if err := testbed.Apply(ctx, cfg, manifests...); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "testbed: applied %d files\n", len(manifests))
	return nil
}

// createRepo creates a repository on the git server of the running bed.
func createRepo(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: hack/testbed create-repo NAME [DIR]")
	}
	st, err := requireState(nil, io.Discard)
	if err != nil {
		return err
	}
	files := map[string]string{}
	if len(args) == 2 {
		if files, err = readTree(callerPath(args[1])); err != nil {
			return err
		}
	}
	name := strings.TrimSuffix(args[0], ".git")
	if err := testbed.CreateBareRepo(ctx, st.Git, st.GitRoot, name, files); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, st.GitURL+name+".git")
	return err
}

// down stops the bed and removes its directory.
func down(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := parseFlags(flag.NewFlagSet("down", flag.ContinueOnError), args, 0); err != nil {
		return err
	}
	dir, st, unlock, err := lockedState()
	if err != nil {
		return err
	}
	defer unlock()
	if st == nil {
		fmt.Fprintln(stderr, "testbed: not up")
	} else {
		stopAll(ctx, st, stderr)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove test bed: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "unset %s\n", strings.Join(testbedEnvNames, " "))
	return err
}

// testbedEnvNames are the variables up exports.
var testbedEnvNames = []string{
	testbed.EnvKubeconfig, testbed.EnvPrometheusURL, testbed.EnvGitURL, testbed.EnvGitUsername, testbed.EnvGitToken,
}

// ensureTools provides the binaries and prints their paths.
func ensureTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("tools", flag.ContinueOnError)
	fl.SetOutput(stderr)
	if err := parseFlags(fl, args, 0); err != nil {
		return err
	}
	root, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	tools, err := testbed.EnsureTools(ctx, root)
	if err != nil {
		return err
	}
	// The chart and forge tests build these on first use too; building
	// them here keeps that time out of the tests' own time limits.
	helm, err := testbed.EnsureHelm(ctx, root)
	if err != nil {
		return err
	}
	gitea, err := testbed.EnsureGitea(ctx, root)
	if err != nil {
		return err
	}
	victoriaMetrics, err := testbed.EnsureVictoriaMetrics(ctx)
	if err != nil {
		return err
	}
	dockerRegistry, err := testbed.EnsureDockerRegistry(ctx)
	if err != nil {
		return err
	}
	thanos, err := testbed.EnsureThanos(ctx, root)
	if err != nil {
		return err
	}
	// The browser test loads Gitea's pages with Mermaid's bundle in them.
	mermaid, err := testbed.EnsureMermaid(ctx, root)
	if err != nil {
		return err
	}
	chromium, err := testbed.EnsureChromium(ctx)
	if err != nil {
		return err
	}
	node, err := testbednode.EnsureTools(ctx, root)
	if err != nil {
		return err
	}
	for _, t := range []struct{ name, path string }{
		{"etcd", tools.Etcd},
		{"kube-apiserver", tools.KubeAPIServer},
		{"prometheus", tools.Prometheus},
		{"git", tools.Git},
		{"helm", helm},
		{"gitea", gitea.Binary},
		{"victoria-metrics", victoriaMetrics},
		{"docker-registry", dockerRegistry},
		{"thanos", thanos},
		{"mermaid", mermaid},
		{"chromium", chromium.Binary},
		{"kubelet", node.Kubelet},
		{"kube-controller-manager", node.KubeControllerManager},
		{"kube-scheduler", node.KubeScheduler},
		{"kube-proxy", node.KubeProxy},
		{"containerd", node.Containerd},
	} {
		if _, err := fmt.Fprintf(stdout, "%s=%s\n", t.name, t.path); err != nil {
			return err
		}
	}
	return nil
}

// serveGit is the hidden command the git server runs as.
func serveGit(ctx context.Context, args []string, stderr io.Writer) error {
	fl := flag.NewFlagSet("serve-git", flag.ContinueOnError)
	fl.SetOutput(stderr)
	git := fl.String("git", "", "git binary")
	root := fl.String("root", "", "directory of the bare repositories")
	username := fl.String("username", "", "user basic auth expects")
	readyFile := fl.String("ready-file", "", "file to write the base URL to once serving")
	if err := parseFlags(fl, args, 0); err != nil {
		return err
	}
	password := os.Getenv(testbed.GitPasswordEnv)
	os.Unsetenv(testbed.GitPasswordEnv)
	if *git == "" || *root == "" || *username == "" || *readyFile == "" || password == "" {
		return fmt.Errorf("serve-git needs --git, --root, --username, --ready-file and $%s", testbed.GitPasswordEnv)
	}
	return testbed.ServeGit(ctx, testbed.Tools{Git: *git}, *root, *username, password, *readyFile, stderr)
}

// stopAll stops the bed's processes, last started first.
func stopAll(ctx context.Context, st *state, stderr io.Writer) {
	for i := len(st.Processes) - 1; i >= 0; i-- {
		p := st.Processes[i]
		if !testbed.ProcessRunning(p) {
			continue
		}
		if err := testbed.StopProcess(ctx, p); err != nil {
			fmt.Fprintf(stderr, "testbed: %v\n", err)
			continue
		}
		fmt.Fprintf(stderr, "testbed: stopped %s\n", p.Name)
	}
}

// running reports whether every process of the bed runs.
func running(st *state) bool {
	for _, p := range st.Processes {
		if !testbed.ProcessRunning(p) {
			return false
		}
	}
	return len(st.Processes) > 0
}

// requireState returns the state of the running bed or an error saying
// that it is not up.
func requireState(args []string, stderr io.Writer) (*state, error) {
	fl := flag.NewFlagSet("env", flag.ContinueOnError)
	fl.SetOutput(stderr)
	if err := parseFlags(fl, args, 0); err != nil {
		return nil, err
	}
	dir, err := stateDir()
	if err != nil {
		return nil, err
	}
	st, err := loadState(dir)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("test bed is not up; run hack/testbed up")
	}
	return st, nil
}

// printExports prints env as export lines for a POSIX shell.
func printExports(w io.Writer, env []string) error {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, err := fmt.Fprintf(w, "export %s=%s\n", k, shellQuote(v)); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lock serialises up and down through a lock file next to dir, and
// returns the function releasing it.
func lock(dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("lock test bed: %w", err)
	}
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock test bed: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock test bed: %w", err)
	}
	return func() { f.Close() }, nil
}

// stateDir returns .cache/testbed of the repository.
// lockedState takes the state lock and loads the state (nil when down).
// The caller releases the lock with unlock.
func lockedState() (dir string, st *state, unlock func(), err error) {
	if dir, err = stateDir(); err != nil {
		return "", nil, nil, err
	}
	if unlock, err = lock(dir); err != nil {
		return "", nil, nil, err
	}
	if st, err = loadState(dir); err != nil {
		unlock()
		return "", nil, nil, err
	}
	return dir, st, unlock, nil
}

func stateDir() (string, error) {
	root, err := testbed.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "testbed"), nil
}

func statePath(dir string) string {
	return filepath.Join(dir, "state.json")
}

// loadState reads the state in dir; no state is nil without error.
func loadState(dir string) (*state, error) {
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("parse state %s: %w", statePath(dir), err)
	}
	return &st, nil
}

// saveState writes the state, readable by the owner only since it holds
// the git token.
func saveState(dir string, st *state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := statePath(dir) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, statePath(dir)); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// readTree reads the regular files below dir, .git excluded, keyed by
// slash separated relative path.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return files, nil
}

// callerPath resolves a relative path against the directory hack/testbed
// was called from.
func callerPath(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	if wd := os.Getenv(workDirEnv); wd != "" {
		return filepath.Join(wd, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return abs
}

// parseFlags parses args and rejects more than maxArgs positional
// arguments.
func parseFlags(fl *flag.FlagSet, args []string, maxArgs int) error {
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > maxArgs {
		return fmt.Errorf("%s: unexpected arguments %q", fl.Name(), fl.Args())
	}
	return nil
}
