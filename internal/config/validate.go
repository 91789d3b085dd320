package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/cost"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
)

// OutputMarkdown is the output format that prints the report as the pull
// request's description; the others are report's formats.
const OutputMarkdown = "markdown"

// complete fills derived defaults and validates, once; errors name the
// key.
func (c *Config) complete() error {
	var errs []error
	var err error
	if c.GitToken, err = secret(c.GitToken, c.GitTokenFile); err != nil {
		errs = append(errs, fmt.Errorf("git-token-file: %w", err))
	}
	errs = append(errs, c.completeCollect()...)
	errs = append(errs, c.completeGit()...)
	errs = append(errs, c.completePrometheus()...)
	errs = append(errs, c.completeHelm()...)
	if c.RunTimeout <= 0 {
		errs = append(errs, fmt.Errorf("run-timeout: must be positive, got %s", c.RunTimeout))
	}
	if c.ChartFetchTimeout <= 0 {
		errs = append(errs, fmt.Errorf("chart-fetch-timeout: must be positive, got %s", c.ChartFetchTimeout))
	}
	if c.ForgeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("forge-timeout: must be positive, got %s", c.ForgeTimeout))
	}
	if c.PRLimit < 0 || c.PRPerRun < 0 || c.PRClosedHold < 0 {
		errs = append(errs, fmt.Errorf("pr-limit, pr-per-run and pr-closed-hold: must not be negative, got %d, %d and %s", c.PRLimit, c.PRPerRun, c.PRClosedHold))
	}
	if c.VerifyPeriod < 0 || c.VerifyOOMKills < 1 || c.VerifyRestarts < 1 {
		errs = append(errs, fmt.Errorf("verify-period, verify-oom-kills and verify-restarts: want a period of 0 or more and counts of 1 or more, got %s, %d and %d",
			c.VerifyPeriod, c.VerifyOOMKills, c.VerifyRestarts))
	}
	if !(c.VerifyThrottledBefore > 0 && c.VerifyThrottledBefore <= c.VerifyThrottledAfter && c.VerifyThrottledAfter <= 1) {
		errs = append(errs, fmt.Errorf("verify-throttled-before and verify-throttled-after: want 0 < before <= after <= 1, got %g and %g",
			c.VerifyThrottledBefore, c.VerifyThrottledAfter))
	}
	switch mode := collect.HPAMode(c.HPAMode); mode {
	case collect.HPAHold, collect.HPAAdjust:
		c.Parsed.HPAMode = mode
	default:
		errs = append(errs, fmt.Errorf("hpa-mode: %q is neither %s nor %s", c.HPAMode, collect.HPAHold, collect.HPAAdjust))
	}
	if c.Parsed.GroupBy, err = gitops.ParseGroupBy(c.PRGroupBy); err != nil {
		errs = append(errs, fmt.Errorf("pr-group-by: %w", err))
	}
	if c.Parsed.RenderMode, err = render.ParseMode(c.RenderMode); err != nil {
		errs = append(errs, fmt.Errorf("render-mode: %w", err))
	}
	if c.Parsed.RenderPaths, err = parsePaths(c.RenderPaths); err != nil {
		errs = append(errs, fmt.Errorf("render-paths: %w", err))
	}
	if c.Parsed.MaxFileSize, err = parseSize(c.MaxFileSize); err != nil {
		errs = append(errs, fmt.Errorf("max-file-size: %w", err))
	}
	errs = append(errs, c.completePrices()...)
	limits := &c.Parsed.RenderLimits
	if limits.Memory, err = parseSize(c.HelmRenderMemory); err != nil {
		errs = append(errs, fmt.Errorf("helm-render-memory: %w", err))
	} else if limits.Memory < minRenderMemory {
		errs = append(errs, fmt.Errorf("helm-render-memory: %q is below %s, which Go's runtime alone takes", c.HelmRenderMemory, "128Mi"))
	}
	limits.CPU = c.HelmRenderCPU
	if c.HelmRenderCPU < time.Second {
		errs = append(errs, fmt.Errorf("helm-render-cpu: must be at least 1s, got %s", c.HelmRenderCPU))
	}
	if limits.Output, err = parseSize(c.HelmRenderOutput); err != nil {
		errs = append(errs, fmt.Errorf("helm-render-output: %w", err))
	}
	switch report.Format(c.Output) {
	case report.FormatTable, report.FormatJSON, report.FormatYAML, OutputMarkdown:
	default:
		errs = append(errs, fmt.Errorf("output: must be table, json, yaml or markdown, got %q", c.Output))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
		if err := c.Parsed.LogLevel.UnmarshalText([]byte(c.LogLevel)); err != nil {
			errs = append(errs, fmt.Errorf("log-level: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("log-level: must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if len(errs) == 0 {
		// The settings are read and the forge's client is built last,
		// from settings that passed their checks.
		errs = c.prepareGit()
	}
	return errors.Join(errs...)
}

// completeCollect fills and checks the settings of the collect stage.
func (c *Config) completeCollect() []error {
	var errs []error
	if c.ShardIndex < 0 {
		c.ShardIndex = 0
		// An Indexed Job gives each pod its index in this variable.
		if v := os.Getenv("JOB_COMPLETION_INDEX"); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				errs = append(errs, fmt.Errorf("shard-index: JOB_COMPLETION_INDEX must be a non-negative integer, got %q", v))
			}
			c.ShardIndex = i
		}
	}
	if c.ShardCount < 1 {
		errs = append(errs, fmt.Errorf("shard-count: must be at least 1, got %d", c.ShardCount))
	} else if c.ShardIndex >= c.ShardCount {
		errs = append(errs, fmt.Errorf("shard-index: must be below shard-count %d, got %d", c.ShardCount, c.ShardIndex))
	}
	if _, err := labels.Parse(c.LabelSelector); err != nil {
		errs = append(errs, fmt.Errorf("label-selector: %w", err))
	}
	if c.KubeQPS <= 0 {
		errs = append(errs, fmt.Errorf("kube-qps: must be positive, got %g", c.KubeQPS))
	}
	if c.KubeBurst < 1 {
		errs = append(errs, fmt.Errorf("kube-burst: must be at least 1, got %d", c.KubeBurst))
	}
	if c.KubeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("kube-timeout: must be positive, got %s", c.KubeTimeout))
	}
	for _, key := range []string{"namespaces", "exclude-namespaces"} {
		list := c.Namespaces
		if key == "exclude-namespaces" {
			list = c.ExcludeNamespaces
		}
		for _, ns := range list {
			if msgs := validation.ValidateNamespaceName(ns, false); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: %q: %s", key, ns, strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// checkURL accepts an absolute URL of one of schemes. It never quotes the
// URL, which may carry credentials.
func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("scheme must be one of %s", strings.Join(schemes, ", "))
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// secret is value, or the trimmed content of file when value is empty. The
// error names neither the content nor, beyond the file, anything else.
func secret(value, file string) (string, error) {
	if value != "" || file == "" {
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// currencyRE is a currency as the money shows it: a code or a symbol,
// nothing that Markdown reads.
var currencyRE = regexp.MustCompile(`^[\p{L}\p{Sc}]{1,8}$`)

// completePrices checks the prices and parses them into Parsed.Prices.
func (c *Config) completePrices() []error {
	var errs []error
	for _, p := range []struct {
		key   string
		value float64
	}{{"price-cpu-core-hour", c.PriceCPUCoreHour}, {"price-memory-gib-hour", c.PriceMemoryGiBHour}} {
		if !(p.value > 0 && p.value <= cost.MaxPrice) {
			errs = append(errs, fmt.Errorf("%s: must be above 0 and at most %d, got %g", p.key, cost.MaxPrice, p.value))
		}
	}
	if !currencyRE.MatchString(c.PriceCurrency) {
		errs = append(errs, fmt.Errorf("price-currency: must be 1 to 8 letters or a currency symbol, got %q", c.PriceCurrency))
	}
	c.Parsed.Prices = plan.Prices{CPUCoreHour: c.PriceCPUCoreHour, MemoryGiBHour: c.PriceMemoryGiBHour, Currency: c.PriceCurrency}
	return errs
}
