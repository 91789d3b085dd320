package testbed

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
)

// thanosReplicaLabel is the external label of the Prometheus behind a
// Thanos sidecar, and the replica label its query deduplicates along: the
// query's answers carry the same labels as Prometheus'.
const thanosReplicaLabel = "replica"

// EnsureThanos returns the thanos binary, built from the tools module in
// hack/tools/thanos into .cache/bin unless that binary is newer than the
// module's sources; Thanos has no Debian package. It takes the same lock
// as EnsureTools, so concurrent test binaries build it once. A cold build
// takes many minutes and reports its progress on stderr.
func EnsureThanos(ctx context.Context, repoRoot string) (string, error) {
	cacheDir := filepath.Join(repoRoot, ".cache")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(cacheDir, "testbed-tools.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	return buildTool(ctx, repoRoot, thanosTool)
}

// Thanos is a Thanos query in front of a Thanos sidecar in front of a
// Prometheus of its own, all on 127.0.0.1. The query serves the
// Prometheus query API at URL.
type Thanos struct {
	// URL is the base URL of the query, e.g. http://127.0.0.1:10902.
	URL string
	// Prometheus is the server behind the sidecar.
	Prometheus *Prometheus

	sidecar, query *Process
}

// StartThanosWithHistory writes series into dataDir/prometheus with
// WriteBlock, starts Prometheus on it with an external label, a sidecar in
// front of it and a query with the sidecar as its one store, and waits
// until the query answers from that store. opts apply to Prometheus.
func StartThanosWithHistory(ctx context.Context, tools Tools, binary, dataDir string, series []Series, opts ...Option) (*Thanos, error) {
	promDir := filepath.Join(dataDir, "prometheus")
	if err := WriteBlock(ctx, promDir, slices.Values(series)); err != nil {
		return nil, err
	}
	opts = append(opts,
		PrometheusExternalLabels(map[string]string{thanosReplicaLabel: "0"}),
		// A sidecar wants blocks of a fixed size: Prometheus does not
		// compact them then.
		PrometheusFlags("--storage.tsdb.min-block-duration=2h"))
	prom, err := StartPrometheus(ctx, tools, promDir, opts...)
	if err != nil {
		return nil, err
	}
	th := &Thanos{Prometheus: prom}
	if err := th.start(ctx, binary, dataDir, buildOptions(opts)); err != nil {
		_ = prom.Stop()
		return nil, err
	}
	return th, nil
}

// start starts the sidecar, then the query.
func (th *Thanos) start(ctx context.Context, binary, dataDir string, o options) error {
	sidecar, err := startThanosComponent(ctx, binary, dataDir, "sidecar", o,
		[]string{"--tsdb.path=" + th.Prometheus.DataDir, "--prometheus.url=" + th.Prometheus.URL},
		func(ctx context.Context, c thanosComponent) error {
			return probeHTTP(ctx, http.DefaultClient, c.url+"/-/ready", nil, http.StatusOK, "")
		})
	if err != nil {
		return err
	}
	query, err := startThanosComponent(ctx, binary, dataDir, "query", o,
		[]string{"--endpoint=" + sidecar.grpcAddr, "--query.replica-label=" + thanosReplicaLabel},
		// Ready, and the sidecar is among its stores: before that, an
		// answer would be empty.
		func(ctx context.Context, c thanosComponent) error {
			if err := probeHTTP(ctx, http.DefaultClient, c.url+"/-/ready", nil, http.StatusOK, ""); err != nil {
				return err
			}
			return probeHTTP(ctx, http.DefaultClient, c.url+"/api/v1/stores", nil, http.StatusOK, `"`+sidecar.grpcAddr+`"`)
		})
	if err != nil {
		_ = sidecar.proc.Stop()
		return err
	}
	th.sidecar, th.query, th.URL = sidecar.proc, query.proc, query.url
	return nil
}

// thanosComponent is a running Thanos component: its process, its gRPC
// address and the base URL of its HTTP server.
type thanosComponent struct {
	proc     *Process
	grpcAddr string
	url      string
}

// startThanosComponent runs `thanos <name>` on two free ports with the
// flags of args added, logging to dataDir/thanos-<name>.log, and
// waits until ready accepts it.
func startThanosComponent(ctx context.Context, binary, dataDir, name string, o options,
	args []string, ready func(context.Context, thanosComponent) error) (thanosComponent, error) {
	return startWithRetry(func() (thanosComponent, error) {
		ports, err := FreePorts(2)
		if err != nil {
			return thanosComponent{}, fmt.Errorf("start thanos %s: %w", name, err)
		}
		grpcAddr, httpAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
		all := append([]string{name, "--grpc-address=" + grpcAddr, "--http-address=" + httpAddr}, args...)
		proc, err := startProcess("thanos-"+name, binary, all, filepath.Join(dataDir, "thanos-"+name+".log"), nil, o)
		if err != nil {
			return thanosComponent{}, err
		}
		c := thanosComponent{proc: proc, grpcAddr: grpcAddr, url: "http://" + httpAddr}
		if err := proc.WaitReady(ctx, func(ctx context.Context) error { return ready(ctx, c) }); err != nil {
			return thanosComponent{}, proc.Fail(err)
		}
		return c, nil
	})
}

// StopSidecar stops the sidecar, so that the query has no store left.
func (th *Thanos) StopSidecar() error { return th.sidecar.Stop() }

// Stop stops the query, the sidecar and Prometheus.
func (th *Thanos) Stop() error {
	var first error
	for _, p := range []*Process{th.query, th.sidecar, th.Prometheus.Process()} {
		if err := p.Stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
