package testbed

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	// prometheusRetention keeps backfilled history, which Prometheus
	// measures from the newest sample rather than from now.
	prometheusRetention = "3650d"
	// prometheusConfig is a configuration without scrape targets: the
	// only data is what is backfilled.
	prometheusConfig = "global:\n  scrape_interval: 1m\n  evaluation_interval: 1m\n"
)

// Prometheus is a Prometheus server listening on 127.0.0.1 without scrape
// targets. Its admin API is enabled, so tests may delete series.
type Prometheus struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:9090.
	URL string
	// DataDir is the TSDB directory; it also holds prometheus.yml and
	// prometheus.log.
	DataDir string

	tools Tools
	addr  string
	opts  options
	proc  *Process
}

// StartPrometheus starts Prometheus on the TSDB in dataDir and waits until
// it is ready. Blocks written into dataDir before are served.
func StartPrometheus(ctx context.Context, tools Tools, dataDir string, opts ...Option) (*Prometheus, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("start prometheus: %w", err)
	}
	o := buildOptions(opts)
	if err := os.WriteFile(filepath.Join(dataDir, "prometheus.yml"), []byte(prometheusConfigWith(o.externalLabels)), 0o644); err != nil {
		return nil, fmt.Errorf("start prometheus: write config: %w", err)
	}
	return startWithRetry(func() (*Prometheus, error) {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, fmt.Errorf("start prometheus: %w", err)
		}
		addr := net.JoinHostPort(o.host(), strconv.Itoa(ports[0]))
		p := &Prometheus{URL: "http://" + addr, DataDir: dataDir, tools: tools, addr: addr, opts: o}
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		return p, nil
	})
}

// prometheusConfigWith returns prometheusConfig with external labels, in
// sorted order so that the file is the same each time.
func prometheusConfigWith(labels map[string]string) string {
	if len(labels) == 0 {
		return prometheusConfig
	}
	var b strings.Builder
	b.WriteString(prometheusConfig + "  external_labels:\n")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "    %s: %s\n", k, strconv.Quote(labels[k]))
	}
	return b.String()
}

// StartPrometheusWithHistory writes series into dataDir with WriteBlock
// and starts Prometheus on it.
func StartPrometheusWithHistory(ctx context.Context, tools Tools, dataDir string, series []Series, opts ...Option) (*Prometheus, error) {
	if err := WriteBlock(ctx, dataDir, slices.Values(series)); err != nil {
		return nil, err
	}
	return StartPrometheus(ctx, tools, dataDir, opts...)
}

// start runs the server on p.addr and waits until it is ready.
func (p *Prometheus) start(ctx context.Context) error {
	args := []string{
		"--config.file=" + filepath.Join(p.DataDir, "prometheus.yml"),
		"--storage.tsdb.path=" + p.DataDir,
		"--storage.tsdb.retention.time=" + prometheusRetention,
		// Leave written blocks as they are rather than compacting them
		// in the background, which on a small machine competes with the
		// tests for CPU.
		"--storage.tsdb.max-block-duration=2h",
		"--web.listen-address=" + p.addr,
		"--web.enable-admin-api",
	}
	args = append(args, p.opts.prometheusArgs...)
	proc, err := startProcess("prometheus", p.tools.Prometheus, args, filepath.Join(p.DataDir, "prometheus.log"), nil, p.opts)
	if err != nil {
		return err
	}
	ready := func(ctx context.Context) error {
		return probeHTTP(ctx, http.DefaultClient, p.URL+"/-/ready", nil, http.StatusOK, "")
	}
	if err := proc.WaitReady(ctx, ready); err != nil {
		return proc.Fail(err)
	}
	p.proc = proc
	return nil
}

// LoadHistory loads series into the running server: it stops Prometheus,
// since the TSDB only looks for new blocks now and then, writes them as a
// block into the data directory with WriteBlock and starts Prometheus
// again on the same address.
func (p *Prometheus) LoadHistory(ctx context.Context, series []Series) error {
	if err := p.Stop(); err != nil {
		return err
	}
	if err := WriteBlock(ctx, p.DataDir, slices.Values(series)); err != nil {
		return err
	}
	return p.start(ctx)
}

// Process returns the Prometheus process.
func (p *Prometheus) Process() *Process {
	return p.proc
}

// Stop stops Prometheus.
func (p *Prometheus) Stop() error {
	return p.proc.Stop()
}
