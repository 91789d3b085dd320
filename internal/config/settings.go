package config

import (
	"time"

	"github.com/recommend-job/recommend-job/internal/cost"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

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
	{"hpa-aware", true, "take account of the HorizontalPodAutoscalers that scale a target on a resource's utilization, relative to its request"},
	{"hpa-mode", "hold", "for a resource an HPA scales the target on by utilization: hold (leave the request alone) or adjust (change the request, and the HPA's averageUtilization in the same commit so that it scales at the same usage per pod)"},
	{"prometheus-url", "", "base URL of the Prometheus-compatible API holding usage history"},
	{"window", usage.DefaultWindow, "how much usage history to read, 24h to 720h"},
	{"prometheus-bearer-token", "", "bearer token for the Prometheus API"},
	{"prometheus-bearer-token-file", "", "file holding the bearer token, read on every request (e.g. a projected service account token)"},
	{"prometheus-username", "", "user name for basic authentication to the Prometheus API"},
	{"prometheus-password", "", "password for basic authentication to the Prometheus API"},
	{"prometheus-password-file", "", "file holding the basic authentication password, read on every request"},
	{"prometheus-ca-file", "", "PEM file of the CA that signed the Prometheus API's certificate; reloaded when it changes"},
	{"prometheus-insecure-skip-verify", false, "do not verify the Prometheus API's certificate"},
	{"prometheus-headers", []string{}, "extra request headers as Name=value (comma-separated), e.g. X-Scope-OrgID=tenant for Mimir"},
	{"prometheus-sigv4-region", "", "sign requests with AWS Signature Version 4 for this region (Amazon Managed Service for Prometheus), with the credentials the AWS SDK finds in the environment"},
	{"prometheus-sigv4-role-arn", "", "role to assume for SigV4 signing, with the credentials of the environment"},
	{"prometheus-oauth2-token-url", "", "token endpoint of OAuth2 client credentials (e.g. Azure Monitor workspaces)"},
	{"prometheus-oauth2-client-id", "", "OAuth2 client ID"},
	{"prometheus-oauth2-client-secret-file", "", "file holding the OAuth2 client secret, read on every token request"},
	{"prometheus-oauth2-scopes", []string{}, "OAuth2 scopes (comma-separated), e.g. https://prometheus.monitor.azure.com/.default"},
	{"prometheus-google-credentials", false, "authenticate with Google's application default credentials (Google Cloud Managed Service for Prometheus): $GOOGLE_APPLICATION_CREDENTIALS or workload identity"},
	{"prometheus-label-filter", "", "label matchers added to every query, e.g. cluster=\"prod\""},
	{"prometheus-step", Auto, "resolution of the CPU history: a duration, or auto for each namespace's scrape interval, measured in its samples"},
	{"prometheus-rate-window", Auto, "range of rate() over the CPU counter, at least two scrape intervals: a duration, or auto for two of each namespace's scrape intervals"},
	{"prometheus-ownership", true, "attribute pods through kube-state-metrics' kube_pod_owner, kube_replicaset_owner and kube_job_owner where present"},
	{"prometheus-timeout", usage.DefaultQueryTimeout, "bound of each query to the Prometheus API, its answer included"},
	{"prometheus-concurrency", 4, "namespaces whose history is read at a time, each with its own queries"},
	{"percentile", recommend.DefaultPercentile, "usage percentile recommendations start from, in [0.5, 1]"},
	{"half-life", recommend.DefaultHalfLife, "age at which a usage sample weighs half as much, 1h to 720h"},
	{"memory-peak-interval", usage.DefaultPeakInterval, "memory enters the histogram as one peak per interval, whole minutes from 1m to 24h"},
	{"startup-window", usage.DefaultStartupWindow, "memory is never recommended below the highest working set of a container within this long after it started (startup peaks, warm-up), up to 1h; 0 turns the floor off"},
	{"min-samples", recommend.DefaultMinSamples, "fewest samples a recommendation is made from"},
	{"change-threshold", recommend.DefaultChangeThreshold, "relative change below which the current value is kept; 0 writes every change"},
	{"git-url", "", "URL of the GitOps repository (file://, http://, https://, ssh:// or user@host:path)"},
	{"git-branch", "main", "base branch the changes are for"},
	{"git-push-branch", "", "branch to commit to; from git-branch-template when empty, equal to git-branch to push directly"},
	{"git-branch-template", defaultBranchTemplate, "template of the push branch; {{.Base}} is git-branch, {{.Path}} git-path, {{.Shard}} the shard index, {{.Sharded}} whether shard-count is above 1, {{.Group}} a pull request group's name and hash (empty in the push branch itself)"},
	{"git-direct-push", false, "commit straight onto git-branch, with no push branch or pull request"},
	{"git-path", ".", "subtree of the repository holding the manifests"},
	{"render-mode", "auto", "how changes land: inplace edits the defining file, patch writes a kustomize patch in the overlay, auto patches only where the file is a shared base"},
	{"render-paths", []string{}, "namespace=path pairs (comma-separated): the directory, relative to the repository root, that renders a namespace's workloads"},
	{"max-file-size", "4Mi", "size (a quantity such as 4Mi, or bytes) above which a repository file is not read; what it defines is reported, not rendered"},
	{"argocd-namespaces", []string{"argocd"}, "namespaces whose live Argo CD Applications are read (comma-separated): they say where a target they deploy is rendered from; none when empty"},
	{"flux-namespaces", []string{}, "namespaces whose live Flux Kustomizations, HelmReleases, GitRepositories and OCIRepositories are read (comma-separated); all namespaces when empty"},
	{"argocd-cluster-name", "", "this cluster's name in Argo CD, for the clusters generator of the repository's ApplicationSets; that generator is not evaluated when empty"},
	{"helm-render-memory", "256Mi", "memory of the process that renders a chart (a quantity): a chart whose render needs more fails its release alone"},
	{"helm-render-cpu", 30 * time.Second, "processor time of one render of a chart, after which its process is killed and its release fails"},
	{"helm-render-output", "8Mi", "most bytes one render of a chart may output (a quantity); a release whose chart renders more fails"},
	{"helm-repository-config", "", "Helm repositories file (repositories.yaml, as helm repo add writes it) whose entries give the user name and password of chart repositories and OCI registries by URL"},
	{"chart-ca-file", "", "PEM file of CA certificates that chart repositories and OCI registries may be signed by (a private CA), trusted in addition to the system's"},
	{"repository-fetch-hosts", []string{}, "hosts (host or host:port, comma-separated) that the repository's own files may make the job fetch from: the dependencies a chart directory's Chart.yaml takes from chart repositories; none when empty"},
	{"chart-secrets-dir", "", "directory of the Secrets that Flux OCIRepositories' and HelmRepositories' secretRef and certSecretRef name, mounted as <dir>/<namespace>/<name>/<key>"},
	{"chart-fetch-timeout", chartfetch.DefaultFetchTimeout, "bound of each fetch from a chart repository or OCI registry (an index, a tag list, a chart), its answer included; a release whose chart did not come in time is reported, the others go on"},
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
	{"forge-timeout", forge.DefaultTimeout, "bound of each call to the forge's API; a call past it fails only its group's pull request or the dashboard"},
	{"forge-repository", "", "owner/name of the repository on the forge; from git-url's path when empty"},
	{"pr-labels", []string{}, "labels of the pull request (comma-separated)"},
	{"pr-reviewers", []string{}, "user names asked to review the pull request (comma-separated)"},
	{"pr-close-when-empty", false, "close the open pull request when a run finds nothing to change"},
	{"pr-limit", defaultPRLimit, "most open pull requests of the job's groups at once; 0 for no limit"},
	{"pr-per-run", defaultPRPerRun, "most pull requests a run opens for its groups; 0 for no limit"},
	{"pr-closed-hold", 720 * time.Hour, "how long a group's pull request that a person closed without merging holds the group while its values stay within the change threshold; 0 holds nothing"},
	{"dashboard", false, "keep one issue on the forge up to date with the groups' pull requests, those waiting or held, and the targets that could not be rendered"},
	{"verify-period", verify.DefaultPeriod, "how long each merged change of the job is watched after it took effect, against as long a period before; 0 turns verification off"},
	{"record-namespace", "", "namespace of the ConfigMap that records the commits the job pushed, which verification, corrections and holds trust alone; the job's own namespace when it runs in a pod"},
	{"record-name", "recommend-job-record", "name of that ConfigMap"},
	{"checkpoints", true, "keep what each run folded of each target's CPU and memory history in ConfigMaps of record-namespace, per shard, so that the next run reads only what is new; false reads every window whole"},
	{"price-cpu-core-hour", cost.DefaultCPUCoreHour, "price of a CPU core requested for an hour, for the cost of the changes; OpenCost's default on-demand price"},
	{"price-memory-gib-hour", cost.DefaultMemoryGiBHour, "price of a GiB of memory requested for an hour; OpenCost's default on-demand price"},
	{"price-currency", cost.DefaultCurrency, "currency of the prices, as shown beside the money: a code such as USD or EUR, or a symbol"},
	{"verify-oom-kills", verify.DefaultOOMKills, "OOM kills after a memory cut, more than before, that make it a regression"},
	{"verify-restarts", verify.DefaultRestarts, "restarts after a cut, more than before, that make it a regression"},
	{"verify-throttled-after", verify.DefaultThrottledAfter, "share of CPU periods throttled after a CPU cut above which, from below verify-throttled-before, it regressed"},
	{"verify-throttled-before", verify.DefaultThrottledBefore, "share of CPU periods throttled before a CPU cut below which a rise past verify-throttled-after is a regression"},
	{"cluster", "", "this cluster's identity in its group branches, their pull requests' titles and its dashboard, so that the jobs of two clusters over one repository keep apart; when empty, git-path (unless the root) and argocd-cluster-name, joined with /"},
	{"pr-group-by", "application", "one pull request per group of changes, each on its own branch: none, namespace, application (what deploys the target), label:<key> or annotation:<key> (of the ResourceRecommend)"},
	{"dry-run", false, "render and report, but do not commit or push"},
	{"fail-on-partial", false, "exit 1 when the run completed but some ResourceRecommend was invalid, had no history or could not be rendered"},
	{"run-timeout", defaultRunTimeout, "deadline of the whole run; keep it below the Job's activeDeadlineSeconds, so that the run still reports"},
	{"output", "table", "report format: table, json, yaml, or markdown (the pull request's body)"},
	{"log-level", "info", "log level: debug, info, warn or error"},
}

// defaultPRPerRun and defaultPRLimit pace a first run over a large fleet,
// as Renovate's defaults do (2 an hour, 10 open): a nightly run opens a
// batch a team reviews in a day, about 50 of GitHub's content-creating
// requests with their labels and reviewers, well under its secondary
// limit of 80 a minute; and no more than 20 wait for review at once, the
// groups that save the most first. 0 lifts either.
const (
	defaultPRPerRun = 10
	defaultPRLimit  = 20
)

// defaultBranchTemplate names the push branch after the base branch, and
// after the shard when there are several.
const defaultBranchTemplate = "recommend-job/{{.Base}}{{if .Sharded}}-shard-{{.Shard}}{{end}}"

// defaultRunTimeout is 90% of the chart's default activeDeadlineSeconds
// (1800), the share the chart gives a run of any deadline.
const defaultRunTimeout = 27 * time.Minute
