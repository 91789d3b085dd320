package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/config"
	"github.com/recommend-job/recommend-job/internal/deployers"
	"github.com/recommend-job/recommend-job/internal/doctor"
	"github.com/recommend-job/recommend-job/internal/job"
	"github.com/recommend-job/recommend-job/internal/memlimit"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/record"
	"github.com/recommend-job/recommend-job/internal/render"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	doctorMode := len(args) > 0 && args[0] == "doctor"
	if doctorMode {
		args = args[1:]
	}
	flags := config.NewFlagSet("recommend-job")
	flags.SetOutput(stderr)
	showVersion := false
	if !doctorMode {
		flags.BoolVar(&showVersion, "version", false, "print the version and exit")
	}
	flags.Usage = func() { writeHelp(stdout, doctorMode, flags) }
	if err := flags.Parse(args); errors.Is(err, pflag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitConfigured, fmt.Errorf("%w (see --help)", err))
	}
	if showVersion {
		fmt.Fprintln(stdout, "recommend-job", version)
		return exitOK
	}
	if flags.NArg() > 0 {
		return fail(stderr, exitConfigured, fmt.Errorf("unexpected arguments: %s", strings.Join(flags.Args(), " ")))
	}
	cfg, err := config.Load(flags)
	if err != nil {
		return fail(stderr, exitConfigured, err)
	}

	log := newLogger(stderr, cfg.Parsed.LogLevel)
	// client-go logs through klog, kustomize through the standard log
	// package: send both to the same JSON lines.
	klog.SetSlogLogger(log)
	slog.SetDefault(log)
	log.InfoContext(ctx, "starting", "version", version)
	aimBelowContainerLimit(ctx, cfg.Parsed.RenderLimits.Memory, log)
	// The run ends on its own before the Job's activeDeadlineSeconds, so
	// that it still reports what it had.
	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.RunTimeout, runDeadlineError{cfg.RunTimeout})
	defer cancel()
	w, err := wire(cfg, log)
	if err != nil {
		log.ErrorContext(ctx, "cannot build the clients", "error", err)
		return exitCodeFor(err)
	}
	if doctorMode {
		if err := doctor.Run(runCtx, w.doctor(cfg, log), stdout); err != nil {
			return runExitCode(ctx, runCtx, err)
		}
		return exitOK
	}

	// A chart's render runs in a child process of this binary, whose
	// limits stop a chart that would take the run's memory or time.
	exe, err := os.Executable()
	if err != nil {
		log.ErrorContext(ctx, "cannot find the job's binary to render charts with", "error", err)
		return exitFailed
	}
	charts := helmrender.Engine{Isolation: helmrender.Isolation{Command: exe, Args: []string{renderCommand}, Limits: cfg.Parsed.RenderLimits}}
	// Charts render as the cluster's helm-controller or Argo CD renders
	// them: its version (a chart's kubeVersion is checked) and API versions.
	if c, err := clusterOf(w.cached); err != nil {
		log.WarnContext(ctx, "charts render with Helm's default capabilities", "error", err)
	} else {
		charts.Cluster = c
	}
	w.job.RenderOptions = append(slices.Clip(w.job.RenderOptions), render.WithHelmEngine(charts))
	rep, err := job.Run(runCtx, w.job, w.collector, usage.NewReader(w.prometheus, cfg.UsageOptions(log)...), log)
	if err != nil {
		rep.Failed = err.Error()
	}
	// What was computed is worth showing even when the run failed late.
	if werr := writeReport(stdout, rep, cfg.Output); werr != nil {
		log.ErrorContext(ctx, "cannot write the report", "error", werr)
		return exitFailed
	}
	if err != nil {
		if cause := context.Cause(runCtx); cause != nil {
			log.ErrorContext(ctx, "run cut short", "cause", cause.Error(), "error", err)
		} else {
			log.ErrorContext(ctx, "run failed", "error", err)
		}
		return runExitCode(ctx, runCtx, err)
	}
	if rep.NothingRendered() {
		log.ErrorContext(ctx, "no target's values could be written to the repository; the report says why for each")
		return exitNotRendered
	}
	if cfg.FailOnPartial && rep.Partial() {
		log.WarnContext(ctx, "run completed with problems, and fail-on-partial is set")
		return exitFailed
	}
	return exitOK
}

// wiring is the clients and settings a run and doctor use, built from the
// configuration.
type wiring struct {
	rest      *rest.Config
	discovery *discovery.DiscoveryClient
	// cached is discovery read once per run: the kinds collect maps, the
	// capabilities charts render with and the deployer kinds served.
	cached     discovery.CachedDiscoveryInterface
	access     authorizationclient.SelfSubjectAccessReviewInterface
	collector  *collect.Collector
	prometheus usage.RangeQuerier
	job        job.Config
	// record is the job's record; nil when it keeps none.
	record *record.Store
}

// wire builds the clients and settings of a run.
func wire(cfg *config.Config, log *slog.Logger) (*wiring, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	// A hung apiserver must not hold the job until its deadline.
	restCfg.Timeout = cfg.KubeTimeout
	restCfg.QPS, restCfg.Burst = float32(cfg.KubeQPS), cfg.KubeBurst
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	metaClient, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	authz, err := authorizationclient.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating authorization client: %w", err)
	}
	promAPI, err := newPrometheusAPI(cfg, usage.WithInfoLog(log))
	if err != nil {
		return nil, err
	}
	var rec *record.Store
	var checkpoints *checkpoint.Store
	if ns := recordNamespace(cfg.RecordNamespace); ns != "" {
		core, err := corev1client.NewForConfig(restCfg)
		if err != nil {
			return nil, fmt.Errorf("creating core client: %w", err)
		}
		rec = record.New(core.ConfigMaps(ns), ns, cfg.RecordName, record.WithLogger(log))
		if cfg.Checkpoints {
			checkpoints = checkpoint.New(core.ConfigMaps(ns), ns, cfg.ShardIndex)
		}
	}
	cached := memory.NewMemCacheClient(disco)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	deployerOpts := cfg.DeployerOptions()
	deployerOpts.Served = servedBy(cached)
	collector := collect.New(dyn, mapper, append(cfg.CollectOptions(log), collect.WithMetadataClient(metaClient))...)
	w := &wiring{rest: restCfg, discovery: disco, cached: cached, access: authz.SelfSubjectAccessReviews(), collector: collector, prometheus: promAPI, job: job.Config{
		Git:            cfg.GitOptions(),
		Forge:          cfg.ForgeClient(),
		CommitTemplate: cfg.Parsed.CommitTemplate,
		Path:           cfg.GitPath,
		DryRun:         cfg.DryRun,
		Algorithm:      cfg.Algorithm(),
		RenderOptions:  cfg.RenderOptions(),
		GroupBy:        cfg.Parsed.GroupBy,
		Verify:         cfg.Verify(),
		PullRequests: job.PullRequestPolicy{
			Labels: cfg.PRLabels, Reviewers: cfg.PRReviewers, CloseWhenEmpty: cfg.PRCloseWhenEmpty,
			Limit: cfg.PRLimit, PerRun: cfg.PRPerRun, ClosedHold: cfg.PRClosedHold, Dashboard: cfg.Dashboard,
		},

		HistoryConcurrency: cfg.PrometheusConcurrency,
		Deployers:          deployers.New(dyn, deployerOpts),
		Prices:             cfg.Parsed.Prices,
	}}
	if rec != nil {
		// A nil *Store in the interface would read as a record.
		w.job.Record, w.record = rec, rec
	}
	if checkpoints != nil {
		w.job.Checkpoints = checkpoints
	}
	return w, nil
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// recordNamespace is the namespace of the job's record: the setting, else
// the pod's own; "" outside a pod.
func recordNamespace(setting string) string {
	if setting != "" {
		return setting
	}
	data, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// doctor is what doctor checks: the run's clients, reader and repository.
func (w *wiring) doctor(cfg *config.Config, log *slog.Logger) doctor.Config {
	d := doctor.Config{
		APIServer:     w.rest.Host,
		Version:       w.discovery,
		Access:        w.access,
		WriteStatus:   cfg.WriteStatus,
		Collector:     w.collector,
		PrometheusURL: cfg.PrometheusURL,
		Prometheus:    w.prometheus,
		ReaderOptions: cfg.UsageOptions(log),
		Git:           w.job.Git,
		PullRequests:  w.job.Forge,
		Verify:        w.job.Verify,
		Log:           log,
	}
	if w.record != nil {
		d.Record = w.record
	}
	if w.job.Checkpoints != nil {
		d.Checkpoints = w.job.Checkpoints
	}
	return d
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

func writeReport(w io.Writer, rep *plan.Plan, format string) error {
	if format == config.OutputMarkdown {
		_, err := io.WriteString(w, markdown.PullRequestBody(rep))
		return err
	}
	return report.Write(w, rep, report.Format(format))
}

// settingsHelp says where settings come from.
const settingsHelp = `Settings come from flags, ` + config.EnvPrefix + `_* environment variables (--git-url is
` + config.EnvPrefix + `_GIT_URL) and a YAML file of the same keys given with --config or
` + config.EnvPrefix + `_CONFIG, in that order of precedence. docs/configuration.md describes every key.
`

// writeHelp writes the help of the command, or of doctor.
func writeHelp(w io.Writer, doctorMode bool, flags *pflag.FlagSet) {
	if doctorMode {
		fmt.Fprint(w, `Usage: recommend-job doctor [flags]

Checks what a run depends on and shows why a run would recommend nothing:
whether the apiserver, Prometheus and the repository answer, whether the job
may read what it must, each ResourceRecommend's validation, the PromQL a run
sends (sorted by namespace) with how many series answer, and the samples each
container's recommendation would be computed from. It takes the settings of a
run and changes nothing. It exits 0 when every check passed, 3 when something
could not be reached, 1 when a check failed, 2 when the settings are invalid.

`+settingsHelp+"\nFlags:\n"+flags.FlagUsages())
		return
	}
	fmt.Fprint(w, `Usage:
  recommend-job [flags]          recommend requests and push them to the GitOps repository
  recommend-job doctor [flags]   check what a run depends on; changes nothing
                                 (recommend-job doctor --help)

Reads katalyst ResourceRecommends and their targets, computes CPU and memory
requests from the Prometheus history, writes them to the GitOps repository
and opens a pull request. It exits 0 when the run completed, 1 when it could
not, 2 when the settings are invalid, 3 when a dependency could not be
reached or the run reached run-timeout.

`+settingsHelp+"\nFlags:\n"+flags.FlagUsages())
}

// aimBelowContainerLimit has the garbage collector aim below the memory
// limit of the job's container, less what a chart's render may take, so
// that a run whose live heap fits is not killed for its garbage. Go's
// GOMEMLIMIT, when set, decides instead.
func aimBelowContainerLimit(ctx context.Context, renderMemory int64, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, found, err := memlimit.Container(os.DirFS("/sys/fs/cgroup"), os.DirFS("/proc"))
	if err != nil {
		log.WarnContext(ctx, "cannot read the container's memory limit: the garbage collector sets no limit of its own", "error", err)
		return
	}
	if !found {
		return
	}
	soft, ok := memlimit.Soft(limit, renderMemory)
	if !ok {
		log.WarnContext(ctx, "the container's memory limit leaves too little beside a chart's render: the garbage collector sets no limit of its own",
			"containerLimit", limit, "renderMemory", renderMemory)
		return
	}
	debug.SetMemoryLimit(soft)
	log.InfoContext(ctx, "the garbage collector aims below the container's memory limit", "containerLimit", limit, "renderMemory", renderMemory, "gcLimit", soft)
}
