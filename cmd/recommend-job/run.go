package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/job"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// runDeadlineError is the cause of a run's end at run-timeout. It is a
// context.DeadlineExceeded, so that code checking for one still finds it.
type runDeadlineError struct{ timeout time.Duration }

func (e runDeadlineError) Error() string {
	return fmt.Sprintf("run deadline of %s exceeded", e.timeout)
}

func (e runDeadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	doctorMode := len(args) > 0 && args[0] == "doctor"
	if doctorMode {
		args = args[1:]
	}
	cfg, err := loadConfig(args, stderr)
	if errors.Is(err, errVersionRequested) {
		fmt.Fprintln(stdout, "recommend-job", version)
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return fail(stderr, exitConfigured, err)
	}
	log := newLogger(stderr, cfg.LogLevel)
	// client-go logs through klog, kustomize through the standard log
	// package: send both to the same JSON lines.
	klog.SetSlogLogger(log)
	slog.SetDefault(log)
	log.InfoContext(ctx, "starting", "version", version)
	// The run ends on its own before the Job's activeDeadlineSeconds, so
	// that it still reports what it had.
	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.RunTimeout, runDeadlineError{cfg.RunTimeout})
	defer cancel()
	if doctorMode {
		return doctor(runCtx, cfg, stdout, log)
	}

	rep, err := runJob(runCtx, cfg, log)
	if rep != nil {
		if err != nil {
			rep.Failed = err.Error()
		}
		// What was computed is worth showing even when the run failed late.
		if werr := writeReport(stdout, rep, cfg.Output); werr != nil {
			log.ErrorContext(ctx, "cannot write the report", "error", werr)
			return exitFailed
		}
	}
	if err != nil {
		if cause := context.Cause(runCtx); cause != nil {
			log.ErrorContext(ctx, "run cut short", "cause", cause.Error(), "error", err)
		} else {
			log.ErrorContext(ctx, "run failed", "error", err)
		}
		return runExitCode(ctx, runCtx, err)
	}
	if cfg.FailOnPartial && rep.Partial() {
		log.WarnContext(ctx, "run completed with problems, and fail-on-partial is set")
		return exitFailed
	}
	return exitOK
}

// runJob builds the clients from cfg and runs one pass.
func runJob(ctx context.Context, cfg *Config, log *slog.Logger) (*plan.Plan, error) {
	w, err := wire(cfg, log, nil)
	if err != nil {
		return nil, err
	}
	return job.Run(ctx, w.job, w.collector, w.reader, log)
}

// wiring is everything a pass uses, built from the configuration.
type wiring struct {
	rest      *rest.Config
	collector *collect.Collector
	reader    *usage.Reader
	job       job.Config
}

// wire builds the clients and settings of a pass. wrap, when set, wraps
// the Prometheus API, e.g. to record the queries.
func wire(cfg *Config, log *slog.Logger, wrap func(usage.RangeQuerier) usage.RangeQuerier) (*wiring, error) {
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
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	metaClient, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}

	promAPI, err := newPrometheusAPI(cfg)
	if err != nil {
		return nil, err
	}

	collector := collect.New(dyn, mapper,
		collect.WithMetadataClient(metaClient),
		collect.WithNamespace(cfg.Namespace),
		collect.WithNamespaces(cfg.Namespaces...),
		collect.WithExcludedNamespaces(cfg.ExcludeNamespaces...),
		collect.WithLabelSelector(cfg.LabelSelector),
		collect.WithShard(cfg.ShardIndex, cfg.ShardCount),
		collect.WithStatusWriting(cfg.WriteStatus),
		collect.WithHPAAwareness(cfg.HPAAware),
		collect.WithLogger(log))
	var querier usage.RangeQuerier = promAPI
	if wrap != nil {
		querier = wrap(querier)
	}
	reader := usage.NewReader(querier, usageOptions(cfg, log)...)
	jobCfg := job.Config{
		Git: gitops.Options{
			URL:            cfg.GitURL,
			BaseBranch:     cfg.GitBranch,
			PushBranch:     cfg.GitPushBranch,
			Username:       cfg.GitUsername,
			Token:          cfg.GitToken,
			SSHKeyFile:     cfg.GitSSHKeyFile,
			KnownHostsFile: cfg.GitKnownHostsFile,
			AuthorName:     cfg.GitAuthorName,
			AuthorEmail:    cfg.GitAuthorEmail,
			CommitterName:  cfg.GitCommitterName,
			CommitterEmail: cfg.GitCommitterEmail,
			SigningKeyFile: cfg.GitSigningKeyFile,
			SigningFormat:  cfg.GitSigningFormat,
			CommitTemplate: cfg.GitCommitTemplate,
			Forge: gitops.ForgeOptions{
				Kind:           cfg.Forge,
				APIURL:         cfg.ForgeAPIURL,
				Token:          cfg.ForgeToken,
				Repository:     cfg.ForgeRepository,
				Labels:         cfg.PRLabels,
				Reviewers:      cfg.PRReviewers,
				CloseWhenEmpty: cfg.PRCloseWhenEmpty,
			},
		},
		Path:          cfg.GitPath,
		DryRun:        cfg.DryRun,
		Algorithm:     algorithmOptions(cfg),
		RenderOptions: renderOptions(cfg),
	}
	return &wiring{rest: restCfg, collector: collector, reader: reader, job: jobCfg}, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// formatMarkdown prints the report as the pull request's description.
const formatMarkdown = "markdown"

func writeReport(w io.Writer, rep *plan.Plan, format string) error {
	if format == formatMarkdown {
		_, err := io.WriteString(w, gitops.PullRequestBody(rep))
		return err
	}
	return report.Write(w, rep, report.Format(format))
}

// renderOptions carries the render settings, which complete() validated.
func renderOptions(cfg *Config) []render.Option {
	mode, _ := render.ParseMode(cfg.RenderMode)
	paths, _ := render.ParsePaths(cfg.RenderPaths)
	maxSize, _ := render.ParseFileSize(cfg.MaxFileSize)
	return []render.Option{render.WithMode(mode), render.WithPaths(paths), render.WithMaxFileSize(maxSize)}
}
