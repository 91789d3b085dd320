// Package memlimit finds the memory limit of the container the job runs
// in, so that Go's garbage collector can aim below it. By default the
// collector lets the heap grow to twice what is live before it collects:
// a run whose live heap fits its container would still be killed for the
// garbage it had not yet collected.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// unlimited is what cgroup v1 reports for no limit, rounded down to a
// page (PAGE_COUNTER_MAX in pages): any value this large is none.
const unlimited = math.MaxInt64 / 4096 * 4096

// Container is the memory limit of the cgroup the process is in, or of
// the nearest of its parents that sets one, in bytes: cgroup v2's
// memory.max or v1's memory.limit_in_bytes, under the hierarchy at root
// (/sys/fs/cgroup) as /proc/self/cgroup, read from proc, places it.
// false when no cgroup sets one.
func Container(root, proc fs.FS) (int64, bool, error) {
	cg, err := Of(proc)
	if err != nil {
		return 0, false, err
	}
	// A hybrid host mounts both: v1's memory controller is the one that
	// limits then.
	if cg.V1Memory != "" {
		return nearest(root, "memory", cg.V1Memory, "memory.limit_in_bytes")
	}
	if cg.V2 != "" {
		return nearest(root, ".", cg.V2, "memory.max")
	}
	return 0, false, nil
}

// Cgroups are where the process is in the cgroup hierarchies, as
// /proc/self/cgroup says: its path under v1's memory controller, and
// under v2's unified hierarchy; empty for one it is not in.
type Cgroups struct {
	V1Memory, V2 string
}

// Of reads the cgroups of the process from proc (/proc).
func Of(proc fs.FS) (Cgroups, error) {
	data, err := fs.ReadFile(proc, "self/cgroup")
	if err != nil {
		return Cgroups{}, fmt.Errorf("reading the process's cgroup: %w", err)
	}
	var cg Cgroups
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			cg.V2 = parts[2]
		case containsController(parts[1], "memory"):
			cg.V1Memory = parts[2]
		}
	}
	return cg, nil
}

func containsController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// nearest reads file in the cgroup dir of the hierarchy mounted at top,
// and in each of its parents, and returns the lowest limit set. A cgroup
// the container does not show (a cgroup namespace puts the process at
// its root) is passed over.
func nearest(root fs.FS, top, dir, file string) (int64, bool, error) {
	best, found := int64(0), false
	for d := path.Clean("/" + dir); ; d = path.Dir(d) {
		n, ok, err := readLimit(root, strings.TrimPrefix(path.Join(top, d, file), "/"))
		if err != nil {
			return 0, false, err
		}
		if ok && (!found || n < best) {
			best, found = n, true
		}
		if d == "/" {
			return best, found, nil
		}
	}
}

// readLimit reads one limit file: a number of bytes, or "max".
func readLimit(root fs.FS, name string) (int64, bool, error) {
	data, err := fs.ReadFile(root, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading %s: %w", name, err)
	}
	text := strings.TrimSpace(string(data))
	if text == "max" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("reading %s: %q is no number of bytes", name, text)
	}
	if n <= 0 || n >= unlimited {
		return 0, false, nil
	}
	return n, true, nil
}

// Soft is the limit the garbage collector aims for in a container of
// limit bytes of which reserved go to other processes (the chart
// renders): nine tenths of the rest, the other tenth for what Go does not
// count (the binary's pages, the kernel's buffers), as Prometheus's
// auto-gomemlimit takes. false when too little is left to set one that
// would help rather than make the collector run without pause.
func Soft(limit, reserved int64) (int64, bool) {
	soft := (limit - reserved) * 9 / 10
	if soft < minSoft {
		return 0, false
	}
	return soft, true
}

// minSoft is the least soft limit worth setting: Go's runtime and the
// job's clients take some tens of MiB before any work.
const minSoft = 64 << 20
