package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// victoriaMetricsPackage is the Debian package of VictoriaMetrics'
// single-node server, victoria-metrics.
const victoriaMetricsPackage = "victoria-metrics"

// EnsureVictoriaMetrics returns the victoria-metrics binary, installing
// its Debian package when it is missing and the process runs as root.
func EnsureVictoriaMetrics(ctx context.Context) (string, error) {
	if path, err := lookPath(victoriaMetricsPackage); err == nil {
		return path, nil
	}
	if err := installPackages(ctx, []string{victoriaMetricsPackage}); err != nil {
		return "", err
	}
	return lookPath(victoriaMetricsPackage)
}

// VictoriaMetrics is a single-node VictoriaMetrics server listening on
// 127.0.0.1, which serves the Prometheus query API at URL.
type VictoriaMetrics struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:8428.
	URL string
	// DataDir holds its storage and victoria-metrics.log.
	DataDir string

	proc *Process
}

// StartVictoriaMetrics starts binary on dataDir with the flags of args
// added (e.g. -search.maxSamplesPerQuery=1000), and waits until it is
// healthy. History older than a month is kept (-retentionPeriod=100y), and
// answers are not cached, so that data imported later is seen at once.
func StartVictoriaMetrics(ctx context.Context, binary, dataDir string, args []string, opts ...Option) (*VictoriaMetrics, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("start victoria-metrics: %w", err)
	}
	return startWithRetry(func() (*VictoriaMetrics, error) {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, fmt.Errorf("start victoria-metrics: %w", err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		all := append([]string{
			"-storageDataPath=" + filepath.Join(dataDir, "storage"),
			"-httpListenAddr=" + addr,
			"-retentionPeriod=100y",
			"-search.disableCache",
			// Imported history is complete: nothing recent is held back.
			"-search.latencyOffset=0s",
		}, args...)
		proc, err := startProcess("victoria-metrics", binary, all, filepath.Join(dataDir, "victoria-metrics.log"), nil, buildOptions(opts))
		if err != nil {
			return nil, err
		}
		v := &VictoriaMetrics{URL: "http://" + addr, DataDir: dataDir, proc: proc}
		ready := func(ctx context.Context) error {
			return probeHTTP(ctx, http.DefaultClient, v.URL+"/health", nil, http.StatusOK, "OK")
		}
		if err := proc.WaitReady(ctx, ready); err != nil {
			return nil, proc.Fail(err)
		}
		return v, nil
	})
}

// Import writes series through VictoriaMetrics' JSON line import
// (/api/v1/import), one series a line, streamed, and flushes them so that
// queries see them when it returns.
func (v *VictoriaMetrics) Import(ctx context.Context, series []Series) error {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		enc := json.NewEncoder(bw)
		var err error
		for _, s := range series {
			line := struct {
				Metric     map[string]string `json:"metric"`
				Values     []float64         `json:"values"`
				Timestamps []int64           `json:"timestamps"`
			}{Metric: map[string]string{"__name__": s.Name}}
			for k, val := range s.Labels {
				line.Metric[k] = val
			}
			for _, smp := range s.Samples {
				line.Values = append(line.Values, smp.Value)
				line.Timestamps = append(line.Timestamps, smp.Time.UnixMilli())
			}
			if err = enc.Encode(line); err != nil {
				break
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	if err := v.post(ctx, "/api/v1/import", pr); err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("import into victoria-metrics: %w", err)
	}
	if err := v.post(ctx, "/internal/force_flush", nil); err != nil {
		return fmt.Errorf("flush victoria-metrics: %w", err)
	}
	return nil
}

func (v *VictoriaMetrics) post(ctx context.Context, path string, body io.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	method := http.MethodPost
	if body == nil {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, v.URL+path, body)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	detail, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, strings.TrimSpace(string(detail)))
	}
	return nil
}

// Process returns the server's process.
func (v *VictoriaMetrics) Process() *Process { return v.proc }

// Stop stops the server.
func (v *VictoriaMetrics) Stop() error { return v.proc.Stop() }
