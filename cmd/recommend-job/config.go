package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/recommend-job/recommend-job/internal/report"
)

// errVersionRequested stops loading when --version is given.
var errVersionRequested = errors.New("version requested")

// envPrefix prefixes every environment variable: git-url is RECOMMEND_GIT_URL.
const envPrefix = "RECOMMEND"

// Config is every setting of a run.
type Config struct {
	Kubeconfig     string        `mapstructure:"kubeconfig"`
	Namespace      string        `mapstructure:"namespace"`
	PrometheusURL  string        `mapstructure:"prometheus-url"`
	Window         time.Duration `mapstructure:"window"`
	GitURL         string        `mapstructure:"git-url"`
	GitBranch      string        `mapstructure:"git-branch"`
	GitPushBranch  string        `mapstructure:"git-push-branch"`
	GitPath        string        `mapstructure:"git-path"`
	GitUsername    string        `mapstructure:"git-username"`
	GitToken       string        `mapstructure:"git-token"`
	GitTokenFile   string        `mapstructure:"git-token-file"`
	GitAuthorName  string        `mapstructure:"git-author-name"`
	GitAuthorEmail string        `mapstructure:"git-author-email"`
	DryRun         bool          `mapstructure:"dry-run"`
	Output         string        `mapstructure:"output"`
	LogLevel       string        `mapstructure:"log-level"`
}

// setting is one configuration key: its flag, default and help.
type setting struct {
	key   string
	value any
	usage string
}

// settings lists every key; flags, environment variables and defaults are
// all derived from it so they cannot disagree.
var settings = []setting{
	{"kubeconfig", "", "path to a kubeconfig; in-cluster config or $KUBECONFIG when empty"},
	{"namespace", "", "only this namespace's ResourceRecommends; all namespaces when empty"},
	{"prometheus-url", "", "base URL of the Prometheus-compatible API holding usage history"},
	{"window", 7 * 24 * time.Hour, "how much usage history to read"},
	{"git-url", "", "URL of the GitOps repository (file://, http:// or https://)"},
	{"git-branch", "main", "base branch the changes are for"},
	{"git-push-branch", "", "branch to commit to; recommend-job/<git-branch> when empty, equal to git-branch to push directly"},
	{"git-path", ".", "subtree of the repository holding the manifests"},
	{"git-username", "", "user name for HTTP(S) authentication"},
	{"git-token", "", "token or password for HTTP(S) authentication"},
	{"git-token-file", "", "file holding the token (e.g. a mounted Secret); used when git-token is empty"},
	{"git-author-name", "recommend-job", "commit author name"},
	{"git-author-email", "recommend-job@users.noreply.github.com", "commit author email"},
	{"dry-run", false, "render and report, but do not commit or push"},
	{"output", "table", "output format: table or json"},
	{"log-level", "info", "log level: debug, info, warn or error"},
}

// loadConfig reads the configuration with the precedence flag > environment
// > file > default. The file comes from --config or RECOMMEND_CONFIG.
func loadConfig(args []string, stderr io.Writer) (*Config, error) {
	flags := pflag.NewFlagSet("recommend-job", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	configFile := flags.String("config", os.Getenv(envPrefix+"_CONFIG"), "configuration file (YAML)")
	showVersion := flags.Bool("version", false, "print the version and exit")
	for _, s := range settings {
		switch v := s.value.(type) {
		case string:
			flags.String(s.key, v, s.usage)
		case bool:
			flags.Bool(s.key, v, s.usage)
		case time.Duration:
			flags.Duration(s.key, v, s.usage)
		}
	}
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	if *showVersion {
		return nil, errVersionRequested
	}
	if flags.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(flags.Args(), " "))
	}

	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	for _, s := range settings {
		v.SetDefault(s.key, s.value)
		if err := v.BindPFlag(s.key, flags.Lookup(s.key)); err != nil {
			return nil, err
		}
	}
	if *configFile != "" {
		v.SetConfigFile(*configFile)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file: %w", err)
		}
	}
	cfg := &Config{}
	if err := v.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	return cfg, cfg.complete()
}

// complete fills derived defaults and validates; errors name the key.
func (c *Config) complete() error {
	var errs []error
	if c.GitPushBranch == "" {
		c.GitPushBranch = "recommend-job/" + c.GitBranch
	}
	if c.GitToken == "" && c.GitTokenFile != "" {
		b, err := os.ReadFile(c.GitTokenFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("git-token-file: %w", err))
		}
		c.GitToken = strings.TrimSpace(string(b))
	}
	if c.PrometheusURL == "" {
		errs = append(errs, errors.New("prometheus-url: required"))
	} else if err := checkURL(c.PrometheusURL, "http", "https"); err != nil {
		errs = append(errs, fmt.Errorf("prometheus-url: %w", err))
	}
	if c.GitURL == "" && !c.DryRun {
		errs = append(errs, errors.New("git-url: required unless dry-run is set"))
	} else if c.GitURL != "" {
		if err := checkURL(c.GitURL, "file", "http", "https"); err != nil {
			errs = append(errs, fmt.Errorf("git-url: %w", err))
		}
	}
	if c.GitBranch == "" {
		errs = append(errs, errors.New("git-branch: must not be empty"))
	}
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("window: must be positive, got %s", c.Window))
	}
	switch report.Format(c.Output) {
	case report.FormatTable, report.FormatJSON:
	default:
		errs = append(errs, fmt.Errorf("output: must be table or json, got %q", c.Output))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: must be debug, info, warn or error, got %q", c.LogLevel))
	}
	return errors.Join(errs...)
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
	if u.Scheme != "file" && u.Host == "" {
		return errors.New("no host")
	}
	return nil
}
