package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
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
	RenderMode     string        `mapstructure:"render-mode"`
	RenderPaths    []string      `mapstructure:"render-paths"`
	MaxFileSize    string        `mapstructure:"max-file-size"`
	GitUsername    string        `mapstructure:"git-username"`
	GitToken       string        `mapstructure:"git-token"`
	GitTokenFile   string        `mapstructure:"git-token-file"`
	GitAuthorName  string        `mapstructure:"git-author-name"`
	GitAuthorEmail string        `mapstructure:"git-author-email"`
	DryRun         bool          `mapstructure:"dry-run"`
	FailOnPartial  bool          `mapstructure:"fail-on-partial"`
	// RunTimeout is the deadline of a whole run, below the Job's
	// activeDeadlineSeconds.
	RunTimeout time.Duration `mapstructure:"run-timeout"`
	Output     string        `mapstructure:"output"`
	LogLevel   string        `mapstructure:"log-level"`

	// How to reach and query the Prometheus-compatible API (prometheus.go).
	PrometheusBearerToken        string        `mapstructure:"prometheus-bearer-token"`
	PrometheusBearerTokenFile    string        `mapstructure:"prometheus-bearer-token-file"`
	PrometheusUsername           string        `mapstructure:"prometheus-username"`
	PrometheusPassword           string        `mapstructure:"prometheus-password"`
	PrometheusPasswordFile       string        `mapstructure:"prometheus-password-file"`
	PrometheusCAFile             string        `mapstructure:"prometheus-ca-file"`
	PrometheusInsecureSkipVerify bool          `mapstructure:"prometheus-insecure-skip-verify"`
	PrometheusHeaders            []string      `mapstructure:"prometheus-headers"`
	PrometheusLabelFilter        string        `mapstructure:"prometheus-label-filter"`
	PrometheusStep               time.Duration `mapstructure:"prometheus-step"`
	PrometheusRateWindow         time.Duration `mapstructure:"prometheus-rate-window"`
	PrometheusOwnership          bool          `mapstructure:"prometheus-ownership"`
	PrometheusTimeout            time.Duration `mapstructure:"prometheus-timeout"`
	// The algorithm's run-wide defaults; extensions override them per CR.
	Percentile         float64       `mapstructure:"percentile"`
	HalfLife           time.Duration `mapstructure:"half-life"`
	MemoryPeakInterval time.Duration `mapstructure:"memory-peak-interval"`
	MinSamples         int           `mapstructure:"min-samples"`
	ChangeThreshold    float64       `mapstructure:"change-threshold"`

	// Namespaces, ExcludeNamespaces, LabelSelector and the shard narrow
	// which ResourceRecommends a run handles.
	Namespaces        []string      `mapstructure:"namespaces"`
	ExcludeNamespaces []string      `mapstructure:"exclude-namespaces"`
	LabelSelector     string        `mapstructure:"label-selector"`
	ShardIndex        int           `mapstructure:"shard-index"`
	ShardCount        int           `mapstructure:"shard-count"`
	KubeQPS           float64       `mapstructure:"kube-qps"`
	KubeBurst         int           `mapstructure:"kube-burst"`
	KubeTimeout       time.Duration `mapstructure:"kube-timeout"`
	WriteStatus       bool          `mapstructure:"write-status"`
	HPAAware          bool          `mapstructure:"hpa-aware"`

	// The git and pull request settings beyond the repository and branch.
	GitSSHKeyFile     string   `mapstructure:"git-ssh-key-file"`
	GitKnownHostsFile string   `mapstructure:"git-known-hosts-file"`
	GitBranchTemplate string   `mapstructure:"git-branch-template"`
	GitDirectPush     bool     `mapstructure:"git-direct-push"`
	GitCommitTemplate string   `mapstructure:"git-commit-template"`
	GitCommitterName  string   `mapstructure:"git-committer-name"`
	GitCommitterEmail string   `mapstructure:"git-committer-email"`
	GitSigningKeyFile string   `mapstructure:"git-signing-key-file"`
	GitSigningFormat  string   `mapstructure:"git-signing-format"`
	Forge             string   `mapstructure:"forge"`
	ForgeAPIURL       string   `mapstructure:"forge-api-url"`
	ForgeToken        string   `mapstructure:"forge-token"`
	ForgeTokenFile    string   `mapstructure:"forge-token-file"`
	ForgeRepository   string   `mapstructure:"forge-repository"`
	PRLabels          []string `mapstructure:"pr-labels"`
	PRReviewers       []string `mapstructure:"pr-reviewers"`
	PRCloseWhenEmpty  bool     `mapstructure:"pr-close-when-empty"`
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
	{"namespaces", []string{}, "only these namespaces' ResourceRecommends (comma-separated); all namespaces when empty"},
	{"exclude-namespaces", []string{}, "leave these namespaces' ResourceRecommends out (comma-separated)"},
	{"label-selector", "", "only the ResourceRecommends matching this label selector"},
	{"shard-index", -1, "this pod's shard in [0, shard-count); $JOB_COMPLETION_INDEX, else 0, when negative"},
	{"shard-count", 1, "number of shards the ResourceRecommends are split into by a hash of namespace/name"},
	{"kube-qps", 20.0, "requests per second to the Kubernetes API"},
	{"kube-burst", 40, "burst of requests to the Kubernetes API"},
	{"kube-timeout", 30 * time.Second, "bound of each request to the Kubernetes API"},
	{"write-status", false, "write katalyst's conditions and recommendResources to each ResourceRecommend's status"},
	{"hpa-aware", true, "leave alone the requests a HorizontalPodAutoscaler scales the target on by utilization"},
	{"prometheus-url", "", "base URL of the Prometheus-compatible API holding usage history"},
	{"window", 7 * 24 * time.Hour, "how much usage history to read, 24h to 720h"},
	{"prometheus-bearer-token", "", "bearer token for the Prometheus API"},
	{"prometheus-bearer-token-file", "", "file holding the bearer token, read on every request (e.g. a projected service account token)"},
	{"prometheus-username", "", "user name for basic authentication to the Prometheus API"},
	{"prometheus-password", "", "password for basic authentication to the Prometheus API"},
	{"prometheus-password-file", "", "file holding the basic authentication password"},
	{"prometheus-ca-file", "", "PEM file of the CA that signed the Prometheus API's certificate"},
	{"prometheus-insecure-skip-verify", false, "do not verify the Prometheus API's certificate"},
	{"prometheus-headers", []string{}, "extra request headers as Name=value (comma-separated), e.g. X-Scope-OrgID=tenant for Mimir"},
	{"prometheus-label-filter", "", "label matchers added to every query, e.g. cluster=\"prod\""},
	{"prometheus-step", time.Minute, "resolution of the CPU history"},
	{"prometheus-rate-window", 5 * time.Minute, "range of rate() over the CPU counter; at least two scrape intervals"},
	{"prometheus-ownership", true, "attribute pods through kube-state-metrics' kube_pod_owner and kube_replicaset_owner where present"},
	{"prometheus-timeout", usage.DefaultQueryTimeout, "bound of each query to the Prometheus API, its answer included"},
	{"percentile", 0.9, "usage percentile recommendations start from, in [0.5, 1]"},
	{"half-life", 24 * time.Hour, "age at which a usage sample weighs half as much, 1h to 720h"},
	{"memory-peak-interval", time.Hour, "memory enters the histogram as one peak per interval, whole minutes from 1m to 24h"},
	{"min-samples", 12, "fewest samples a recommendation is made from"},
	{"change-threshold", 0.1, "relative change below which the current value is kept; 0 writes every change"},
	{"git-url", "", "URL of the GitOps repository (file://, http://, https://, ssh:// or user@host:path)"},
	{"git-branch", "main", "base branch the changes are for"},
	{"git-push-branch", "", "branch to commit to; from git-branch-template when empty, equal to git-branch to push directly"},
	{"git-branch-template", defaultBranchTemplate, "template of the push branch; {{.Base}} is git-branch, {{.Path}} git-path, {{.Shard}} the shard index, {{.Sharded}} whether shard-count is above 1"},
	{"git-direct-push", false, "commit straight onto git-branch, with no push branch or pull request"},
	{"git-path", ".", "subtree of the repository holding the manifests"},
	{"render-mode", "auto", "how changes land: inplace edits the defining file, patch writes a kustomize patch in the overlay, auto patches only where the file is a shared base"},
	{"render-paths", []string{}, "namespace=path pairs (comma-separated): the directory, relative to the repository root, that renders a namespace's workloads"},
	{"max-file-size", "4Mi", "size (a quantity such as 4Mi, or bytes) above which a repository file is not read; what it defines is reported, not rendered"},
	{"git-username", "", "user name for HTTP(S) authentication"},
	{"git-token", "", "token or password for HTTP(S) authentication"},
	{"git-token-file", "", "file holding the token (e.g. a mounted Secret); used when git-token is empty"},
	{"git-author-name", "recommend-job", "commit author name"},
	{"git-author-email", "recommend-job@users.noreply.github.com", "commit author email"},
	{"git-ssh-key-file", "", "private key for an ssh git-url (e.g. a mounted Secret)"},
	{"git-known-hosts-file", "", "known_hosts file listing the ssh server's host keys; required for an ssh git-url"},
	{"git-commit-template", "", "Go text/template of the commit message; a title and the changes listed when empty"},
	{"git-committer-name", "", "committer name; git-author-name when empty"},
	{"git-committer-email", "", "committer email; git-author-email when empty"},
	{"git-signing-key-file", "", "key that signs the commits: an armored OpenPGP private key or an OpenSSH private key, unencrypted"},
	{"git-signing-format", "openpgp", "format of git-signing-key-file: openpgp or ssh"},
	{"forge", "none", "where to open the pull request: github, gitlab, gitea or none"},
	{"forge-api-url", "", "API base URL of the forge; github.com's and gitlab.com's when empty, required for gitea"},
	{"forge-token", "", "token for the forge's API; git-token when empty"},
	{"forge-token-file", "", "file holding the forge token; used when forge-token is empty"},
	{"forge-repository", "", "owner/name of the repository on the forge; from git-url's path when empty"},
	{"pr-labels", []string{}, "labels of the pull request (comma-separated)"},
	{"pr-reviewers", []string{}, "user names asked to review the pull request (comma-separated)"},
	{"pr-close-when-empty", false, "close the open pull request when a run finds nothing to change"},
	{"dry-run", false, "render and report, but do not commit or push"},
	{"fail-on-partial", false, "exit 1 when the run completed but some ResourceRecommend was invalid, had no history or could not be rendered"},
	{"run-timeout", defaultRunTimeout, "deadline of the whole run; keep it below the Job's activeDeadlineSeconds, so that the run still reports"},
	{"output", "table", "report format: table, json, yaml, or markdown (the pull request's body)"},
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
		case []string:
			flags.StringSlice(s.key, v, s.usage)
		case int:
			flags.Int(s.key, v, s.usage)
		case float64:
			flags.Float64(s.key, v, s.usage)
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
		if err := readConfigFile(v, *configFile); err != nil {
			return nil, err
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
	var err error
	if c.GitToken, err = secret(c.GitToken, c.GitTokenFile); err != nil {
		errs = append(errs, fmt.Errorf("git-token-file: %w", err))
	}
	errs = append(errs, c.completeCollect()...)
	errs = append(errs, c.completeGit()...)
	if c.PrometheusURL == "" {
		errs = append(errs, errors.New("prometheus-url: required"))
	} else if err := checkURL(c.PrometheusURL, "http", "https"); err != nil {
		errs = append(errs, fmt.Errorf("prometheus-url: %w", err))
	}
	if c.GitURL == "" && !c.DryRun {
		errs = append(errs, errors.New("git-url: required unless dry-run is set"))
	} else if c.GitURL != "" && !scpLikeURL(c.GitURL) {
		if err := checkURL(c.GitURL, "file", "http", "https", "ssh"); err != nil {
			errs = append(errs, fmt.Errorf("git-url: %w", err))
		}
	}
	if c.GitBranch == "" {
		errs = append(errs, errors.New("git-branch: must not be empty"))
	}
	if c.RunTimeout <= 0 {
		errs = append(errs, fmt.Errorf("run-timeout: must be positive, got %s", c.RunTimeout))
	}
	// The bounds of the window extension, so that the run's own window
	// costs no more queries than a ResourceRecommend may ask for.
	if err := collect.CheckWindow(c.Window); err != nil {
		errs = append(errs, fmt.Errorf("window: %w", err))
	}
	errs = append(errs, c.completePrometheus()...)
	if _, err := render.ParseMode(c.RenderMode); err != nil {
		errs = append(errs, fmt.Errorf("render-mode: %w", err))
	}
	if _, err := render.ParsePaths(c.RenderPaths); err != nil {
		errs = append(errs, fmt.Errorf("render-paths: %w", err))
	}
	if _, err := render.ParseFileSize(c.MaxFileSize); err != nil {
		errs = append(errs, fmt.Errorf("max-file-size: %w", err))
	}
	switch report.Format(c.Output) {
	case report.FormatTable, report.FormatJSON, report.FormatYAML, formatMarkdown:
	default:
		errs = append(errs, fmt.Errorf("output: must be table, json, yaml or markdown, got %q", c.Output))
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

// readConfigFile reads the YAML file into v, refusing a key no setting
// has: a misspelled key would otherwise be dropped without a word.
func readConfigFile(v *viper.Viper, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(b, &keys); err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
	}
	var unknown []string
	for k := range keys {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config file: unknown keys %s", strings.Join(unknown, ", "))
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	return nil
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
	for key, list := range map[string][]string{"namespaces": c.Namespaces, "exclude-namespaces": c.ExcludeNamespaces} {
		for _, ns := range list {
			if msgs := validation.ValidateNamespaceName(ns, false); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: %q: %s", key, ns, strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// scpLikeRE matches git's scp-like ssh address, user@host:path.
var scpLikeRE = regexp.MustCompile(`^(?:[^@/:]+@)?[^@/:]+:[^/]`)

// scpLikeURL reports whether raw is an scp-like ssh address, not a URL.
func scpLikeURL(raw string) bool {
	return !strings.Contains(raw, "://") && scpLikeRE.MatchString(raw)
}

// isSSH reports whether the git url is reached over ssh.
func isSSH(raw string) bool {
	return scpLikeURL(raw) || strings.HasPrefix(raw, "ssh://")
}

// validBranch reports whether name is a branch name git accepts, roughly:
// no spaces, control characters, "..", or any of ~^:?*[\.
func validBranch(name string) bool {
	return name != "" && !strings.ContainsAny(name, " ~^:?*[\\\t\n") && !strings.Contains(name, "..") &&
		!strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "-") && !strings.HasSuffix(name, ".lock")
}

// completeGit fills and checks the git and pull request settings.
func (c *Config) completeGit() []error {
	var errs []error
	sharded := c.ShardCount > 1
	if c.GitDirectPush {
		if c.GitPushBranch != "" && c.GitPushBranch != c.GitBranch {
			errs = append(errs, fmt.Errorf("git-push-branch: must be empty or git-branch with git-direct-push, got %q", c.GitPushBranch))
		}
		if sharded {
			// Each shard rebuilds the branch with its own changes only.
			errs = append(errs, errors.New("git-direct-push: cannot be used with shard-count above 1: the shards would overwrite each other's changes"))
		}
		c.GitPushBranch = c.GitBranch
	}
	if sharded && c.GitPushBranch != "" && !c.GitDirectPush {
		errs = append(errs, errors.New("git-push-branch: cannot be fixed with shard-count above 1; use git-branch-template with {{.Shard}}"))
	}
	if c.GitBranch != "" && !validBranch(c.GitBranch) {
		errs = append(errs, fmt.Errorf("git-branch: %q is not a valid branch name", c.GitBranch))
	} else if c.GitPushBranch == "" {
		tmpl := c.GitBranchTemplate
		branch, err := c.pushBranch(tmpl, c.ShardIndex)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("git-branch-template: %w", err))
		case !validBranch(branch):
			errs = append(errs, fmt.Errorf("git-branch-template: %q is not a valid branch name", branch))
		case sharded && !shardedTemplate(c, tmpl):
			errs = append(errs, errors.New("git-branch-template: must use {{.Shard}} with shard-count above 1, or the shards would overwrite each other's changes"))
		default:
			c.GitPushBranch = branch
		}
	}
	if isSSH(c.GitURL) {
		if c.GitSSHKeyFile == "" {
			errs = append(errs, errors.New("git-ssh-key-file: required for an ssh git-url"))
		}
		if c.GitKnownHostsFile == "" {
			errs = append(errs, errors.New("git-known-hosts-file: required for an ssh git-url; host keys are never trusted unchecked"))
		}
	}
	if _, err := gitops.ParseCommitTemplate(c.GitCommitTemplate); err != nil {
		errs = append(errs, fmt.Errorf("git-commit-template: %w", err))
	}
	switch c.GitSigningFormat {
	case gitops.SigningOpenPGP, gitops.SigningSSH:
	default:
		errs = append(errs, fmt.Errorf("git-signing-format: must be openpgp or ssh, got %q", c.GitSigningFormat))
	}
	switch c.Forge {
	case gitops.ForgeNone, gitops.ForgeGitHub, gitops.ForgeGitLab, gitops.ForgeGitea:
	default:
		errs = append(errs, fmt.Errorf("forge: must be github, gitlab, gitea or none, got %q", c.Forge))
	}
	var err error
	if c.ForgeToken, err = secret(c.ForgeToken, c.ForgeTokenFile); err != nil {
		errs = append(errs, fmt.Errorf("forge-token-file: %w", err))
	}
	if c.ForgeToken == "" {
		c.ForgeToken = c.GitToken
	}
	if c.ForgeToken == "" {
		// A token may come inside git-url, as GitHub documents.
		if u, err := url.Parse(c.GitURL); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok {
				c.ForgeToken = p
			} else {
				c.ForgeToken = u.User.Username()
			}
		}
	}
	if c.Forge != gitops.ForgeNone && c.Forge != "" && !c.GitDirectPush {
		if c.ForgeToken == "" {
			errs = append(errs, fmt.Errorf("forge-token: required for forge %s", c.Forge))
		}
		if c.Forge == gitops.ForgeGitea && c.ForgeAPIURL == "" {
			errs = append(errs, errors.New("forge-api-url: required for forge gitea"))
		}
		if c.ForgeAPIURL != "" {
			if err := checkURL(c.ForgeAPIURL, "http", "https"); err != nil {
				errs = append(errs, fmt.Errorf("forge-api-url: %w", err))
			}
		}
	}
	return errs
}

// defaultBranchTemplate names the push branch after the base branch, and
// after the shard when there are several.
const defaultBranchTemplate = "recommend-job/{{.Base}}{{if .Sharded}}-shard-{{.Shard}}{{end}}"

// pushBranch renders the branch template for a shard.
func (c *Config) pushBranch(tmpl string, shard int) (string, error) {
	t, err := template.New("branch").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	data := struct {
		Base, Path string
		Shard      int
		Sharded    bool
	}{c.GitBranch, strings.Trim(path.Clean("/"+c.GitPath), "/"), shard, c.ShardCount > 1}
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "/"), nil
}

// shardedTemplate reports whether tmpl gives every shard its own branch.
func shardedTemplate(c *Config, tmpl string) bool {
	a, errA := c.pushBranch(tmpl, 0)
	b, errB := c.pushBranch(tmpl, 1)
	return errA == nil && errB == nil && a != b
}

// defaultRunTimeout is 90% of the chart's default activeDeadlineSeconds
// (1800), the share the chart gives a run of any deadline.
const defaultRunTimeout = 27 * time.Minute
