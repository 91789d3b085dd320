package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/recommend-job/recommend-job/internal/memlimit"
)

// memoryCgroup is a memory cgroup of its own under the benchmark's, with a
// limit, in which the job runs as in a container of that limit: the job
// reads the limit as it would in a pod, and the kernel holds it to it.
type memoryCgroup struct {
	dir string
}

// newMemoryCgroup makes a cgroup of limit bytes under the benchmark's own,
// cgroup v1's memory controller or v2's.
func newMemoryCgroup(limit int64) (*memoryCgroup, error) {
	where, err := memlimit.Of(os.DirFS("/proc"))
	if err != nil {
		return nil, fmt.Errorf("memory limit: %w", err)
	}
	v1, v2 := where.V1Memory, where.V2
	name := "recommend-job-bench-" + strconv.Itoa(os.Getpid())
	var dir, limitFile string
	switch {
	case v1 != "":
		dir, limitFile = filepath.Join("/sys/fs/cgroup/memory", v1, name), "memory.limit_in_bytes"
	case v2 != "":
		parent := filepath.Join("/sys/fs/cgroup", v2)
		// The memory controller must be on for the parent's children.
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return nil, fmt.Errorf("memory limit: enabling the memory controller under %s: %w", parent, err)
		}
		dir, limitFile = filepath.Join(parent, name), "memory.max"
	default:
		return nil, errors.New("memory limit: the benchmark is in no memory cgroup")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory limit: %w", err)
	}
	cg := &memoryCgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		cg.remove()
		return nil, fmt.Errorf("memory limit: %w", err)
	}
	return cg, nil
}

// command is bin with args, run from within the cgroup: a shell that
// moves itself into it, then becomes the job, so that the job starts
// there and keeps the shell's process ID.
func (cg *memoryCgroup) command(bin string, args []string) (string, []string) {
	return "/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg.dir, bin}, args...)
}

// remove removes the cgroup, once the job has exited.
func (cg *memoryCgroup) remove() {
	_ = os.Remove(cg.dir)
}
