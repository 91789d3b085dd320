package testbed

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts a server in its own session, so that it leads its own
// process group and is not hit by signals meant for its parent's terminal.
// Unless detached, the kernel kills it when its parent dies.
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true}
	if !detached {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}

// processMatches reports whether pid is a live (not zombie) process started
// from path, so that a recycled pid is never mistaken for a server.
func processMatches(pid int, path string) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return path == "" || argv0 == path
}
