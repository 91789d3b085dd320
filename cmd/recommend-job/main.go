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
	"time"

	"github.com/recommend-job/recommend-job/internal/job"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
)

// renderCommand is the hidden command that makes the binary a render
// process, in which a run renders each chart within limits
// (helmrender.Isolation). It is not for people: it reads its request from stdin.
const renderCommand = "__render-chart"

func main() {
	if len(os.Args) > 1 && os.Args[1] == renderCommand {
		os.Exit(helmrender.ServeRender(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stderr := os.Stderr
	restore := logLibraryOutput()
	code := run(ctx, os.Args[1:], os.Stdout, stderr)
	restore()
	stop()
	os.Exit(code)
}

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in docs/configuration.md.
const (
	exitOK          = 0
	exitFailed      = 1
	exitConfigured  = 2
	exitUnreachable = 3
	// exitNotRendered: the run completed, had values to write, and none
	// could be written to the repository (every target not found,
	// ambiguous, refused or failing its proof).
	exitNotRendered = 4
)

// exitCodeFor tells a dependency that could not be reached (the apiserver,
// Prometheus, the git remote), or that did not answer in time, from other
// failures. A cancelled context (a signal) is a failure, not an unreachable
// dependency, even when it cut a dial short.
func exitCodeFor(err error) int {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return exitFailed
	case errors.As(err, &opErr), errors.As(err, &dnsErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, context.DeadlineExceeded):
		return exitUnreachable
	case errors.As(err, &netErr) && netErr.Timeout():
		// A TLS handshake or response that never came: "net/http: TLS
		// handshake timeout", a client timeout awaiting headers.
		return exitUnreachable
	default:
		return exitFailed
	}
}

// runDeadlineError is the cause of a run's end at run-timeout. It is a
// context.DeadlineExceeded, so that code checking for one still finds it.
type runDeadlineError struct{ timeout time.Duration }

func (e runDeadlineError) Error() string {
	return fmt.Sprintf("run deadline of %s exceeded", e.timeout)
}

func (e runDeadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// runExitCode is the exit code of a run that failed with err: a run cut
// short by its deadline is unreachable (something did not answer in time),
// one interrupted by a signal or whose record could not be written
// failed, and any other error is classified by exitCodeFor. parent is the context of the program, runCtx the run's.
func runExitCode(parent, runCtx context.Context, err error) int {
	switch {
	case parent.Err() != nil:
		return exitFailed
	case errors.As(context.Cause(runCtx), new(runDeadlineError)):
		return exitUnreachable
	case errors.Is(err, job.ErrUnrecorded):
		// Whatever kept the record from being written, even an apiserver
		// that did not answer in time, the run's pushes are not verified.
		return exitFailed
	default:
		return exitCodeFor(err)
	}
}

// fail reports an error found before the logger exists.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "recommend-job: %v\n", err)
	return code
}
