package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// startTimeout bounds how long a server may take to become ready,
	// whatever the caller's context says.
	startTimeout = 2 * time.Minute
	// stopGrace is how long a server gets between SIGTERM and SIGKILL.
	stopGrace = 10 * time.Second
	// pollInterval is the pause between two readiness probes.
	pollInterval = 100 * time.Millisecond
	// logTailLines is how many log lines a start error carries.
	logTailLines = 25
)

// Option changes how the Start functions run their servers.
type Option func(*options)

type options struct {
	detached       bool
	gitLog         io.Writer
	prometheusArgs []string
	// externalLabels are Prometheus' external labels, which a Thanos
	// sidecar requires.
	externalLabels map[string]string
	// giteaFrontend gives Gitea the stand-in frontend (GiteaFrontend).
	giteaFrontend bool
	// node makes kube-apiserver serve a node (see NodeAPIServer).
	node *nodeAPIServer
	// bindAddress is the address Prometheus and Gitea listen on; empty
	// means 127.0.0.1.
	bindAddress string
}

// host is the address the servers listen on.
func (o options) host() string {
	if o.bindAddress != "" {
		return o.bindAddress
	}
	return "127.0.0.1"
}

// BindAddress makes Prometheus and Gitea listen on addr instead of
// 127.0.0.1: a node's address, for its pods to reach them.
func BindAddress(addr string) Option {
	return func(o *options) { o.bindAddress = addr }
}

func buildOptions(opts []Option) options {
	o := options{gitLog: io.Discard}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Detached lets server processes outlive the process that started them.
// Without it they are killed when their parent dies.
func Detached() Option {
	return func(o *options) { o.detached = true }
}

// PrometheusFlags adds flags to Prometheus' command line, e.g.
// --query.max-samples=1000 for a strict server.
func PrometheusFlags(flags ...string) Option {
	return func(o *options) { o.prometheusArgs = append(o.prometheusArgs, flags...) }
}

// PrometheusExternalLabels gives Prometheus external labels, which a
// Thanos sidecar in front of it requires to tell its data from others'.
func PrometheusExternalLabels(labels map[string]string) Option {
	return func(o *options) { o.externalLabels = labels }
}

// GitLog makes an in-process git server write its request log and the
// output of git http-backend to w. Credentials are never logged.
func GitLog(w io.Writer) Option {
	return func(o *options) {
		if w != nil {
			o.gitLog = w
		}
	}
}

// ProcessInfo identifies a server process, so that a later command can stop
// a process started in Detached mode.
type ProcessInfo struct {
	// Name is the server's name, e.g. "etcd".
	Name string `json:"name"`
	// PID is the process id; the process leads its own process group.
	PID int `json:"pid"`
	// Path is the executable the process was started from.
	Path string `json:"path"`
	// LogPath is the file holding the process's stdout and stderr.
	LogPath string `json:"logPath"`
}

// Process is a server process started by the test bed.
type Process struct {
	info ProcessInfo
	done chan struct{}
	err  error
}

// StartProcess starts path with args in its own session, as the bed's
// servers start with opts (see Detached), appending its output to
// logPath. env nil means the current environment.
func StartProcess(name, path string, args []string, logPath string, env []string, opts ...Option) (*Process, error) {
	return startProcess(name, path, args, logPath, env, buildOptions(opts))
}

// startProcess starts path with args in its own session, appending its
// output to logPath. env nil means the current environment.
func startProcess(name, path string, args []string, logPath string, env []string, o options) (*Process, error) {
	if path == "" {
		return nil, fmt.Errorf("start %s: no binary given; see EnsureTools", name)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close()

	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr(o.detached)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{
		info: ProcessInfo{Name: name, PID: cmd.Process.Pid, Path: path, LogPath: logPath},
		done: make(chan struct{}),
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Info describes the process.
func (p *Process) Info() ProcessInfo {
	return p.info
}

// Stop terminates the process group: SIGTERM, then SIGKILL after a grace
// period. It returns once the process has exited and is safe to call more
// than once.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		// Stopped before, or died: its pid may belong to another process
		// by now, so leave the group alone.
		return nil
	default:
	}
	killGroup(p.info.PID, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		killGroup(p.info.PID, syscall.SIGKILL)
		<-p.done
	}
	// Leftover members of the group, e.g. CGI children of the git server.
	// While members are left the kernel keeps the group id from reuse.
	killGroup(p.info.PID, syscall.SIGKILL)
	return nil
}

// ExitError reports how the process ended, or nil while it runs.
func (p *Process) ExitError() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return nil
	}
}

// LogTail returns the last lines of the process's log, formatted to be
// appended to an error message.
func (p *Process) LogTail() string {
	tail, err := readTail(p.info.LogPath, logTailLines)
	if err != nil || tail == "" {
		return ""
	}
	return fmt.Sprintf("\n--- last lines of %s ---\n%s", p.info.LogPath, tail)
}

// Fail stops the process and wraps err with the tail of its log.
func (p *Process) Fail(err error) error {
	_ = p.Stop()
	return fmt.Errorf("start %s: %w%s", p.info.Name, err, p.LogTail())
}

// WaitReady polls check until it succeeds, the process exits or the
// context (bounded by startTimeout) ends.
func (p *Process) WaitReady(ctx context.Context, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("process exited before it was ready: %w", p.ExitError())
		case <-ctx.Done():
			return fmt.Errorf("not ready (last probe: %w): %w", last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// StopProcess stops a process described by info, typically started in
// Detached mode by an earlier command. A process that is gone already, or
// whose pid now belongs to another program, is left alone.
func StopProcess(ctx context.Context, info ProcessInfo) error {
	if !processAlive(info) {
		return nil
	}
	killGroup(info.PID, syscall.SIGTERM)
	deadline := time.Now().Add(stopGrace)
	for processAlive(info) {
		if time.Now().After(deadline) {
			killGroup(info.PID, syscall.SIGKILL)
			deadline = time.Now().Add(stopGrace)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop %s (pid %d): %w", info.Name, info.PID, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
	killGroup(info.PID, syscall.SIGKILL)
	return nil
}

// ProcessRunning reports whether the process described by info still runs.
func ProcessRunning(info ProcessInfo) bool {
	return processAlive(info)
}

func processAlive(info ProcessInfo) bool {
	if info.PID <= 0 {
		return false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return processMatches(info.PID, info.Path)
}

// killGroup signals the process group led by pid. Errors (typically ESRCH
// for a group that is gone) are of no interest to the callers.
func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// readTail returns the last n lines of the file at path.
func readTail(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	const maxBytes = 16 << 10
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(st.Size()-maxBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), nil
}

// FreePorts returns n distinct TCP ports that are free on 127.0.0.1. They
// are drawn from below the kernel's ephemeral range, so that the outgoing
// connections of everything else running meanwhile cannot take a port
// between this check and the server's bind; only another test bed drawing
// the same port could, and startWithRetry covers that.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for attempt := 0; len(ports) < n; attempt++ {
		if attempt > 1000 {
			return nil, errors.New("find free port: none free in the range")
		}
		p := portRangeStart + rand.IntN(portRangeEnd-portRangeStart)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// The ports test beds use: below Linux's default ephemeral range (32768 up).
const (
	portRangeStart = 20000
	portRangeEnd   = 32000
)

// startWithRetry starts a server, drawing new ports and starting again
// when the ports it drew were taken before it bound them.
func startWithRetry[T any](start func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range 3 {
		v, err = start()
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			return v, err
		}
	}
	return v, err
}

// probeHTTP sends a GET to url with client and checks the status code and,
// when want is not empty, that the body contains want.
func probeHTTP(ctx context.Context, client *http.Client, url string, header http.Header, status int, want string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("GET %s: status %d, want %d", req.URL.Path, resp.StatusCode, status)
	}
	if want != "" && !bytes.Contains(body, []byte(want)) {
		return fmt.Errorf("GET %s: body %q does not contain %q", req.URL.Path, truncate(string(body), 200), want)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// EnvironWithout returns the current environment without the variables
// whose names start with one of the prefixes.
func EnvironWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
				break
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}
