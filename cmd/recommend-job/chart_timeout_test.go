//go:build integration

package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/config"
)

// TestChartRunTimeout renders the chart's configuration file and loads it
// as the job would: the run's own deadline ends it before the Job's
// activeDeadlineSeconds.
func TestChartRunTimeout(t *testing.T) {
	bin := helm(t)
	tests := []struct {
		name    string
		set     string
		want    time.Duration
		wantErr string
	}{
		{name: "default: 90% of 1800s", want: 1620 * time.Second},
		{name: "90% of another deadline", set: "activeDeadlineSeconds=600", want: 540 * time.Second},
		{name: "a lower one of config", set: "activeDeadlineSeconds=600,config.run-timeout=5m", want: 5 * time.Minute},
		{name: "not below the deadline", set: "config.run-timeout=30m", wantErr: "config.run-timeout: 30m must be below activeDeadlineSeconds (1800s)"},
		{name: "a form the chart cannot check", set: "config.run-timeout=1h30m", wantErr: `config.run-timeout: "1h30m" must be a whole number of s, m or h`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "rj", chartDir, "--show-only", "templates/configmap.yaml"}
			if tt.set != "" {
				args = append(args, "--set", tt.set)
			}
			out, err := runHelm(t, bin, args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(out, tt.wantErr) {
					t.Fatalf("helm template --set %s = %v\n%s\nwant an error containing %q", tt.set, err, out, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
				t.Fatalf("decoding the ConfigMap: %v\n%s", err, out)
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, file, cm.Data["config.yaml"])
			cfg, err := config.Parse([]string{"--config", file, "--dry-run"}, io.Discard)
			if err != nil {
				t.Fatalf("the job refuses the chart's configuration: %v\n%s", err, cm.Data["config.yaml"])
			}
			if cfg.RunTimeout != tt.want {
				t.Errorf("run-timeout = %s, want %s", cfg.RunTimeout, tt.want)
			}
		})
	}
}
