package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
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
	line := quote(vmctl) + " prometheus -s --vm-disable-progress-bar --prom-snapshot=" + quote(dataDir) + " --vm-addr=" + quote(vm.URL)
	// vmctl draws progress bars on a terminal, whatever its flags say:
	// script gives it one.
	cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
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

// quote quotes s for the shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
