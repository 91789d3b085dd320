//go:build unix && !linux

package testbed

import "syscall"

// sysProcAttr puts a server in its own session, so that it leads its own
// process group and is not hit by signals meant for its parent's terminal.
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// processMatches cannot tell programs apart without /proc; a live pid is
// taken to be the server.
func processMatches(int, string) bool {
	return true
}
