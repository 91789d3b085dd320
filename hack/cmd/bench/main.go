// Command bench runs the benchmark of a whole recommend-job run at one or
// more scales and prints a table per scale (see package hack/bench and
// BENCHMARKS.md):
//
//	hack/run ./hack/cmd/bench -n "100 1000 5000" [-out results.md|results.json]
//
// Each scale starts the test bed, runs the job, its floor and the
// katalyst-style baseline (up to -baseline-max), and stops the bed before
// the next one; with -warm, each scale's bed stays up until its warm run,
// the other scales' cold runs in between (bench.RunScales).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/hack/bench"
	"github.com/recommend-job/recommend-job/internal/testbed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	scales := fl.String("n", "100 1000 5000", "`scales` to run, space- or comma-separated")
	out := fl.String("out", "", "also write the results to `file`: JSON when it ends in .json, markdown otherwise")
	noFloor := fl.Bool("no-floor", false, "leave the floor out")
	noBaseline := fl.Bool("no-baseline", false, "leave the katalyst-style baseline out")
	noKSM := fl.Bool("no-kube-state-metrics", false, "write no kube-state-metrics ownership series")
	window := fl.Duration("window", bench.DefaultWindow, "usage history the job reads")
	horizon := fl.Duration("horizon", bench.DefaultHorizon, "how far past now the written history goes, which is how long it is reused")
	cache := fl.String("cache", "", "`directory` of the cached history and of the runs' files (default .cache/bench of the repository)")
	keep := fl.Bool("keep", false, "keep the bed's data after each scale")
	ref := fl.String("ref", "", "build the job as of this `commit` (git archive) rather than from the work tree")
	backend := fl.String("backend", bench.BackendPrometheus, "metrics `backend` the job queries: prometheus or victoriametrics (no floor nor baseline)")
	warm := fl.Duration("warm", 0, "run the job again this long after the cold run, warm from its checkpoints (e.g. 1h), then once without checkpoints to compare; with several scales, the others run cold meanwhile")
	memoryLimit := fl.String("memory-limit", "", "run the job as in a container of this memory `limit` (e.g. 512Mi): in a memory cgroup of its own with that limit")
	groupBy := fl.String("group-by", "none", "the job's --pr-group-by: `grouping` none (one branch), namespace, application, label:<key> or annotation:<key> (a branch per group)")
	forge := fl.String("forge", bench.ForgeNone, "`forge` the job opens its pull requests on: none, or gitea (a real Gitea holds the repository; its git and API requests are recorded and the forge's calls counted)")
	baselineMax := fl.Int("baseline-max", bench.DefaultBaselineMax, "leave the katalyst-style baseline out above this `scale` (0: at every scale)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	ns, err := parseScales(*scales)
	if err != nil {
		return err
	}
	var limit int64
	if *memoryLimit != "" {
		q, err := resource.ParseQuantity(*memoryLimit)
		if err != nil || q.Value() <= 0 {
			return fmt.Errorf("memory-limit %q: want a quantity such as 512Mi", *memoryLimit)
		}
		limit = q.Value()
	}
	if *forge != bench.ForgeNone && *forge != bench.ForgeGitea {
		return fmt.Errorf("forge %q: want %s or %s", *forge, bench.ForgeNone, bench.ForgeGitea)
	}
	root, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "bench: %s "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
	}
	logf("building the job")
	var job, commit string
	if *ref != "" {
		job, commit, err = bench.BuildJobAt(ctx, root, *ref, "")
	} else {
		job, err = bench.BuildJob(ctx, root, "")
	}
	if err != nil {
		return err
	}
	command := "hack/cmd/bench"
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		command += " " + a
	}
	opts := make([]bench.Options, len(ns))
	for i, n := range ns {
		opts[i] = bench.Options{
			N: n, RepoRoot: root, CacheDir: *cache, JobBinary: job, Keep: *keep,
			Data:    bench.DataOptions{Window: *window, Horizon: *horizon, NoKubeStateMetrics: *noKSM},
			NoFloor: *noFloor, NoBaseline: *noBaseline || (*baselineMax > 0 && n > *baselineMax),
			Warm: *warm, Backend: *backend, GroupBy: *groupBy, Forge: *forge, MemoryLimit: limit, Command: command, Commit: commit, Logf: logf,
		}
	}
	if *warm > 0 && len(ns) > 1 {
		logf("scales %v, cold then warm %s later, interleaved", ns, *warm)
	}
	var results []*bench.Result
	return bench.RunScales(ctx, opts, func(res *bench.Result) error {
		results = append(results, res)
		fmt.Fprintln(stdout)
		if err := res.WriteText(stdout); err != nil {
			return err
		}
		if *out != "" {
			return writeResults(*out, results)
		}
		return nil
	})
}

// parseScales reads "100 1000,5000".
func parseScales(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("scale %q: want a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no scale given")
	}
	return out, nil
}

// writeResults writes every scale measured so far to path.
func writeResults(path string, results []*bench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if filepath.Ext(path) == ".json" {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		err = enc.Encode(results)
	} else {
		for _, r := range results {
			if err = r.WriteMarkdown(f); err != nil {
				break
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
