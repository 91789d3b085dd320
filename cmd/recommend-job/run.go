package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/job"
	"github.com/recommend-job/recommend-job/internal/report"
)

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
	log.InfoContext(ctx, "starting", "version", version)

	rep, err := runJob(ctx, cfg, log)
	if err != nil {
		log.ErrorContext(ctx, "run failed", "error", err)
		return fail(stderr, exitFailed, err)
	}
	if err := rep.Write(stdout, report.Format(cfg.Output)); err != nil {
		return fail(stderr, exitFailed, fmt.Errorf("writing report: %w", err))
	}
	return exitOK
}

// runJob builds the clients from cfg and runs one pass.
func runJob(ctx context.Context, cfg *Config, log *slog.Logger) (*report.Report, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))

	promClient, err := api.NewClient(api.Config{Address: cfg.PrometheusURL})
	if err != nil {
		return nil, fmt.Errorf("prometheus-url: %w", err)
	}

	collector := collect.New(dyn, mapper, collect.WithNamespace(cfg.Namespace), collect.WithLogger(log))
	usage := collect.NewUsageReader(promv1.NewAPI(promClient), collect.WithWindow(cfg.Window))
	return job.Run(ctx, job.Config{
		Git: gitops.Options{
			URL:         cfg.GitURL,
			BaseBranch:  cfg.GitBranch,
			PushBranch:  cfg.GitPushBranch,
			Username:    cfg.GitUsername,
			Token:       cfg.GitToken,
			AuthorName:  cfg.GitAuthorName,
			AuthorEmail: cfg.GitAuthorEmail,
		},
		Path:   cfg.GitPath,
		DryRun: cfg.DryRun,
	}, collector, usage, log)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
