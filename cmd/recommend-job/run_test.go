package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantCode      int
		wantStdout    string
		wantStderr    string
		wantNotStdout string
	}{
		{name: "version", args: []string{"--version"}, wantCode: exitOK, wantStdout: "recommend-job dev"},
		{name: "help lists doctor", args: []string{"--help"}, wantCode: exitOK, wantStdout: "recommend-job doctor [flags]   check what a run depends on"},
		{name: "help says where settings come from", args: []string{"-h"}, wantCode: exitOK,
			wantStdout: "RECOMMEND_* environment variables (--git-url is\nRECOMMEND_GIT_URL) and a YAML file of the same keys given with --config or\nRECOMMEND_CONFIG"},
		{name: "doctor's own help", args: []string{"doctor", "--help"}, wantCode: exitOK, wantStdout: "Usage: recommend-job doctor [flags]\n\nChecks what a run depends on",
			wantNotStdout: "--version"},
		{name: "doctor has no version flag", args: []string{"doctor", "--version"}, wantCode: exitConfigured, wantStderr: "unknown flag: --version"},
		{name: "stray argument", args: []string{"now"}, wantCode: exitConfigured, wantStderr: "unexpected arguments: now"},
		{name: "doctor, apiserver unreachable", args: []string{"doctor", "--dry-run", "--prometheus-url=http://127.0.0.1:1", "--kubeconfig=testdata/unreachable-kubeconfig"},
			wantCode: exitUnreachable, wantStdout: "FAIL  reaching the apiserver: "},
		{name: "configuration error", args: []string{"--output=xml"}, wantCode: exitConfigured, wantStderr: `output: must be table, json, yaml or markdown`},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantCode: exitConfigured, wantStderr: "unknown flag"},
		{name: "cannot load kubeconfig", args: []string{"--dry-run", "--prometheus-url=http://127.0.0.1:1", "--kubeconfig=testdata/missing-kubeconfig"},
			wantCode: exitFailed, wantStderr: "loading kubeconfig"},
		{name: "apiserver unreachable", args: []string{"--dry-run", "--prometheus-url=http://127.0.0.1:1", "--kubeconfig=testdata/unreachable-kubeconfig"},
			wantCode: exitUnreachable, wantStderr: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("run(%v) = %d, want %d; stderr: %s", tt.args, code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.wantNotStdout != "" && strings.Contains(stdout.String(), tt.wantNotStdout) {
				t.Errorf("stdout = %q, want it not to contain %q", stdout.String(), tt.wantNotStdout)
			}
		})
	}
}

// TestRunHungAPIServer runs against an apiserver that accepts TCP and never
// completes the TLS handshake: the run must end on its own, as unreachable
// (exit 3), whichever timeout ends it first.
func TestRunHungAPIServer(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters:
  - name: hung
    cluster:
      server: https://`+testbedtest.SilentListener(t)+`
      insecure-skip-tls-verify: true
users:
  - name: nobody
    user:
      token: not-a-secret
contexts:
  - name: hung
    context:
      cluster: hung
      user: nobody
current-context: hung
`)
	tests := []struct {
		name          string
		args          []string
		bound         time.Duration // the timeout that should end the run
		wantStderr    string
		wantNotStderr string
		wantStdout    string
	}{
		// client-go gives up a TLS handshake after 10s.
		{name: "TLS handshake timeout", bound: 10 * time.Second, wantStderr: "TLS handshake timeout"},
		// The request's own timeout ends it before the handshake's.
		{name: "kube-timeout", args: []string{"--kube-timeout=2s"}, bound: 2 * time.Second, wantStderr: `timeout=2s\": `,
			wantNotStderr: "TLS handshake timeout"},
		{name: "run-timeout", args: []string{"--run-timeout=2s"}, bound: 2 * time.Second,
			wantStderr: "run deadline of 2s exceeded", wantStdout: "cut short: run deadline of 2s exceeded during collect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--dry-run", "--prometheus-url=http://127.0.0.1:1", "--kubeconfig=" + kubeconfig}, tt.args...)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(t.Context(), args, &stdout, &stderr)
			took := time.Since(start)
			if code != exitUnreachable {
				t.Errorf("run() = %d, want %d; stderr:\n%s", code, exitUnreachable, stderr.String())
			}
			// Generous on a loaded machine; a hang would last until the
			// test's own timeout.
			if limit := 3*tt.bound + 30*time.Second; took > limit {
				t.Errorf("run() took %s, want it to end within %s", took, limit)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %s, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.wantNotStderr != "" && strings.Contains(stderr.String(), tt.wantNotStderr) {
				t.Errorf("stderr = %s, want it not to contain %q", stderr.String(), tt.wantNotStderr)
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
		})
	}
}
