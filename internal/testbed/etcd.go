package testbed

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
)

// Etcd is an etcd server listening on 127.0.0.1.
type Etcd struct {
	// URL is the client URL, e.g. http://127.0.0.1:2379.
	URL string
	// Dir holds the data directory and etcd.log.
	Dir string

	proc *Process
}

// StartEtcd starts a single-member etcd with its data and log in dir and
// waits until it reports healthy.
func StartEtcd(ctx context.Context, tools Tools, dir string, opts ...Option) (*Etcd, error) {
	return startWithRetry(func() (*Etcd, error) { return startEtcd(ctx, tools, dir, opts...) })
}

func startEtcd(ctx context.Context, tools Tools, dir string, opts ...Option) (*Etcd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	args := []string{
		"--name=testbed",
		"--data-dir=" + filepath.Join(dir, "data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testbed=" + peerURL,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-outputs=stderr",
	}
	// etcd reads its flags from ETCD_* variables too; keep the caller's out.
	env := EnvironWithout("ETCD_")
	proc, err := startProcess("etcd", tools.Etcd, args, filepath.Join(dir, "etcd.log"), env, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	healthy := func(ctx context.Context) error {
		return probeHTTP(ctx, http.DefaultClient, clientURL+"/health", nil, http.StatusOK, `"health":"true"`)
	}
	if err := proc.WaitReady(ctx, healthy); err != nil {
		return nil, proc.Fail(err)
	}
	return &Etcd{URL: clientURL, Dir: dir, proc: proc}, nil
}

// Process returns the etcd process.
func (e *Etcd) Process() *Process {
	return e.proc
}

// Stop stops etcd.
func (e *Etcd) Stop() error {
	return e.proc.Stop()
}
