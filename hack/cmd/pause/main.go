// Command pause is the sandbox process of the test bed's node: what
// Kubernetes' pause image runs. It holds a pod's namespaces open, reaps
// the zombies the pod's processes leave to it, and exits on SIGTERM or
// SIGINT. The test bed builds it statically and imports it as the node's
// sandbox image, so that the node needs no registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap waits for every child that has exited.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
