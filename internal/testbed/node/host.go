package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// nodeSysctls are the host settings a node changes: the bridge plugin
// turns forwarding on, and the kubelet sets its kernel tunables.
var nodeSysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// nodeHostDirs are the host directories a node creates whatever its
// configuration says: the kubelet's device plugins and container log
// links, containerd's shim sockets and runc state, libcni's cache.
var nodeHostDirs = []string{
	"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/usr/libexec/kubernetes",
	"/run/containerd", "/opt/containerd", "/var/lib/cni", "/run/netns",
}

// iptablesTables are the tables the kubelet and kube-proxy add chains to.
var iptablesTables = []string{"filter", "nat", "mangle"}

// hostState is what the host looked like before the node started, for
// Stop to return to.
type hostState struct {
	iptables, ip6tables, ip string
	sysctls                 map[string]string
	// absentDirs did not exist, and go again.
	absentDirs []string
	// chains are the iptables chains that existed, by "binary table".
	chains map[string][]string
	// cgroups says whether a kubepods cgroup existed.
	cgroups bool
}

// saveHost records the host's state. The caller holds the node lock.
func saveHost(ctx context.Context, tools Tools) (*hostState, error) {
	h := &hostState{iptables: tools.Iptables, ip6tables: filepath.Join(filepath.Dir(tools.Iptables), "ip6tables"),
		ip: tools.IP, sysctls: map[string]string{}, chains: map[string][]string{}}
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		return nil, fmt.Errorf("the bridge %s exists already, left by a node that did not stop (ip link del %s removes it)", bridge, bridge)
	}
	for _, s := range nodeSysctls {
		if v, err := os.ReadFile("/proc/sys/" + s); err == nil {
			h.sysctls[s] = string(bytes.TrimSpace(v))
		}
	}
	for _, d := range nodeHostDirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			h.absentDirs = append(h.absentDirs, d)
		}
	}
	for _, bin := range []string{h.iptables, h.ip6tables} {
		for _, table := range iptablesTables {
			rules, err := iptablesRules(ctx, bin, table)
			if err != nil {
				return nil, err
			}
			key := bin + " " + table
			for _, r := range rules {
				if r[0] == "-N" && len(r) > 1 {
					h.chains[key] = append(h.chains[key], r[1])
				}
			}
		}
	}
	h.cgroups = len(kubepodsCgroups()) > 0
	return h, nil
}

// createBridge creates the pods' bridge with Address on it, with the
// ip command at ip.
func createBridge(ctx context.Context, ip string) error {
	for _, args := range [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", Address + "/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	} {
		if err := testbed.Run(ctx, nil, ip, args...); err != nil {
			return fmt.Errorf("create bridge %s: ip %s: %w", bridge, strings.Join(args, " "), err)
		}
	}
	return nil
}

// restore undoes what the node left on the host: the iptables chains it
// added, the mounts under dir (the kubelet's root and the pods' network
// namespaces), the bridge, the kubepods cgroups, the host directories
// and the sysctls. Nothing may run in the node any more.
func (h *hostState) restore(ctx context.Context, dir string) error {
	var errs []error
	errs = append(errs, h.removeChains(ctx), unmountUnder(dir))
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		errs = append(errs, testbed.Run(ctx, nil, h.ip, "link", "del", bridge))
	}
	if !h.cgroups {
		errs = append(errs, removeCgroups())
	}
	for _, d := range h.absentDirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	for s, v := range h.sysctls {
		if cur, err := os.ReadFile("/proc/sys/" + s); err == nil && string(bytes.TrimSpace(cur)) != v {
			if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", s, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeChains deletes the KUBE-* and CNI-* chains that were not there
// before, and the rules jumping to them.
func (h *hostState) removeChains(ctx context.Context) error {
	var errs []error
	for _, bin := range []string{h.iptables, h.ip6tables} {
		for _, table := range iptablesTables {
			errs = append(errs, h.removeTableChains(ctx, bin, table))
		}
	}
	return errors.Join(errs...)
}

func (h *hostState) removeTableChains(ctx context.Context, bin, table string) error {
	rules, err := iptablesRules(ctx, bin, table)
	if err != nil {
		return err
	}
	old := h.chains[bin+" "+table]
	isNew := func(chain string) bool {
		return (strings.HasPrefix(chain, "KUBE-") || strings.HasPrefix(chain, "CNI-")) && !slices.Contains(old, chain)
	}
	var added []string
	for _, r := range rules {
		if r[0] == "-N" && len(r) > 1 && isNew(r[1]) {
			added = append(added, r[1])
		}
	}
	var errs []error
	for _, r := range rules {
		// Jumps from the chains that stay, to the chains that go.
		if r[0] != "-A" || len(r) < 2 || isNew(r[1]) {
			continue
		}
		if j := slices.Index(r, "-j"); j >= 0 && j+1 < len(r) && isNew(r[j+1]) {
			args := append([]string{"-w", "-t", table, "-D"}, r[1:]...)
			errs = append(errs, testbed.Run(ctx, nil, bin, args...))
		}
	}
	for _, c := range added {
		errs = append(errs, testbed.Run(ctx, nil, bin, "-w", "-t", table, "-F", c))
	}
	for _, c := range added {
		errs = append(errs, testbed.Run(ctx, nil, bin, "-w", "-t", table, "-X", c))
	}
	return errors.Join(errs...)
}

// iptablesRules lists a table's chains and rules as iptables -S prints
// them, each split into its arguments.
func iptablesRules(ctx context.Context, bin, table string) ([][]string, error) {
	out, err := exec.CommandContext(ctx, bin, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -t %s -S: %w", filepath.Base(bin), table, err)
	}
	var rules [][]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if args := splitQuoted(sc.Text()); len(args) > 0 {
			rules = append(rules, args)
		}
	}
	return rules, sc.Err()
}

// splitQuoted splits an iptables -S line into arguments: fields separated
// by spaces, double quotes grouping, backslash escaping.
func splitQuoted(line string) []string {
	var args []string
	var cur strings.Builder
	inQuotes, inArg := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inArg = true
		case c == '"':
			inQuotes, inArg = !inQuotes, true
		case c == ' ' && !inQuotes:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var mounts []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	return mounts, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder unmounts everything mounted at or below dir. The mount
// table holds the paths the kubelet resolved: dir under a symbolic link
// is resolved first.
func unmountUnder(dir string) error {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := syscall.Unmount(mp, 0); err != nil {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	return errors.Join(errs...)
}

// kubepodsCgroups returns the kubelet's kubepods cgroups, one per
// hierarchy.
func kubepodsCgroups() []string {
	var found []string
	for _, pattern := range []string{"/sys/fs/cgroup/kubepods", "/sys/fs/cgroup/*/kubepods"} {
		matches, _ := filepath.Glob(pattern)
		found = append(found, matches...)
	}
	return found
}

// removeCgroups removes the kubepods cgroups, deepest first; a cgroup
// goes only once no process is left in it.
func removeCgroups() error {
	var errs []error
	for _, root := range kubepodsCgroups() {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving the containerd at address
// that outlived it: they run in sessions of their own.
func killShims(address string) {
	for _, pid := range shimPIDs(address) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// shimPIDs returns the processes whose command line names address: the
// shims of the containerd listening there.
func shimPIDs(address string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), address) {
			pids = append(pids, pid)
		}
	}
	return pids
}
