// Command stepstudy measures what reading CPU history more coarsely costs
// in precision: for workloads of several shapes (smooth, bursty, cron,
// batchy, noisy, a web service), five of each, scraped every 15s and
// every 60s, it writes a week of cAdvisor CPU counters into a real
// Prometheus, reads them with the job's own reader at several steps and
// rate windows (and with subqueries around rate()), runs the job's
// algorithm on each, and compares the p90 and the recommended request
// with today's default (a 1m step of 5m rates) and with the truth: the
// p90 of the counters' exact per-scrape rates. It also reports the points
// each way returns, the time of its CPU queries and the samples Prometheus
// scanned for them (its stats=all query statistics) against the samples
// stored. It takes about a minute on two cores.
//
//	make step-study                    # the table, and the summary in docs/metrics.md
//	hack/run ./hack/cmd/stepstudy -h   # the flags
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/usage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepstudy: %v\n", err)
		os.Exit(1)
	}
}

// window is the history the job reads by default.
const window = usage.DefaultWindow

// end is when the history ends and the reads end: a fixed time, so that
// every run measures the same data (the usage of the shapes depends on
// the time of day, and Prometheus serves a past week as well as this one).
var end = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// settings are the command line's.
type settings struct {
	replicas, rollouts int
	seed               uint64
	seeds              int
	repeat             int
	scrapes            []time.Duration
	only               map[string]bool
	markdown           bool
}

func parse(args []string, stderr io.Writer) (settings, error) {
	fs := flag.NewFlagSet("stepstudy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := settings{}
	fs.IntVar(&s.replicas, "replicas", 2, "pods per ReplicaSet of each workload")
	fs.IntVar(&s.rollouts, "rollouts", 2, "ReplicaSets of each workload over the week, one after another")
	fs.Uint64Var(&s.seed, "seed", 1, "seed of the workloads' randomness")
	fs.IntVar(&s.seeds, "seeds", 5, "workloads of each shape, with the seeds from seed on")
	fs.IntVar(&s.repeat, "repeat", 3, "reads of each way, of which the fastest is reported")
	scrapes := fs.String("scrapes", "15s,60s", "scrape intervals, comma-separated")
	only := fs.String("shapes", "", "only these shapes, comma-separated (default all)")
	fs.BoolVar(&s.markdown, "markdown", false, "also print the summary tables of docs/metrics.md")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if s.replicas < 1 || s.rollouts < 1 || s.repeat < 1 || s.seeds < 1 {
		return s, fmt.Errorf("replicas, rollouts, repeat and seeds must be at least 1")
	}
	for _, v := range strings.Split(*scrapes, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 || time.Minute%d != 0 && d%time.Minute != 0 {
			return s, fmt.Errorf("scrape interval %q: want a divisor or a multiple of a minute", v)
		}
		s.scrapes = append(s.scrapes, d)
	}
	if *only != "" {
		s.only = map[string]bool{}
		for _, name := range strings.Split(*only, ",") {
			s.only[strings.TrimSpace(name)] = true
		}
	}
	return s, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parse(args, stderr)
	if err != nil {
		return err
	}
	root, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".cache", "stepstudy")
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the last run's data: %w", err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	tools, err := prometheusTools(ctx, root)
	if err != nil {
		return err
	}

	// The reads end on a minute, as often as not; the scrapes are 7s off
	// it, as a real Prometheus's are off any grid, and start half an hour
	// before the window so that its first rate() has its whole range.
	start := end.Add(-window - 30*time.Minute + 7*time.Second)
	var studies []*study
	var all []testbed.Series
	for _, scrape := range s.scrapes {
		for _, sh := range shapes {
			if s.only != nil && !s.only[sh.name] {
				continue
			}
			for seed := s.seed; seed < s.seed+uint64(s.seeds); seed++ {
				ns := fmt.Sprintf("%s-%ds-%d", sh.name, int(scrape.Seconds()), seed)
				w := newWorkload(sh, ns, scrape, s.replicas, s.rollouts, start, end, seed)
				series := history.Series(w.containers, scrape)
				st := &study{workload: w, seed: seed, stored: stored(series, end, window)}
				in, err := truthInput(series, end, window)
				if err != nil {
					return err
				}
				if st.truth, err = recommendCPU(in); err != nil {
					return fmt.Errorf("%s: the truth: %w", ns, err)
				}
				studies = append(studies, st)
				all = append(all, series...)
			}
		}
	}
	if len(studies) == 0 {
		return fmt.Errorf("no shape named %v; the shapes are %s", keys(s.only), shapeNames())
	}
	logf("writing a week of CPU counters of %d pods into Prometheus", len(all))
	prom, err := testbed.StartPrometheusWithHistory(ctx, tools, filepath.Join(dir, "prometheus"), all)
	if err != nil {
		return err
	}
	defer func() { _ = prom.Stop() }()
	client, err := usage.NewClient(prom.URL, nil)
	if err != nil {
		return fmt.Errorf("prometheus client: %w", err)
	}

	for _, st := range studies {
		logf("reading %s in %d ways", st.namespace, len(candidatesFor(st.scrape)))
		for _, c := range candidatesFor(st.scrape) {
			r, err := measure(ctx, client, prom.URL, st.workload, c, end, s.repeat)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", st.namespace, c.name(), err)
			}
			st.rows = append(st.rows, r)
		}
	}
	printTable(stdout, studies, s)
	if s.markdown {
		printMarkdown(stdout, studies)
	}
	return nil
}

// study is one workload and what each way of reading it gave.
type study struct {
	workload
	seed   uint64
	stored int64
	truth  outcome
	rows   []row
}

// row is what one way of reading one workload gave.
type row struct {
	c       candidate
	out     outcome
	points  int
	scanned int64
	took    time.Duration
}

// measure reads w's history with the job's reader as c says, repeat
// times, runs the algorithm on it and asks Prometheus what its CPU
// queries scanned.
func measure(ctx context.Context, client *usage.Client, base string, w workload, c candidate, end time.Time, repeat int) (row, error) {
	ref := usage.WorkloadRef{Kind: "Deployment", Namespace: w.namespace, Name: w.shape.name}
	r := row{c: c}
	var rec *recorder
	var got map[usage.WorkloadRef]usage.Usage
	for i := range repeat {
		rec = &recorder{client: client, c: c}
		reader := usage.NewReader(rec, usage.WithWindow(window), usage.WithStep(c.step), usage.WithRateWindow(c.rate),
			usage.WithOwnership(false), usage.WithClock(func() time.Time { return end }))
		var err error
		if got, err = reader.Read(ctx, w.namespace, []usage.WorkloadRef{ref}); err != nil {
			return row{}, err
		}
		var took time.Duration
		for _, q := range rec.cpu {
			took += q.took
		}
		if i == 0 || took < r.took {
			r.took = took
		}
	}
	h := got[ref]["app"][corev1.ResourceCPU]
	if h == nil {
		return row{}, fmt.Errorf("no cpu history read")
	}
	var err error
	if r.out, err = recommendCPU(fromHistory(h)); err != nil {
		return row{}, err
	}
	for _, q := range rec.cpu {
		r.points += q.points
		n, err := scanned(ctx, base, q)
		if err != nil {
			return row{}, err
		}
		r.scanned += n
	}
	return r, nil
}

// prometheusTools finds the Prometheus binary, the only server the study
// runs; when it is not on PATH, the test bed installs its tools.
func prometheusTools(ctx context.Context, root string) (testbed.Tools, error) {
	if path, err := exec.LookPath("prometheus"); err == nil {
		return testbed.Tools{Prometheus: path}, nil
	}
	return testbed.EnsureTools(ctx, root)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func shapeNames() string {
	var names []string
	for _, s := range shapes {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ")
}
