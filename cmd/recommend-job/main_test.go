package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/job"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// timeoutError is a net.Error that timed out, as net/http's "TLS handshake
// timeout" is.
type timeoutError struct{}

func (timeoutError) Error() string   { return "net/http: TLS handshake timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestExitCodeFor(t *testing.T) {
	get := func(err error) error {
		return fmt.Errorf("collecting resource recommends: %w", &url.Error{Op: "Get", URL: "https://10.0.0.1/apis", Err: err})
	}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "connection refused", err: get(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), want: exitUnreachable},
		{name: "TLS handshake timeout", err: get(timeoutError{}), want: exitUnreachable},
		{name: "request timeout", err: get(context.DeadlineExceeded), want: exitUnreachable},
		{name: "every namespace's query timed out", err: fmt.Errorf("%w: querying cpu in namespace shop: no answer within 2m0s: %w",
			usage.ErrUnavailable, context.DeadlineExceeded), want: exitUnreachable},
		{name: "a dial cut short by a signal", err: get(&net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("operation was canceled: %w", context.Canceled)}),
			want: exitFailed},
		{name: "forbidden", err: errors.New(`resourcerecommends is forbidden: User "x" cannot list`), want: exitFailed},
		{name: "URL error that is no timeout", err: get(errors.New("unsupported protocol scheme")), want: exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCodeFor(tt.err); got != tt.want {
				t.Errorf("exitCodeFor(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestRunExitCode(t *testing.T) {
	generic := errors.New("rendering: something")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		// signal cancels the program's context, deadline ends the run's.
		signal, deadline bool
		err              error
		want             int
	}{
		{name: "run deadline, whatever the error", deadline: true, err: generic, want: exitUnreachable},
		{name: "signal, even with an unreachable dependency", signal: true, err: refused, want: exitFailed},
		{name: "neither: the error decides", err: refused, want: exitUnreachable},
		{name: "neither, a failure", err: generic, want: exitFailed},
		// As job.Run returns it: the record's apiserver timed out.
		{name: "the record not written, even for want of an answer",
			err: fmt.Errorf("%w: %w", job.ErrUnrecorded, context.DeadlineExceeded), want: exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			timeout := time.Hour
			if tt.deadline {
				timeout = time.Nanosecond
			}
			runCtx, cancel := context.WithTimeoutCause(parent, timeout, runDeadlineError{timeout})
			defer cancel()
			if tt.signal {
				stop(errors.New("terminated signal received"))
			}
			if tt.deadline {
				<-runCtx.Done()
			}
			if got := runExitCode(parent, runCtx, tt.err); got != tt.want {
				t.Errorf("runExitCode() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestMain makes the test binary a render process when a run, in a test,
// starts it as one: os.Executable is the test binary there.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == renderCommand {
		os.Exit(helmrender.ServeRender(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
