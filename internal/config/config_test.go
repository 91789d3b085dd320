package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigPrecedence(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(*Config) []string // returns mismatches
	}{
		{
			name: "defaults",
			args: []string{"--prometheus-url=http://p", "--git-url=file:///r"},
			want: func(c *Config) []string {
				return diffs(
					pair("git-branch", c.GitBranch, "main"),
					pair("git-push-branch", c.GitPushBranch, "recommend-job/main"),
					pair("git-path", c.GitPath, "."),
					pair("window", c.Window.String(), (7*24*time.Hour).String()),
					pair("output", c.Output, "table"),
					pair("max-file-size", c.MaxFileSize, "4Mi"),
				)
			},
		},
		{
			name: "file over default",
			args: []string{"--config=testdata/config.yaml"},
			want: func(c *Config) []string {
				return diffs(
					pair("prometheus-url", c.PrometheusURL, "http://prometheus.file:9090"),
					pair("git-branch", c.GitBranch, "production"),
					pair("git-push-branch", c.GitPushBranch, "recommend-job/production"),
					pair("window", c.Window.String(), "72h0m0s"),
				)
			},
		},
		{
			name: "env over file",
			args: []string{"--config=testdata/config.yaml"},
			env:  map[string]string{"RECOMMEND_GIT_BRANCH": "staging", "RECOMMEND_DRY_RUN": "true"},
			want: func(c *Config) []string {
				return diffs(
					pair("git-branch", c.GitBranch, "staging"),
					pair("dry-run", boolString(c.DryRun), "true"),
					pair("git-url", c.GitURL, "https://git.file/repo.git"),
				)
			},
		},
		{
			name: "flag over env",
			args: []string{"--config=testdata/config.yaml", "--git-branch=canary", "--output=table"},
			env:  map[string]string{"RECOMMEND_GIT_BRANCH": "staging"},
			want: func(c *Config) []string {
				return diffs(pair("git-branch", c.GitBranch, "canary"), pair("output", c.Output, "table"))
			},
		},
		{
			name: "config file from env",
			env:  map[string]string{"RECOMMEND_CONFIG": "testdata/config.yaml"},
			want: func(c *Config) []string {
				return diffs(pair("git-branch", c.GitBranch, "production"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := Parse(tt.args, io.Discard)
			if err != nil {
				t.Fatalf("Parse(%v) error = %v", tt.args, err)
			}
			for _, d := range tt.want(cfg) {
				t.Error(d)
			}
		})
	}
}

func TestLoadConfigTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]string{"--prometheus-url=http://p", "--git-url=file:///r", "--git-token-file=" + path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitToken != "s3cret" {
		t.Errorf("git token from file = %q, want %q", cfg.GitToken, "s3cret")
	}
}

func TestLoadConfigErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "missing urls", args: nil, want: []string{"prometheus-url: required", "git-url: required unless dry-run"}},
		{name: "dry run needs no git", args: []string{"--dry-run", "--output=xml", "--prometheus-url=http://p"}, want: []string{`output: must be table, json, yaml or markdown, got "xml"`}},
		{name: "bad window", args: []string{"--prometheus-url=http://p", "--git-url=file:///r", "--window=-1h"}, want: []string{"window: must be between 24h and 720h (30 days), got -1h"}},
		{name: "window of the longest duration", args: []string{"--prometheus-url=http://p", "--git-url=file:///r", "--window=2562047h"},
			want: []string{"window: must be between 24h and 720h (30 days), got 2562047h"}},
		{name: "stray argument", args: []string{"now"}, want: []string{"unexpected arguments: now"}},
		{name: "git url of another scheme", args: []string{"--prometheus-url=http://p", "--git-url=ftp://example.com/repo.git"}, want: []string{"git-url: "}},
		{name: "prometheus without scheme", args: []string{"--prometheus-url=prometheus:9090", "--git-url=file:///r"}, want: []string{"prometheus-url: scheme must be one of http, https"}},
		{name: "max file size not positive", args: []string{"--prometheus-url=http://p", "--git-url=file:///r", "--max-file-size=0"}, want: []string{`max-file-size: "0": must be positive`}},
		{name: "max file size not a size", args: []string{"--prometheus-url=http://p", "--git-url=file:///r", "--max-file-size=4MB"}, want: []string{`max-file-size: "4MB": want a size`}},
		{name: "timeouts not positive", args: []string{"--prometheus-url=http://p", "--git-url=file:///r", "--run-timeout=0s", "--kube-timeout=-1s", "--prometheus-timeout=0s",
			"--chart-fetch-timeout=0s", "--forge-timeout=-1s"},
			want: []string{"run-timeout: must be positive, got 0s", "kube-timeout: must be positive, got -1s", "prometheus-timeout: must be positive, got 0s",
				"chart-fetch-timeout: must be positive, got 0s", "forge-timeout: must be positive, got -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args, io.Discard)
			if err == nil {
				t.Fatalf("Parse(%v) error = nil, want %q", tt.args, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%v) error = %q, want it to contain %q", tt.args, err, w)
				}
			}
		})
	}
}

func pair(key, got, want string) [3]string { return [3]string{key, got, want} }

func diffs(pairs ...[3]string) []string {
	var out []string
	for _, p := range pairs {
		if p[1] != p[2] {
			out = append(out, p[0]+": got "+p[1]+", want "+p[2])
		}
	}
	return out
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestEachErrorOnce loads settings with several errors: each is reported
// once, as the configuration is completed once.
func TestEachErrorOnce(t *testing.T) {
	_, err := Parse([]string{"--dry-run", "--prometheus-url=http://p", "--shard-count=0", "--kube-qps=0", "--label-selector=a b c",
		"--namespaces=Bad_NS", "--window=1h", "--git-branch=a..b"}, io.Discard)
	if err == nil {
		t.Fatal("Parse() error = nil, want several")
	}
	for _, key := range []string{"shard-count:", "kube-qps:", "label-selector:", "namespaces:", "window:", "git-branch:"} {
		if n := strings.Count(err.Error(), key); n != 1 {
			t.Errorf("%q appears %d times in %q, want once", key, n, err)
		}
	}
}
