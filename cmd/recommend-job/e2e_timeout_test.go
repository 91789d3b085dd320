//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndHungPrometheus stops the test bed's Prometheus with SIGSTOP:
// it still accepts connections (the kernel does) and never answers. Each
// run must end on its own, within its timeouts, print the report of what
// it had, push nothing, and exit 3, or 1 when a signal ended it.
func TestEndToEndHungPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(time.Now().Truncate(time.Minute))})
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	args := bedArgs(t, bed, repoURL, "--git-path", "clusters")

	pid := bed.Prometheus.Process().Info().PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping Prometheus: %v", err)
	}
	// Runs before the bed's own cleanup, which stops Prometheus.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	tests := []struct {
		name string
		args []string
		// signalAfter cancels the run's parent context, as a SIGTERM does.
		signalAfter time.Duration
		// bound is the timeout that should end the run.
		bound           time.Duration
		wantCode        int
		wantInterrupted string
		wantReason      string
	}{
		{name: "every query times out", args: []string{"--prometheus-timeout=3s"}, bound: 3 * time.Second,
			wantCode: exitUnreachable, wantReason: "usage history unavailable: querying "},
		{name: "the run reaches its deadline", args: []string{"--prometheus-timeout=10m", "--run-timeout=15s"}, bound: 15 * time.Second,
			wantCode: exitUnreachable, wantInterrupted: "run deadline of 15s exceeded during history",
			wantReason: "usage history unavailable: querying "},
		{name: "a SIGTERM is no timeout", args: []string{"--prometheus-timeout=10m"}, signalAfter: 5 * time.Second, bound: 5 * time.Second,
			wantCode: exitFailed, wantInterrupted: "terminated signal received during history",
			wantReason: "usage history unavailable: querying "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runCtx := ctx
			if tt.signalAfter > 0 {
				c, stop := context.WithCancelCause(ctx)
				timer := time.AfterFunc(tt.signalAfter, func() { stop(errors.New("terminated signal received")) })
				defer timer.Stop()
				defer stop(nil)
				runCtx = c
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(runCtx, append(append([]string(nil), args...), tt.args...), &stdout, &stderr)
			took := time.Since(start)
			if code != tt.wantCode {
				t.Errorf("run() = %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			// Generous on a loaded machine: without the timeouts the run
			// would hang until the test's own deadline.
			if limit := 3*tt.bound + time.Minute; took > limit {
				t.Errorf("run() took %s, want it to end within %s", took, limit)
			}
			rep := &plan.Plan{}
			if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
				t.Fatalf("no report: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			if rep.Interrupted != tt.wantInterrupted {
				t.Errorf("report interrupted = %q, want %q", rep.Interrupted, tt.wantInterrupted)
			}
			if rep.Git != nil && rep.Git.Pushed {
				t.Errorf("report git = %+v, want nothing pushed", rep.Git)
			}
			web := entry(t, rep, "shop", "web")
			resources := 0
			for _, c := range web.Containers {
				for _, r := range c.Resources {
					resources++
					if r.Recommended != nil || !strings.HasPrefix(r.Reason, tt.wantReason) {
						t.Errorf("%s %s: recommended %q reason %q, want no recommendation and reason %q...", c.Name, r.Resource, quantity(r.Recommended), r.Reason, tt.wantReason)
					}
				}
			}
			if resources != 4 {
				t.Errorf("shop/web reports %d container resources, want 4, each with its reason", resources)
			}
			if greedy := entry(t, rep, "shop", "greedy"); greedy.Error == nil {
				t.Errorf("shop/greedy = %+v, want its validation error reported still", greedy)
			}
			if branches := remoteBranches(t, repoURL, bed); len(branches) != 1 || branches[0] != "main" {
				t.Errorf("the remote has branches %v, want only main", branches)
			}
		})
	}
}
