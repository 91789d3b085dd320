package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

// rateWindow is the job's default range of rate(), which the baseline uses
// too.
const rateWindow = 5 * time.Minute

// repoName is the GitOps repository's name on the git server.
const repoName = "bench"

// baseBranch is the repository's branch the job reads and targets.
const baseBranch = "main"

// CheckpointNamespace is the job's record namespace when Options.Warm is
// set: where its checkpoints are kept between the runs.
const CheckpointNamespace = "recommend-job"

// DefaultBaselineMax is the largest scale hack/cmd/bench runs the
// katalyst-style baseline at by default: its 4N queries would take 20 to
// 25 minutes at N = 20,000, where the issue sets no target against it.
const DefaultBaselineMax = 5000

// runTimeout bounds the job's run: far above what any scale takes, so
// that only a hung run is cut.
const runTimeout = 3 * time.Hour

// Metrics are the metrics the job's queries read, whose stored samples the
// scanned ones are compared with.
var Metrics = []string{
	history.CPUMetric,
	history.MemoryMetric,
	history.StartTimeMetric,
	history.PodOwnerMetric,
	history.ReplicaSetOwnerMetric,
	"kube_job_owner",
	history.LastTerminatedMetric,
	history.RestartsMetric,
}

// Options configure one scale of the benchmark.
type Options struct {
	// N is the number of workloads and ResourceRecommends.
	N int
	// RepoRoot is the repository's root; testbed.RepoRoot() when empty.
	RepoRoot string
	// CacheDir holds the usage history per N; <RepoRoot>/.cache/bench when
	// empty.
	CacheDir string
	// WorkDir holds the run's files (the bed, the job's log); emptied
	// first. <CacheDir>/<N>-run when empty.
	WorkDir string
	// JobBinary is the job; built from ./cmd/recommend-job into
	// <RepoRoot>/.cache/bin when empty.
	JobBinary string
	// Data shapes the usage history.
	Data DataOptions
	// NoFloor and NoBaseline leave the floor or the baseline out.
	NoFloor, NoBaseline bool
	// Backend is the metrics backend the job queries: BackendPrometheus
	// (the default) or BackendVictoriaMetrics, which is loaded with the
	// bed's history. Against VictoriaMetrics there is no floor nor
	// baseline, which measure Prometheus, and the samples scanned are
	// Prometheus's for the same queries: VictoriaMetrics gives no count.
	Backend string
	// Keep keeps the bed's data in WorkDir after the run.
	Keep bool
	// MemoryLimit, when positive, runs the job as in a container of that
	// many bytes: in a memory cgroup of its own with that limit, which
	// the job reads as in a pod, and the kernel enforces.
	MemoryLimit int64
	// Warm, when positive, runs the job again this long after its first
	// run ended, on the same bed, warm from the checkpoints the first run
	// wrote in CheckpointNamespace, and then once without checkpoints at
	// the same moment, whose values the warm run's are compared with.
	// The job has no clock setting: the benchmark waits.
	Warm time.Duration
	// Between, when set, is called between the steps of the cold
	// measurement (after the run, its replay, the floor, the baseline), so
	// that another scale's warm run that fell due runs there, on its own
	// bed, and never while a step of this one runs. RunScales sets it.
	Between func(context.Context) error
	// GroupBy is the job's --pr-group-by: "none" (one branch, the
	// default) or a grouping (namespace, application, ...), which writes a
	// branch per group.
	GroupBy string
	// Forge is where the job opens its pull requests: ForgeNone (the
	// default) or ForgeGitea, which holds the repository on a real Gitea
	// behind a proxy that records both the job's git requests and its
	// forge API calls. The job keeps its own pacing (pr-per-run,
	// pr-limit), as a user gets it.
	Forge string
	// Command is the command line recorded with the result.
	Command string
	// Commit is the commit the job was built from; the repository's HEAD
	// (with -dirty when the tree has changes) when empty.
	Commit string
	// Logf receives progress; nothing when nil.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() (Options, error) {
	if o.N <= 0 {
		return o, fmt.Errorf("n must be positive, got %d", o.N)
	}
	if o.RepoRoot == "" {
		root, err := testbed.RepoRoot()
		if err != nil {
			return o, err
		}
		o.RepoRoot = root
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(o.RepoRoot, ".cache", "bench")
	}
	if o.WorkDir == "" {
		o.WorkDir = filepath.Join(o.CacheDir, strconv.Itoa(o.N)+"-run")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	o.Data = o.Data.withDefaults()
	if o.GroupBy == "" {
		o.GroupBy = "none"
	}
	if o.GroupBy != "none" && !o.NoFloor {
		// The floor pushes the job's changed files as one branch holds
		// them; a grouped run's are spread over its groups' branches.
		return o, fmt.Errorf("group-by %s: the floor is measured on one branch; run it with no-floor", o.GroupBy)
	}
	switch o.Forge {
	case "", ForgeNone:
		o.Forge = ForgeNone
	case ForgeGitea:
	default:
		return o, fmt.Errorf("forge %q: want %s or %s", o.Forge, ForgeNone, ForgeGitea)
	}
	switch o.Backend {
	case "", BackendPrometheus:
		o.Backend = BackendPrometheus
	case BackendVictoriaMetrics:
		o.NoFloor, o.NoBaseline = true, true
	default:
		return o, fmt.Errorf("backend %q: want %s or %s", o.Backend, BackendPrometheus, BackendVictoriaMetrics)
	}
	return o, nil
}

// BuildJob builds ./cmd/recommend-job of the repository at root into bin;
// <root>/.cache/bin/recommend-job when empty. It returns the binary's path.
func BuildJob(ctx context.Context, root, bin string) (string, error) {
	if bin == "" {
		bin = filepath.Join(root, ".cache", "bin", "recommend-job")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/recommend-job")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the job: %w: %s", err, out)
	}
	return bin, nil
}

// BuildJobAt builds ./cmd/recommend-job as of the commit ref of the
// repository at root, from a copy of its files (git archive), into bin,
// and returns the binary's path and the commit's short hash: the job as
// committed, whatever the work tree holds.
func BuildJobAt(ctx context.Context, root, ref, bin string) (string, string, error) {
	hash, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", ref+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("build the job at %s: %w", ref, err)
	}
	src, err := os.MkdirTemp("", "recommend-job-src-")
	if err != nil {
		return "", "", fmt.Errorf("build the job at %s: %w", ref, err)
	}
	defer os.RemoveAll(src)
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, ref, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build the job at %s: %w: %s", ref, err, out)
	}
	if bin == "" {
		bin = filepath.Join(root, ".cache", "bin", "recommend-job-"+strings.TrimSpace(string(hash)))
	}
	if bin, err = BuildJob(ctx, src, bin); err != nil {
		return "", "", err
	}
	return bin, strings.TrimSpace(string(hash)), nil
}

// env is what one scale has set up: the bed, the proxies in front of it
// and the recorder behind them.
type env struct {
	opts  Options
	fleet Fleet
	bed   *testbed.Bed
	rec   *Recorder
	api   *Proxy
	prom  *Proxy
	// git is in front of the git server, or of Gitea with a forge.
	git    *Proxy
	remote GitRemote
	// gitea holds the repository with Options.Forge, and forgeRepo is its
	// owner/name there.
	gitea     *testbed.Gitea
	forgeRepo string
	// backend is the URL the job's queries go to, through prom.
	backend string
	vm      *testbed.VictoriaMetrics
}

// Run benchmarks one scale: it starts the bed on the fleet's usage
// history, creates the cluster and the repository, runs the job through
// counting proxies, then the floor and the baseline, with Options.Warm the
// warm run, and stops the bed.
func Run(ctx context.Context, opts Options) (*Result, error) {
	s, err := Start(ctx, opts)
	if s == nil {
		return nil, err
	}
	defer s.Close()
	if err == nil && s.e.opts.Warm > 0 {
		err = s.Warm(ctx)
	}
	return s.res, err
}

// Scale is one scale being measured: what was measured so far, and its
// bed, which stays up between the cold run and the warm run.
type Scale struct {
	e    *env
	res  *Result
	cold *JobRun
}

// Start measures the cold run of one scale as Run does, and leaves its bed
// up for Warm; Close stops it. On an error after the bed started, it
// returns the scale too, with what was measured, for Close.
func Start(ctx context.Context, opts Options) (*Scale, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	res := &Result{N: opts.N, Date: time.Now().UTC(), Machine: machine(), Commit: opts.Commit, Command: opts.Command, Backend: opts.Backend,
		MemoryLimit: opts.MemoryLimit}
	if res.Commit == "" {
		res.Commit = commit(ctx, opts.RepoRoot)
	}
	fleet := NewFleet(opts.N)
	res.Namespaces, res.Kustomize = len(fleet.Namespaces), countKustomize(fleet)
	res.Kinds = map[string]int{}
	for _, k := range []string{KindDeployment, KindStatefulSet, KindDaemonSet} {
		res.Kinds[k] = fleet.Count(k)
	}
	if opts.JobBinary == "" {
		opts.Logf("building the job")
		if opts.JobBinary, err = BuildJob(ctx, opts.RepoRoot, ""); err != nil {
			return nil, err
		}
	}
	data, err := EnsureData(ctx, opts.CacheDir, fleet, time.Now(), opts.Data, opts.Logf)
	if err != nil {
		return nil, err
	}
	res.Data = data
	setup := time.Now()
	e, err := start(ctx, opts, fleet, data)
	if e == nil {
		return nil, err
	}
	s := &Scale{e: e, res: res}
	if err != nil {
		return s, err
	}
	res.Setup = Duration(time.Since(setup))
	opts.Logf("set up in %s: bed, %d workloads and ResourceRecommends in %d namespaces, repository", time.Since(setup).Round(time.Millisecond), fleet.N, len(fleet.Namespaces))
	s.cold, err = e.measure(ctx, res)
	res.Targets = res.targets()
	return s, err
}

// Result is what the scale measured so far.
func (s *Scale) Result() *Result { return s.res }

// WarmAt is when the warm run is due: Options.Warm after the cold run
// ended.
func (s *Scale) WarmAt() time.Time { return s.cold.End.Add(s.e.opts.Warm) }

// Warm waits until WarmAt, then measures the warm run on the scale's bed
// and fills in the result's Warm.
func (s *Scale) Warm(ctx context.Context) error {
	err := s.e.warm(ctx, s.res, s.cold)
	s.res.Targets = s.res.targets()
	return err
}

// Close stops the scale's bed.
func (s *Scale) Close() { s.e.close() }

func countKustomize(f Fleet) int {
	n := 0
	for _, w := range f.Workloads {
		if w.Kustomize {
			n++
		}
	}
	return n
}

// start starts the bed on a copy of the data, the proxies, and creates the
// cluster's objects and the repository.
func start(ctx context.Context, opts Options, fleet Fleet, data Data) (*env, error) {
	if err := os.RemoveAll(opts.WorkDir); err != nil {
		return nil, fmt.Errorf("empty the work directory: %w", err)
	}
	bedDir := filepath.Join(opts.WorkDir, "bed")
	if err := copyTree(data.Dir, filepath.Join(bedDir, "prometheus")); err != nil {
		return nil, fmt.Errorf("copy the usage history: %w", err)
	}
	e := &env{opts: opts, fleet: fleet, rec: &Recorder{}}
	bed, err := testbed.Up(ctx, testbed.Options{Dir: bedDir, RepoRoot: opts.RepoRoot, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	e.bed = bed
	e.backend = bed.Prometheus.URL
	if opts.Backend == BackendVictoriaMetrics {
		if err := e.startVictoriaMetrics(ctx, data.Dir); err != nil {
			return e, err
		}
	}
	if opts.Forge == ForgeGitea {
		if err := e.startGitea(ctx); err != nil {
			return e, err
		}
	}
	if err := e.startProxies(); err != nil {
		return e, err
	}
	if err := CreateCluster(ctx, bed.APIServer.RESTConfig(), opts.RepoRoot, fleet); err != nil {
		return e, err
	}
	if opts.Warm > 0 {
		ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + CheckpointNamespace + "\n"
		if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(ns)); err != nil {
			return e, err
		}
	}
	return e, e.createRepo(ctx)
}

func (e *env) startProxies() error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.bed.APIServer.CAData) {
		return errors.New("start the apiserver proxy: no CA certificate")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr.MaxIdleConnsPerHost = 16
	var err error
	// The proxy authenticates the job's requests: a kubeconfig sends no
	// token to a server without TLS, as the proxy is.
	auth := http.Header{"Authorization": {"Bearer " + e.bed.APIServer.AdminToken}}
	if e.api, err = StartProxy(ServerAPI, e.bed.APIServer.URL, tr, auth, e.rec); err != nil {
		return err
	}
	promTr := http.DefaultTransport.(*http.Transport).Clone()
	promTr.MaxIdleConnsPerHost = 16
	if e.prom, err = StartProxy(ServerPrometheus, e.backend, promTr, nil, e.rec); err != nil {
		return err
	}
	if e.gitea != nil {
		// The job reaches Gitea's git and its API at one address.
		e.git, err = StartForgeProxy(e.gitea.APIURL(), giteaAPIPrefix, e.rec)
		return err
	}
	e.git, err = StartProxy(ServerGit, strings.TrimSuffix(e.bed.Git.BaseURL, "/"), nil, nil, e.rec)
	return err
}

// close stops the proxies and the bed, and removes the bed's data unless
// asked to keep it.
func (e *env) close() {
	for _, p := range []*Proxy{e.api, e.prom, e.git} {
		if p != nil {
			_ = p.Close()
		}
	}
	if e.vm != nil {
		_ = e.vm.Stop()
	}
	if e.gitea != nil {
		if err := e.gitea.Close(); err != nil {
			e.opts.Logf("stopping gitea: %v", err)
		}
	}
	if e.bed != nil {
		if err := e.bed.Close(); err != nil {
			e.opts.Logf("stopping the bed: %v", err)
		}
	}
	if !e.opts.Keep {
		_ = os.RemoveAll(filepath.Join(e.opts.WorkDir, "bed"))
	}
}

// kubeconfig writes a kubeconfig pointing at the apiserver proxy.
func (e *env) kubeconfig() (string, error) {
	path := filepath.Join(e.opts.WorkDir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: e.api.URL}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench", Namespace: "default"}
	cfg.CurrentContext = "bench"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write the job's kubeconfig: %w", err)
	}
	return path, nil
}

// runJob runs the job once, a full run that pushes a branch, with extra
// arguments, its log in the work directory's file logName. With
// Options.Warm it keeps checkpoints.
func (e *env) runJob(ctx context.Context, logName string, extra ...string) (*JobRun, error) {
	kubeconfig, err := e.kubeconfig()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", kubeconfig,
		"--prometheus-url", e.prom.URL,
		"--window", e.opts.Data.Window.String(),
		"--git-url", e.remote.URL,
		"--git-username", e.remote.Username,
		"--git-branch", baseBranch,
		"--run-timeout", runTimeout.String(),
		// The pipeline's cost, with one branch unless asked: a branch
		// per group is the run's cost, a pull request per group the
		// forge's, measured with Options.Forge.
		"--pr-group-by", e.opts.GroupBy,
		"--output", "json",
		"--log-level", "info",
	}
	if e.opts.Warm > 0 {
		args = append(args, "--record-namespace", CheckpointNamespace)
	}
	forgeArgs, forgeEnv := e.forgeArgs()
	args = append(append(args, forgeArgs...), extra...)
	// The tokens go in the environment, in no command line.
	env := append([]string{"RECOMMEND_GIT_TOKEN=" + e.remote.Password, "KUBECONFIG="}, forgeEnv...)
	bin := e.opts.JobBinary
	if e.opts.MemoryLimit > 0 {
		cg, err := newMemoryCgroup(e.opts.MemoryLimit)
		if err != nil {
			return nil, err
		}
		defer cg.remove()
		bin, args = cg.command(bin, args)
	}
	return RunJob(ctx, bin, args, env, filepath.Join(e.opts.WorkDir, logName))
}

// measure runs the job, then the floor and the baseline, and fills in res;
// it returns the run.
func (e *env) measure(ctx context.Context, res *Result) (*JobRun, error) {
	e.opts.Logf("running the job on %d ResourceRecommends", e.fleet.N)
	run, err := e.runJob(ctx, "job.log")
	if err != nil {
		return nil, err
	}
	return run, e.measureRun(ctx, res, run)
}

// measureRun fills in res for the cold run: its rows, the floor and the
// baseline.
func (e *env) measureRun(ctx context.Context, res *Result, run *JobRun) error {
	e.opts.Logf("the job exited with %d after %s (log in %s)", run.ExitCode, run.End.Sub(run.Start).Round(time.Millisecond), filepath.Join(e.opts.WorkDir, "job.log"))
	res.Checks = checks(run)
	apiReqs := e.rec.Requests(ServerAPI, run.Start, run.End)
	promReqs := e.rec.Requests(ServerPrometheus, run.Start, run.End)
	for _, r := range apiReqs {
		res.APICalls = append(res.APICalls, r.Method+" "+r.Path+queryNote(r.Query))
	}
	res.QueryShapes = queryShapes(promReqs)
	if e.gitea != nil {
		res.Forge = forgeFigures(ForgeGitea, e.rec.Requests(ServerForge, run.Start, run.End),
			len(e.rec.Requests(ServerGit, run.Start, run.End)), run.Report)
	}
	if run.ExitCode != 0 {
		return fmt.Errorf("the job exited with %d: %s%s", run.ExitCode, run.Report.Failed, run.Report.Interrupted)
	}
	if err := e.between(ctx); err != nil {
		return err
	}
	promReplay, err := e.attribute(ctx, res, run, apiReqs, promReqs)
	if err != nil {
		return err
	}
	end := queriesEnd(promReqs, run.End)
	if err := e.stored(ctx, res, end); err != nil {
		return err
	}
	if err := e.between(ctx); err != nil {
		return err
	}
	if !e.opts.NoFloor {
		if err := e.floor(ctx, res, run, apiReqs, promReqs, promReplay); err != nil {
			return err
		}
		if err := e.between(ctx); err != nil {
			return err
		}
	}
	if !e.opts.NoBaseline {
		if err := e.baseline(ctx, res, end); err != nil {
			return err
		}
		return e.between(ctx)
	}
	return nil
}

// between calls Options.Between, if any.
func (e *env) between(ctx context.Context) error {
	if e.opts.Between == nil {
		return nil
	}
	return e.opts.Between(ctx)
}

// attribute replays the run's queries for the samples each scanned, and
// fills in the rows of the run's stages; it returns the replayed queries,
// which are also the floor's.
func (e *env) attribute(ctx context.Context, res *Result, run *JobRun, apiReqs, promReqs []Request) ([]Replayed, error) {
	e.opts.Logf("replaying the run's %d Prometheus requests (PromQL queries and series listings) alone, the queries with their statistics", len(promReqs))
	// Only Prometheus counts the samples a query scans: against another
	// backend, the same queries are replayed on the bed's Prometheus.
	replayOn := e.prom.URL
	if e.opts.Backend != BackendPrometheus {
		replayOn = e.bed.Prometheus.URL
	}
	promReplay, _, err := ReplayPromQL(ctx, replayOn, promReqs, 1)
	if err != nil {
		return nil, err
	}
	scanned := make([]int64, len(promReqs))
	for _, r := range promReplay {
		scanned[r.Index] = r.Samples
	}
	// Git's requests alone cut render out: the forge calls the job makes
	// while it renders (whether a group waits) stay in it.
	gitReqs := e.rec.Requests(ServerGit, run.Start, run.End)
	forgeReqs := e.rec.Requests(ServerForge, run.Start, run.End)
	stages := Timeline(run.Start, run.End, run.Stages, gitReqs)
	res.Stages, res.Total = stageRows(stages, run, apiReqs, promReqs, gitReqs, forgeReqs, scanned)
	if len(e.fleet.Namespaces) > 0 {
		res.QueriesPerNamespace = float64(res.Total.Queries) / float64(len(e.fleet.Namespaces))
	}
	return promReplay, nil
}

// stored counts the samples Prometheus holds in the window ending at end,
// which the run's scanned samples are compared with.
func (e *env) stored(ctx context.Context, res *Result, end time.Time) error {
	var err error
	if res.Stored, err = StoredSamples(ctx, e.bed.Prometheus.URL, Metrics, e.opts.Data.Window, end); err != nil {
		return err
	}
	for _, v := range res.Stored {
		res.StoredTotal += v
	}
	if res.StoredTotal > 0 {
		res.Ratios.ScannedOverStored = float64(res.Total.Samples) / float64(res.StoredTotal)
	}
	return nil
}

// baseline reads the history the katalyst way over the window ending at
// end, where the run's queries ended.
func (e *env) baseline(ctx context.Context, res *Result, end time.Time) error {
	e.opts.Logf("reading the history the katalyst way: %d queries, %d at a time", 4*e.fleet.N, BaselineParallel)
	b, err := Baseline(ctx, e.prom.URL, e.fleet, end, e.opts.Data.Window, rateWindow)
	if err != nil {
		return err
	}
	res.Baseline = &Row{Name: "baseline", Wall: Duration(b.Wall), Queries: b.Queries, Samples: b.Samples, Bytes: b.Bytes,
		Note: fmt.Sprintf("katalyst-style: one range query per CR, container and resource, %d in parallel", BaselineParallel)}
	if h := rowNamed(res.Stages, "history"); h != nil && h.Wall > 0 {
		res.Ratios.BaselineOverHistory = float64(b.Wall) / float64(h.Wall)
	}
	if res.StoredTotal > 0 {
		res.Ratios.BaselineScannedOverStored = float64(b.Samples) / float64(res.StoredTotal)
	}
	return nil
}

// floor measures the run's list calls, its queries (replayed already) and
// a clone and push of the same change, each alone; and, aside, the queries
// again at the job's own concurrency.
func (e *env) floor(ctx context.Context, res *Result, run *JobRun, apiReqs, promReqs []Request, promReplay []Replayed) error {
	e.opts.Logf("replaying the run's %d apiserver requests alone", len(apiReqs))
	apiReplay, err := ReplayAPI(ctx, e.api.URL, apiReqs)
	if err != nil {
		return err
	}
	lists := sumReplayed("list calls", apiReplay)
	lists.APIRequests = len(apiReplay)
	queries := sumReplayed("PromQL queries", promReplay)
	queries.Queries = countQueries(promReplay)
	res.Floor = []Row{lists, queries}
	if g := run.Report.Git; g != nil && g.Pushed {
		clone, err := e.gitFloor(ctx, g.Branch, g.Files)
		if err != nil {
			return err
		}
		res.Floor = append(res.Floor, clone)
	}
	res.FloorTotal = Row{Name: "floor"}
	for _, r := range res.Floor {
		res.FloorTotal.Wall += r.Wall
		res.FloorTotal.APIRequests += r.APIRequests
		res.FloorTotal.Queries += r.Queries
		res.FloorTotal.Samples += r.Samples
		res.FloorTotal.Bytes += r.Bytes
	}
	if res.Concurrent, err = e.concurrent(ctx, promReqs); err != nil {
		return err
	}
	if res.FloorTotal.Wall > 0 {
		res.Ratios.RunOverFloor = float64(res.Total.Wall) / float64(res.FloorTotal.Wall)
	}
	if h := rowNamed(res.Stages, "history"); h != nil && queries.Wall > 0 {
		res.Ratios.HistoryOverQueries = float64(h.Wall) / float64(queries.Wall)
		if c := res.Concurrent; c != nil && c.Wall > 0 {
			res.Ratios.HistoryOverConcurrent = float64(h.Wall) / float64(c.Wall)
		}
	}
	return nil
}

// gitFloor clones and pushes the files the job changed on its branch with
// git, and returns the floor's row of it.
func (e *env) gitFloor(ctx context.Context, branch string, files []string) (Row, error) {
	e.opts.Logf("cloning and pushing the same %d files with git", len(files))
	// The warm run's floor clones again where the cold run's did.
	dir := filepath.Join(e.opts.WorkDir, "floor")
	if err := os.RemoveAll(dir); err != nil {
		return Row{}, fmt.Errorf("git floor: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Row{}, fmt.Errorf("git floor: %w", err)
	}
	span, err := GitFloor(ctx, e.remote, baseBranch, branch, files, dir)
	if err != nil {
		return Row{}, err
	}
	row := Row{Name: "clone + push", Wall: Duration(span.End.Sub(span.Start))}
	for _, r := range e.rec.Requests(ServerGit, span.Start, span.End) {
		row.Bytes += r.Bytes
	}
	return row, nil
}

// concurrent replays the run's queries as many at a time as the job had
// in flight; nil when it had one at a time.
func (e *env) concurrent(ctx context.Context, promReqs []Request) (*Row, error) {
	n := MaxOverlap(promReqs)
	if n <= 1 {
		return nil, nil
	}
	e.opts.Logf("replaying the run's PromQL queries again, %d at a time as the job sent them", n)
	reps, wall, err := ReplayPromQL(ctx, e.prom.URL, promReqs, n)
	if err != nil {
		return nil, err
	}
	row := sumReplayed(fmt.Sprintf("PromQL queries, %d at a time", n), reps)
	row.Wall, row.Queries = Duration(wall), countQueries(reps)
	row.Note = "the run's queries at the job's own concurrency (the most it had in flight); not in the floor's sum"
	return &row, nil
}

// countQueries counts the PromQL queries among replayed requests, which
// also hold the series listings.
func countQueries(reps []Replayed) int {
	n := 0
	for _, r := range reps {
		if isQuery(r.Request) {
			n++
		}
	}
	return n
}

// sumReplayed adds replayed requests up into a floor row.
func sumReplayed(name string, reps []Replayed) Row {
	row := Row{Name: name}
	for _, r := range reps {
		row.Wall += Duration(r.Wall)
		row.Samples += r.Samples
		row.Bytes += r.Bytes
	}
	return row
}

func rowNamed(rows []Row, name string) *Row {
	for i := range rows {
		if rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}

// stageRows attributes the requests, scanned samples and memory readings of
// the run to its stages, by the time each request started.
func stageRows(stages []Stage, run *JobRun, api, prom, git, forge []Request, scanned []int64) ([]Row, Row) {
	rows := make([]Row, len(stages))
	for i, s := range stages {
		rows[i] = Row{Name: s.Name, Wall: Duration(s.Wall())}
		if s.Derived {
			rows[i].Note = "cut from the git stage by the git server's traffic: from the end of the clone to the next request; includes the commit"
			if len(forge) > 0 {
				rows[i].Note += ", and the forge calls made meanwhile (whether each group waits)"
			}
		}
	}
	for _, r := range api {
		i := stageOf(stages, r.Start)
		rows[i].APIRequests++
		rows[i].Bytes += r.Bytes
	}
	for k, r := range prom {
		i := stageOf(stages, r.Start)
		if isQuery(r) {
			rows[i].Queries++
		}
		rows[i].Bytes += r.Bytes
		rows[i].Samples += scanned[k]
	}
	for _, r := range git {
		rows[stageOf(stages, r.Start)].Bytes += r.Bytes
	}
	for _, r := range forge {
		i := stageOf(stages, r.Start)
		rows[i].ForgeRequests++
		rows[i].Bytes += r.Bytes
	}
	// A stage's peak is the highest reading in it, or the new peak the
	// kernel recorded since the reading before, which a spike between
	// two readings leaves.
	var hwm int64
	for _, m := range run.RSS {
		i := stageOf(stages, m.Time)
		rows[i].PeakRSS = max(rows[i].PeakRSS, m.RSS)
		if m.HWM > hwm {
			rows[i].PeakRSS = max(rows[i].PeakRSS, m.HWM)
			hwm = m.HWM
		}
	}
	total := Row{Name: "total", Wall: Duration(run.End.Sub(run.Start)), PeakRSS: run.MaxRSS, Note: "peak RSS is the process's VmHWM"}
	for _, r := range rows {
		total.APIRequests += r.APIRequests
		total.ForgeRequests += r.ForgeRequests
		total.Queries += r.Queries
		total.Samples += r.Samples
		total.Bytes += r.Bytes
	}
	return rows, total
}

// queriesEnd returns the latest end of the recorded queries, or def.
func queriesEnd(reqs []Request, def time.Time) time.Time {
	var end time.Time
	for _, r := range reqs {
		for _, k := range []string{"end", "time"} {
			if v := r.Form.Get(k); v != "" {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					end = latest(end, time.UnixMilli(int64(f*1000)))
				}
			}
		}
	}
	if end.IsZero() {
		return def
	}
	return end
}

// selectorValue matches the namespace and pod matchers of a query, which
// differ from one namespace to the next.
var selectorValue = regexp.MustCompile(`\b(namespace|pod)(=~?)"(?:[^"\\]|\\.)*"`)

// queryShapes describes the PromQL queries and series listings of reqs,
// the namespace and pod matchers elided, with their range and step, and
// how many of each.
func queryShapes(reqs []Request) []string {
	counts := map[string]int{}
	var order []string
	for _, r := range reqs {
		if !isQuery(r) && !isListing(r) {
			continue
		}
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		span := time.Duration((end - start) * float64(time.Second)).Round(time.Second)
		var shape string
		if isListing(r) {
			shape = fmt.Sprintf("series %s over %s", selectorValue.ReplaceAllString(strings.Join(r.Form["match[]"], " "), `$1$2"…"`), span)
		} else {
			step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
			shape = selectorValue.ReplaceAllString(r.Form.Get("query"), `$1$2"…"`) +
				fmt.Sprintf(" over %s at a %s step", span, time.Duration(step*float64(time.Second)))
		}
		if counts[shape] == 0 {
			order = append(order, shape)
		}
		counts[shape]++
	}
	out := make([]string, len(order))
	for i, shape := range order {
		out[i] = fmt.Sprintf("%d x %s", counts[shape], shape)
	}
	return out
}

// queryNote shows the parameters of a list call that matter for counting:
// its page size and whether it continues a list.
func queryNote(raw string) string {
	var parts []string
	for _, kv := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "limit":
			parts = append(parts, kv)
		case "continue":
			parts = append(parts, "continue")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "?" + strings.Join(parts, "&")
}

// checks counts what the run achieved.
func checks(run *JobRun) Checks {
	c := Checks{ExitCode: run.ExitCode, Warnings: run.Warnings, ResourceRecommends: len(run.Report.ResourceRecommends)}
	for _, rr := range run.Report.ResourceRecommends {
		all := rr.Valid && len(rr.Containers) > 0
		for _, ct := range rr.Containers {
			for _, r := range ct.Resources {
				if r.Recommended == "" {
					all = false
				}
				if r.Changed {
					c.Changed++
				}
			}
		}
		if all {
			c.WithValues++
		}
	}
	if g := run.Report.Git; g != nil {
		c.Pushed, c.Branch, c.Files = g.Pushed, g.Branch, len(g.Files)
		if c.Branch == "" && len(g.Branches) > 0 {
			// A grouped run has no branch of its own.
			c.Branch = fmt.Sprintf("%d group branches", len(g.Branches))
		}
	}
	return c
}
