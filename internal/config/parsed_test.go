package config

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
)

// TestLoadParsesOnce checks that Load hands over what each setting
// written as text means, so that nothing after it parses the text again.
func TestLoadParsesOnce(t *testing.T) {
	required := []string{"--prometheus-url=http://p", "--git-url=file:///r"}
	tests := []struct {
		name     string
		args     []string
		want     Parsed
		template string // the commit message the template renders, its start
	}{
		{name: "defaults", args: required, template: "Right-size resource requests",
			want: Parsed{HPAMode: collect.HPAHold, RenderMode: render.ModeAuto, RenderPaths: map[string]string{}, MaxFileSize: 4 << 20,
				RenderLimits: helm.Limits{Memory: 256 << 20, CPU: 30 * time.Second, Output: 8 << 20}, GroupBy: gitops.GroupBy{Kind: "application"}, LogLevel: slog.LevelInfo,
				Prices: plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD"}}},
		{name: "set", template: "chore: main",
			args: append([]string{"--hpa-mode=adjust", "--render-mode=patch", "--render-paths=shop=clusters/prod/shop", "--max-file-size=1Mi",
				"--helm-render-memory=512Mi", "--helm-render-cpu=1m", "--helm-render-output=1000", "--pr-group-by=label: team",
				"--git-commit-template=chore: {{.Base}}", "--log-level=debug",
				"--price-cpu-core-hour=0.05", "--price-memory-gib-hour=0.0065", "--price-currency=€"}, required...),
			want: Parsed{HPAMode: collect.HPAAdjust, RenderMode: render.ModePatch, RenderPaths: map[string]string{"shop": "clusters/prod/shop"}, MaxFileSize: 1 << 20,
				RenderLimits: helm.Limits{Memory: 512 << 20, CPU: time.Minute, Output: 1000}, GroupBy: gitops.GroupBy{Kind: "label", Key: "team"}, LogLevel: slog.LevelDebug,
				Prices: plan.Prices{CPUCoreHour: 0.05, MemoryGiBHour: 0.0065, Currency: "€"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(tt.args, io.Discard)
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			got := cfg.Parsed
			if got.CommitTemplate == nil {
				t.Fatal("Parsed.CommitTemplate = nil, want the parsed template")
			}
			var msg strings.Builder
			if err := got.CommitTemplate.Execute(&msg, markdown.MessageData{Base: "main"}); err != nil || !strings.HasPrefix(msg.String(), tt.template) {
				t.Errorf("the commit template renders %q, %v; want it to start with %q", msg.String(), err, tt.template)
			}
			got.CommitTemplate = nil
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Parsed (-want +got):\n%s", d)
			}
		})
	}
}

// TestPricesRefused checks that a price or currency the money could not
// show, or that no machine has, is refused naming its key.
func TestPricesRefused(t *testing.T) {
	required := []string{"--prometheus-url=http://p", "--git-url=file:///r"}
	tests := []struct {
		arg, key string
	}{
		{"--price-cpu-core-hour=0", "price-cpu-core-hour"},
		{"--price-cpu-core-hour=-0.5", "price-cpu-core-hour"},
		{"--price-memory-gib-hour=1001", "price-memory-gib-hour"},
		{"--price-currency=", "price-currency"},
		{"--price-currency=US D", "price-currency"},
		{"--price-currency=<b>", "price-currency"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			_, err := Parse(append([]string{tt.arg}, required...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.key+":") {
				t.Errorf("Parse(%s) error = %v, want one naming %s", tt.arg, err, tt.key)
			}
		})
	}
}
