package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// The metrics backends the job can be benchmarked against.
const (
	BackendPrometheus      = "prometheus"
	BackendVictoriaMetrics = "victoriametrics"
)

// startVictoriaMetrics starts a single-node VictoriaMetrics in the work
// directory and loads the history of the TSDB in dataDir into it with
// vmctl, from the same Debian package, which reads Prometheus' blocks.
func (e *env) startVictoriaMetrics(ctx context.Context, dataDir string) error {
	bin, err := testbed.EnsureVictoriaMetrics(ctx)
	if err != nil {
		return err
	}
	vm, err := testbed.StartVictoriaMetrics(ctx, bin, filepath.Join(e.opts.WorkDir, "bed", "victoria-metrics"), nil)
	if err != nil {
		return err
	}
	e.vm = vm
	began := time.Now()
	vmctl := filepath.Join(filepath.Dir(bin), "vmctl")
	cmd := exec.CommandContext(ctx, vmctl, "prometheus", "--prom-snapshot="+dataDir, "--vm-addr="+vm.URL, "-s")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("load the history into victoria-metrics: %w: %.2000s", err, out)
	}
	if err := vm.Import(ctx, nil); err != nil { // flushes what vmctl sent
		return err
	}
	e.opts.Logf("loaded the history into VictoriaMetrics in %s", time.Since(began).Round(time.Millisecond))
	e.backend = vm.URL
	return nil
}
