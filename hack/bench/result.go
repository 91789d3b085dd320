package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that JSON shows as text, e.g. "1.5s".
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration written as text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// String is the duration as time.Duration shows it.
func (d Duration) String() string { return time.Duration(d).String() }

// Row is one line of a scale's table: a stage of the run, the run's
// total, a part of the floor or the baseline.
type Row struct {
	Name string   `json:"name"`
	Wall Duration `json:"wall"`
	// APIRequests are the requests the apiserver received.
	APIRequests int `json:"apiRequests"`
	// ForgeRequests are the requests the forge's API received, with
	// Options.Forge.
	ForgeRequests int `json:"forgeRequests,omitempty"`
	// Queries are the PromQL queries Prometheus received.
	Queries int `json:"promqlQueries"`
	// Samples are the samples Prometheus scanned for those queries
	// (totalQueryableSamples).
	Samples int64 `json:"samplesScanned"`
	// Bytes are the bytes of the answers of the apiserver, Prometheus and
	// the git server (or the forge, its API included), as sent
	// (compressed when they were).
	Bytes int64 `json:"bytesReceived"`
	// PeakRSS is the job's highest resident set size in the stage, in
	// bytes; zero when not measured.
	PeakRSS int64 `json:"peakRSS,omitempty"`
	// Note says how the row was measured, when that needs saying.
	Note string `json:"note,omitempty"`
}

// Ratios are the figures the benchmark sets targets for.
type Ratios struct {
	// RunOverFloor is the run's wall time over the floor's (target: at
	// most 1.5).
	RunOverFloor float64 `json:"runOverFloor"`
	// BaselineOverHistory is the baseline's wall time over the history
	// stage's (target: at least 10).
	BaselineOverHistory float64 `json:"baselineOverHistory,omitempty"`
	// HistoryOverQueries is the history stage's wall time over its
	// queries replayed alone, HistoryOverConcurrent over them replayed at
	// the job's concurrency.
	HistoryOverQueries    float64 `json:"historyOverQueries"`
	HistoryOverConcurrent float64 `json:"historyOverConcurrent,omitempty"`
	// ScannedOverStored is the samples the run's queries scanned over the
	// samples stored in the window (target: at most 2).
	ScannedOverStored float64 `json:"scannedOverStored"`
	// BaselineScannedOverStored is the same for the baseline.
	BaselineScannedOverStored float64 `json:"baselineScannedOverStored,omitempty"`
}

// Checks are the counts a run is expected to reach.
type Checks struct {
	ResourceRecommends int `json:"resourceRecommends"`
	// WithValues counts the ResourceRecommends with a recommended value
	// for each of their containers' resources.
	WithValues int `json:"withValues"`
	// Changed counts the container resources whose value changed.
	Changed int    `json:"changed"`
	Pushed  bool   `json:"pushed"`
	Branch  string `json:"branch,omitempty"`
	// Files are the files the pushed commit changed.
	Files int `json:"files"`
	// ExitCode is the job's.
	ExitCode int `json:"exitCode"`
	// Warnings counts the job's log lines at warn or error.
	Warnings int `json:"warnings"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel"`
	Memory   int64  `json:"memory"`
	OS       string `json:"os"`
	Go       string `json:"go"`
}

// Result is everything one scale measured.
type Result struct {
	N          int            `json:"n"`
	Namespaces int            `json:"namespaces"`
	Kinds      map[string]int `json:"kinds"`
	// Kustomize counts the workloads in kustomize layouts.
	Kustomize int       `json:"kustomize"`
	Date      time.Time `json:"date"`
	Machine   Machine   `json:"machine"`
	Commit    string    `json:"commit"`
	Command   string    `json:"command"`
	// Backend is the metrics backend the job queried.
	Backend string `json:"backend,omitempty"`
	// MemoryLimit is the limit of the memory cgroup the job ran in, in
	// bytes; zero when it ran without one (Options.MemoryLimit).
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
	Data        Data  `json:"data"`
	// Setup is the time taken to get the bed, the cluster and the
	// repository ready, data aside.
	Setup Duration `json:"setup"`
	// Stages are the run's stages, then Total the whole run, VmHWM its
	// peak resident set size.
	Stages []Row `json:"stages"`
	Total  Row   `json:"total"`
	// Floor are the run's list calls, its PromQL queries and a clone and
	// push of the same change, each issued alone; FloorTotal their sum.
	Floor      []Row `json:"floor"`
	FloorTotal Row   `json:"floorTotal"`
	// Concurrent is the run's queries replayed again, as many at a time
	// as the job had in flight; nil when it had one at a time.
	Concurrent *Row `json:"concurrent,omitempty"`
	// Baseline is the history read the katalyst way; nil when not run.
	Baseline *Row `json:"baseline,omitempty"`
	// Stored are the samples Prometheus holds in the window, per metric
	// the job reads.
	Stored      map[string]int64 `json:"stored"`
	StoredTotal int64            `json:"storedTotal"`
	Ratios      Ratios           `json:"ratios"`
	Checks      Checks           `json:"checks"`
	// APICalls are the run's apiserver requests, method and path.
	APICalls []string `json:"apiCalls"`
	// QueriesPerNamespace are the run's PromQL queries per namespace.
	QueriesPerNamespace float64 `json:"queriesPerNamespace"`
	// QueryShapes are the run's PromQL queries and series listings,
	// matchers elided, with their range, step and count.
	QueryShapes []string `json:"queryShapes"`
	// Forge is what the run asked of the forge and what came of it, with
	// Options.Forge; nil without a forge.
	Forge *Forge `json:"forge,omitempty"`
	// Warm is the warm run's, with Options.Warm.
	Warm *Warm `json:"warm,omitempty"`
	// Targets are the targets this scale's figures meet or miss.
	Targets []Target `json:"targets,omitempty"`
}

// machine reads the machine's description from /proc.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kib, _ := strconv.ParseInt(f[0], 10, 64)
					m.Memory = kib * 1024
				}
			}
		}
	}
	return m
}

// commit returns the repository's HEAD, with -dirty when the tree has
// changes.
func commit(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "-dirty"
	}
	return c
}
