// Command recommend-job right-sizes CPU and memory requests the GitOps way:
// it reads katalyst ResourceRecommends and usage history, and pushes the
// new requests to the GitOps repository instead of changing the cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailed      = 1
	exitConfigured  = 2
	exitUnreachable = 3
)

// exitCodeFor tells a dependency that could not be reached (the apiserver,
// Prometheus, the git remote) from other failures.
func exitCodeFor(err error) int {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &opErr), errors.As(err, &dnsErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, context.DeadlineExceeded):
		return exitUnreachable
	default:
		return exitFailed
	}
}

// fail reports an error found before the logger exists.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "recommend-job: %v\n", err)
	return code
}
