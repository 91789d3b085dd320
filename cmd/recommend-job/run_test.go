package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "version", args: []string{"--version"}, wantCode: exitOK, wantStdout: "recommend-job dev"},
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
		})
	}
}
