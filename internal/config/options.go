package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/deployers"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// CollectOptions are the settings of the collector: which
// ResourceRecommends are in scope, and what it does with them.
func (c *Config) CollectOptions(log *slog.Logger) []collect.Option {
	return []collect.Option{
		collect.WithNamespace(c.Namespace),
		collect.WithNamespaces(c.Namespaces...),
		collect.WithExcludedNamespaces(c.ExcludeNamespaces...),
		collect.WithLabelSelector(c.LabelSelector),
		collect.WithShard(c.ShardIndex, c.ShardCount),
		collect.WithStatusWriting(c.WriteStatus),
		collect.WithHPAAwareness(c.HPAAware),
		collect.WithHPAMode(c.Parsed.HPAMode),
		collect.WithLogger(log),
	}
}

// RenderOptions are the settings of render, as Load parsed them, and the
// loader of the charts that Helm releases take from chart repositories
// and OCI registries, with the credentials of helm-repository-config. Call
// it once per run: the loader keeps what it fetched for the run.
func (c *Config) RenderOptions() []render.Option {
	return []render.Option{render.WithMode(c.Parsed.RenderMode), render.WithPaths(c.Parsed.RenderPaths),
		render.WithMaxFileSize(c.Parsed.MaxFileSize), render.WithCharts(c.chartLoader()), render.WithRepositoryURL(withoutUserInfo(c.GitURL)),
		render.WithClusterName(c.ArgoCDClusterName)}
}

// DeployerOptions are what the lister of the live Argo CD and Flux
// objects reads, and the repository they are compared with.
func (c *Config) DeployerOptions() deployers.Options {
	return deployers.Options{ArgoNamespaces: c.ArgoCDNamespaces, FluxNamespaces: c.FluxNamespaces, RepoURL: withoutUserInfo(c.GitURL), Branch: c.GitBranch}
}

// minRenderMemory is the least helm-render-memory: the data segment Go's
// runtime takes before a render starts is some 80 MiB.
const minRenderMemory = 128 << 20

// chartLoader is a run's loader of remote charts, which sends each
// repository the credentials helm-repository-config gives it and gives
// each fetch chart-fetch-timeout.
func (c *Config) chartLoader(opts ...chartfetch.LoaderOption) *chartfetch.Loader {
	base := []chartfetch.LoaderOption{chartfetch.WithCredentials(c.chartCredentials.lookup), chartfetch.WithFetchTimeout(c.ChartFetchTimeout),
		chartfetch.WithDependencyHosts(c.RepositoryFetchHosts)}
	if c.chartCAs != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: c.chartCAs, MinVersion: tls.VersionTLS12}
		base = append(base, chartfetch.WithHTTPClient(&http.Client{Transport: t}))
	}
	if c.ChartSecretsDir != "" {
		base = append(base, chartfetch.WithSecretsDir(c.ChartSecretsDir))
	}
	return chartfetch.NewLoader(append(base, opts...)...)
}

// Verify are the thresholds that watch the job's merged changes.
func (c *Config) Verify() verify.Thresholds {
	return verify.Thresholds{Period: c.VerifyPeriod, OOMKills: c.VerifyOOMKills, Restarts: c.VerifyRestarts,
		ThrottledAfter: c.VerifyThrottledAfter, ThrottledBefore: c.VerifyThrottledBefore}
}

// GitOptions are the repository, its branches, credentials and commits,
// as Load parsed and checked them (gitops.Prepare): every checkout of the
// run uses them as they are.
func (c *Config) GitOptions() gitops.Options { return c.git }

// gitSettings are the git settings, before gitops.Prepare parses them.
func (c *Config) gitSettings() gitops.Options {
	return gitops.Options{
		URL:            c.GitURL,
		BaseBranch:     c.GitBranch,
		PushBranch:     c.GitPushBranch,
		GroupPrefix:    c.groupPrefix,
		GroupSuffix:    c.groupSuffix,
		Cluster:        c.ClusterIdentity(),
		Username:       c.GitUsername,
		Token:          c.GitToken,
		SSHKeyFile:     c.GitSSHKeyFile,
		KnownHostsFile: c.GitKnownHostsFile,
		AuthorName:     c.GitAuthorName,
		AuthorEmail:    c.GitAuthorEmail,
		CommitterName:  c.GitCommitterName,
		CommitterEmail: c.GitCommitterEmail,
		SigningKeyFile: c.GitSigningKeyFile,
		SigningFormat:  c.GitSigningFormat,
		Secrets:        []string{c.ForgeToken},
	}
}

// ForgeOptions are where and how the pull requests are opened.
func (c *Config) ForgeOptions() forge.Options {
	return forge.Options{
		Kind:           c.Forge,
		APIURL:         c.ForgeAPIURL,
		Token:          c.ForgeToken,
		Repository:     c.ForgeRepository,
		Timeout:        c.ForgeTimeout,
		Labels:         c.PRLabels,
		Reviewers:      c.PRReviewers,
		CloseWhenEmpty: c.PRCloseWhenEmpty,
	}
}

// ForgeClient is the client of the forge, built once by Load for the run
// and doctor both; nil when the job asks nothing of a forge (forge none,
// or a direct push without the dashboard).
func (c *Config) ForgeClient() forge.Forge { return c.forge }

// prepareGit parses the git settings and builds the forge's client once,
// when every setting they take has passed its own check: an unreadable
// key or a forge-repository that is not owner/name fails Load, before
// the run contacts anything.
func (c *Config) prepareGit() []error {
	var errs []error
	var err error
	c.git = c.gitSettings()
	if c.GitURL != "" {
		if c.git, err = gitops.Prepare(c.git); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", gitSettingKey(err), err))
		}
	}
	opts := c.ForgeOptions()
	if !opts.Enabled() || (c.GitDirectPush && !c.Dashboard) {
		// A direct push opens no pull request; only the dashboard asks
		// for the forge then.
		return errs
	}
	if c.forge, err = forge.New(opts, c.git); err != nil {
		errs = append(errs, fmt.Errorf("forge-repository: %w", err))
	}
	return errs
}

// gitSettingKey is the key of the setting that err, of gitops.Prepare,
// names.
func gitSettingKey(err error) string {
	var se *gitops.SettingError
	if !errors.As(err, &se) {
		return "git-url"
	}
	switch se.Setting {
	case "SSHKeyFile":
		return "git-ssh-key-file"
	case "KnownHostsFile":
		return "git-known-hosts-file"
	case "SigningKeyFile":
		return "git-signing-key-file"
	default:
		return "git-url"
	}
}

// ClusterIdentity is the cluster the job writes for (gitops.Options.Cluster):
// the cluster setting, or else what two clusters over one repository do
// not share, git-path unless it is the root and argocd-cluster-name,
// joined with "/". A job over the whole repository that names no Argo CD
// cluster has none, and keeps the branch names it always had.
func (c *Config) ClusterIdentity() string {
	if c.Cluster != "" {
		return c.Cluster
	}
	var parts []string
	if p := strings.Trim(path.Clean("/"+c.GitPath), "/"); p != "" {
		parts = append(parts, p)
	}
	if c.ArgoCDClusterName != "" {
		parts = append(parts, c.ArgoCDClusterName)
	}
	return strings.Join(parts, "/")
}
