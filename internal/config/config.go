package config

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// EnvPrefix prefixes every environment variable: git-url is
// RECOMMEND_GIT_URL.
const EnvPrefix = "RECOMMEND"

// FileFlag is the flag naming the configuration file; EnvPrefix_CONFIG
// names it when the flag is not given.
const FileFlag = "config"

// Config is every setting of a run.
type Config struct {
	Kubeconfig    string        `mapstructure:"kubeconfig"`
	Namespace     string        `mapstructure:"namespace"`
	PrometheusURL string        `mapstructure:"prometheus-url"`
	Window        time.Duration `mapstructure:"window"`
	GitURL        string        `mapstructure:"git-url"`
	GitBranch     string        `mapstructure:"git-branch"`
	GitPushBranch string        `mapstructure:"git-push-branch"`
	GitPath       string        `mapstructure:"git-path"`
	RenderMode    string        `mapstructure:"render-mode"`
	RenderPaths   []string      `mapstructure:"render-paths"`
	MaxFileSize   string        `mapstructure:"max-file-size"`
	// ArgoCDNamespaces and FluxNamespaces are where the live deployers
	// are read; ArgoCDClusterName is this cluster for ApplicationSets.
	ArgoCDNamespaces  []string `mapstructure:"argocd-namespaces"`
	FluxNamespaces    []string `mapstructure:"flux-namespaces"`
	ArgoCDClusterName string   `mapstructure:"argocd-cluster-name"`
	// Cluster is this cluster's identity in the branches, titles and
	// dashboard of its pull request groups; see ClusterIdentity.
	Cluster string `mapstructure:"cluster"`
	// HelmRenderMemory, HelmRenderCPU and HelmRenderOutput bound each
	// render of a chart, in its own process.
	HelmRenderMemory string        `mapstructure:"helm-render-memory"`
	HelmRenderCPU    time.Duration `mapstructure:"helm-render-cpu"`
	HelmRenderOutput string        `mapstructure:"helm-render-output"`
	// HelmRepositoryConfig is a Helm repositories file giving the
	// credentials of chart repositories; Load reads it into
	// chartCredentials.
	HelmRepositoryConfig string `mapstructure:"helm-repository-config"`
	// ChartSecretsDir holds the Secrets that Flux sources' secretRef and
	// certSecretRef name, as <dir>/<namespace>/<name>/<key>.
	ChartSecretsDir string `mapstructure:"chart-secrets-dir"`
	// ChartCAFile holds CA certificates that chart repositories and OCI
	// registries may be signed by, trusted besides the system's; Load
	// reads it into chartCAs.
	ChartCAFile string `mapstructure:"chart-ca-file"`
	// RepositoryFetchHosts are the hosts, host or host:port, that the
	// repository's own files may make the job fetch from (chart
	// directories' dependencies); none when empty.
	RepositoryFetchHosts []string `mapstructure:"repository-fetch-hosts"`
	GitUsername          string   `mapstructure:"git-username"`
	GitToken             string   `mapstructure:"git-token"`
	GitTokenFile         string   `mapstructure:"git-token-file"`
	GitAuthorName        string   `mapstructure:"git-author-name"`
	GitAuthorEmail       string   `mapstructure:"git-author-email"`
	DryRun               bool     `mapstructure:"dry-run"`
	FailOnPartial        bool     `mapstructure:"fail-on-partial"`
	// RunTimeout is the deadline of a whole run, below the Job's
	// activeDeadlineSeconds.
	RunTimeout time.Duration `mapstructure:"run-timeout"`
	Output     string        `mapstructure:"output"`
	LogLevel   string        `mapstructure:"log-level"`

	// How to reach and query the Prometheus-compatible API.
	PrometheusBearerToken        string   `mapstructure:"prometheus-bearer-token"`
	PrometheusBearerTokenFile    string   `mapstructure:"prometheus-bearer-token-file"`
	PrometheusUsername           string   `mapstructure:"prometheus-username"`
	PrometheusPassword           string   `mapstructure:"prometheus-password"`
	PrometheusPasswordFile       string   `mapstructure:"prometheus-password-file"`
	PrometheusCAFile             string   `mapstructure:"prometheus-ca-file"`
	PrometheusInsecureSkipVerify bool     `mapstructure:"prometheus-insecure-skip-verify"`
	PrometheusHeaders            []string `mapstructure:"prometheus-headers"`
	// Managed services' authentication.
	PrometheusSigV4Region            string        `mapstructure:"prometheus-sigv4-region"`
	PrometheusSigV4RoleARN           string        `mapstructure:"prometheus-sigv4-role-arn"`
	PrometheusOAuth2TokenURL         string        `mapstructure:"prometheus-oauth2-token-url"`
	PrometheusOAuth2ClientID         string        `mapstructure:"prometheus-oauth2-client-id"`
	PrometheusOAuth2ClientSecretFile string        `mapstructure:"prometheus-oauth2-client-secret-file"`
	PrometheusOAuth2Scopes           []string      `mapstructure:"prometheus-oauth2-scopes"`
	PrometheusGoogleCredentials      bool          `mapstructure:"prometheus-google-credentials"`
	PrometheusLabelFilter            string        `mapstructure:"prometheus-label-filter"`
	PrometheusStep                   string        `mapstructure:"prometheus-step"`
	PrometheusRateWindow             string        `mapstructure:"prometheus-rate-window"`
	PrometheusOwnership              bool          `mapstructure:"prometheus-ownership"`
	PrometheusTimeout                time.Duration `mapstructure:"prometheus-timeout"`
	PrometheusConcurrency            int           `mapstructure:"prometheus-concurrency"`
	// The algorithm's run-wide defaults; extensions override them per CR.
	Percentile         float64       `mapstructure:"percentile"`
	HalfLife           time.Duration `mapstructure:"half-life"`
	MemoryPeakInterval time.Duration `mapstructure:"memory-peak-interval"`
	StartupWindow      time.Duration `mapstructure:"startup-window"`
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
	HPAMode           string        `mapstructure:"hpa-mode"`

	// The git and pull request settings beyond the repository and branch.
	GitSSHKeyFile     string        `mapstructure:"git-ssh-key-file"`
	GitKnownHostsFile string        `mapstructure:"git-known-hosts-file"`
	GitBranchTemplate string        `mapstructure:"git-branch-template"`
	GitDirectPush     bool          `mapstructure:"git-direct-push"`
	GitCommitTemplate string        `mapstructure:"git-commit-template"`
	GitCommitterName  string        `mapstructure:"git-committer-name"`
	GitCommitterEmail string        `mapstructure:"git-committer-email"`
	GitSigningKeyFile string        `mapstructure:"git-signing-key-file"`
	GitSigningFormat  string        `mapstructure:"git-signing-format"`
	Forge             string        `mapstructure:"forge"`
	ForgeAPIURL       string        `mapstructure:"forge-api-url"`
	ForgeToken        string        `mapstructure:"forge-token"`
	ForgeTokenFile    string        `mapstructure:"forge-token-file"`
	ForgeRepository   string        `mapstructure:"forge-repository"`
	ForgeTimeout      time.Duration `mapstructure:"forge-timeout"`
	PRLabels          []string      `mapstructure:"pr-labels"`
	PRReviewers       []string      `mapstructure:"pr-reviewers"`
	PRCloseWhenEmpty  bool          `mapstructure:"pr-close-when-empty"`
	PRGroupBy         string        `mapstructure:"pr-group-by"`
	PRLimit           int           `mapstructure:"pr-limit"`
	PRPerRun          int           `mapstructure:"pr-per-run"`
	PRClosedHold      time.Duration `mapstructure:"pr-closed-hold"`
	Dashboard         bool          `mapstructure:"dashboard"`

	VerifyPeriod          time.Duration `mapstructure:"verify-period"`
	VerifyOOMKills        int           `mapstructure:"verify-oom-kills"`
	VerifyRestarts        int           `mapstructure:"verify-restarts"`
	VerifyThrottledAfter  float64       `mapstructure:"verify-throttled-after"`
	VerifyThrottledBefore float64       `mapstructure:"verify-throttled-before"`
	RecordNamespace       string        `mapstructure:"record-namespace"`
	RecordName            string        `mapstructure:"record-name"`
	Checkpoints           bool          `mapstructure:"checkpoints"`
	// The prices the cost of the changes is computed with.
	PriceCPUCoreHour   float64 `mapstructure:"price-cpu-core-hour"`
	PriceMemoryGiBHour float64 `mapstructure:"price-memory-gib-hour"`
	PriceCurrency      string  `mapstructure:"price-currency"`

	// ChartFetchTimeout bounds each fetch of a remote chart.
	ChartFetchTimeout time.Duration `mapstructure:"chart-fetch-timeout"`

	// groupPrefix and groupSuffix are GitBranchTemplate's text around
	// {{.Group}}; empty without it.
	groupPrefix, groupSuffix string

	// chartCredentials are those of HelmRepositoryConfig; nil without it.
	chartCredentials *chartCredentials
	// chartCAs are the system's CAs and those of ChartCAFile; nil without
	// it.
	chartCAs *x509.CertPool

	// Parsed are the settings above that are written as text, as Load
	// parsed them: nothing after Load parses their text again.
	Parsed Parsed `mapstructure:"-"`

	// git are the git settings as gitops.Prepare parsed them; forge is
	// the forge's client, nil for none (see prepareGit).
	git   gitops.Options
	forge forge.Forge
}

// Parsed are the settings that are written as text, parsed once by Load.
type Parsed struct {
	HPAMode      collect.HPAMode
	RenderMode   render.Mode
	RenderPaths  map[string]string
	MaxFileSize  int64
	RenderLimits helm.Limits
	GroupBy      gitops.GroupBy
	// CommitTemplate is git-commit-template; nil for the default.
	CommitTemplate *template.Template
	LogLevel       slog.Level
	// PrometheusStep and PrometheusRateWindow are zero for auto: measured
	// in each namespace's samples.
	PrometheusStep, PrometheusRateWindow time.Duration
	// Prices are price-cpu-core-hour, price-memory-gib-hour and
	// price-currency.
	Prices plan.Prices
}

// NewFlagSet returns a flag set with a flag for every key and FileFlag,
// which reports errors instead of exiting. Parse the arguments with it,
// then hand it to Load.
func NewFlagSet(name string) *pflag.FlagSet {
	flags := pflag.NewFlagSet(name, pflag.ContinueOnError)
	flags.SortFlags = true
	flags.String(FileFlag, "", "configuration file (YAML); $"+EnvPrefix+"_CONFIG when not given")
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
	return flags
}

// Load reads the configuration with the precedence flag > environment >
// file > default, from flags (a NewFlagSet that parsed the arguments),
// the environment and the file named by FileFlag or EnvPrefix_CONFIG. It
// fills derived defaults and validates once; the error joins one error
// per problem, each naming its key, and comes with the Config as read.
func Load(flags *pflag.FlagSet) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	for _, s := range settings {
		v.SetDefault(s.key, s.value)
		if err := v.BindPFlag(s.key, flags.Lookup(s.key)); err != nil {
			return nil, err
		}
	}
	file := os.Getenv(EnvPrefix + "_CONFIG")
	if f := flags.Lookup(FileFlag); f != nil && f.Changed {
		file = f.Value.String()
	}
	if file != "" {
		if err := readConfigFile(v, file); err != nil {
			return nil, err
		}
	}
	cfg := &Config{}
	if err := v.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	return cfg, cfg.complete()
}

// Parse parses args, which may hold flags only, and loads the
// configuration; flag errors go to stderr.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	flags := NewFlagSet("recommend-job")
	flags.SetOutput(stderr)
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	if flags.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(flags.Args(), " "))
	}
	return Load(flags)
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
