package render

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestApplyFailsWhenAFileCannotBeWritten fills the "disk" halfway through
// the writes, with a file size limit: the run must fail as a whole rather
// than report the lost edit as one change's problem and commit the rest.
func TestApplyFailsWhenAFileCannotBeWritten(t *testing.T) {
	root := t.TempDir()
	big := strings.Replace(simple, "name: x", "name: y", 1) + strings.Repeat("# padding\n", 100_000)
	writeFiles(t, root, map[string]string{"a.yaml": simple, "b.yaml": big})
	x := requests("app", "cpu", "1")
	x.Target.Namespace = "ns"
	y := x
	y.Requests = quantities(map[string]string{"cpu": "2"})
	y.Target.Name = "y"

	// Past the limit a write fails with EFBIG instead of raising SIGXFSZ.
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	// The limit holds for every file the process writes, go test's own
	// log too: it must be far above that log's size, and below b.yaml's.
	limit := old
	limit.Cur = 512 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	out, err := Apply(context.Background(), root, ".", []Change{x, y})
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !strings.Contains(err.Error(), "writing the edited files: write b.yaml") || !strings.Contains(err.Error(), "file too large") {
		t.Fatalf("Apply() = %+v, %v; want an error naming b.yaml", out, err)
	}
	got, rerr := os.ReadFile(filepath.Join(root, "b.yaml"))
	if rerr != nil || string(got) != big {
		t.Errorf("b.yaml was changed or truncated (%d bytes, %v)", len(got), rerr)
	}
}
