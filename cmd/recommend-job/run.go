package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/job"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// apiTimeout bounds each request to the apiserver.
const apiTimeout = 30 * time.Second

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
	// client-go logs through klog; send it to the same JSON lines.
	klog.SetSlogLogger(log)
	log.InfoContext(ctx, "starting", "version", version)

	rep, err := runJob(ctx, cfg, log)
	if rep != nil {
		// What was computed is worth showing even when the run failed late.
		if werr := rep.Write(stdout, report.Format(cfg.Output)); werr != nil {
			log.ErrorContext(ctx, "cannot write the report", "error", werr)
			return exitFailed
		}
	}
	if err != nil {
		log.ErrorContext(ctx, "run failed", "error", err)
		return exitFailed
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
	// A hung apiserver must not hold the job until its deadline.
	restCfg.Timeout = apiTimeout
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
	reader := usage.NewReader(promv1.NewAPI(promClient), usage.WithWindow(cfg.Window), usage.WithLogger(log))
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
	}, collector, reader, log)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
