package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

// dataVersion names what writeData writes; a cache of another version is
// written again. Bump it whenever the fleet or the series change.
const dataVersion = 2

// Defaults of DataOptions.
const (
	// DefaultWindow is the history the job reads, its own default.
	DefaultWindow = 7 * 24 * time.Hour
	// DefaultHorizon is how far past the time of writing the data goes.
	// The job has no clock setting: it reads the window ending at the
	// moment it queries. Data reaching into the future lets one cache
	// serve every run until its horizon, each seeing a full window that
	// ends at its own now.
	DefaultHorizon = 12 * time.Hour
	// scrapeInterval is the resolution of every series written.
	scrapeInterval = time.Minute
	// lead is history before the window, so that the oldest range
	// selectors of the job's queries (rate, the hourly peaks) have data.
	lead = 2 * time.Hour
	// minRemaining is the least data left past now for a cache to be used:
	// the length of the longest run.
	minRemaining = 2 * time.Hour
	// blockSpan is the time range of each TSDB block written: the data
	// is written one day at a time, so the writer holds one day of the
	// fleet's samples, never the week.
	blockSpan = 24 * time.Hour
)

// DataOptions shape the usage history of a fleet.
type DataOptions struct {
	// Window is the history the job reads; DefaultWindow when zero.
	Window time.Duration
	// Horizon is how far past now the data goes; DefaultHorizon when zero.
	Horizon time.Duration
	// NoKubeStateMetrics leaves out kube-state-metrics' ownership series.
	NoKubeStateMetrics bool
}

func (o DataOptions) withDefaults() DataOptions {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Horizon <= 0 {
		o.Horizon = DefaultHorizon
	}
	return o
}

// Data describes the usage history of a fleet written as TSDB blocks.
type Data struct {
	Version int `json:"version"`
	N       int `json:"n"`
	// Start and End bound the samples: every series is scraped each
	// minute from Start until before End, which is past the time of
	// writing by the horizon.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Rollover is when each workload replaced its pods.
	Rollover time.Time `json:"rollover"`
	// KubeStateMetrics says whether the ownership series were written.
	KubeStateMetrics bool     `json:"kubeStateMetrics"`
	Samples          int64    `json:"samples"`
	Series           int      `json:"series"`
	Blocks           int      `json:"blocks"`
	Written          Duration `json:"written"`
	// Dir is the TSDB directory holding the blocks.
	Dir string `json:"-"`
	// Cached says that the data was found in the cache, not written.
	Cached bool `json:"cached"`
}

// usable reports whether d serves a run at now reading window.
func (d Data) usable(n int, now time.Time, opts DataOptions) bool {
	return d.Version == dataVersion && d.N == n && d.KubeStateMetrics == !opts.NoKubeStateMetrics &&
		!d.Start.After(now.Add(-opts.Window-lead/2)) && !d.End.Before(now.Add(minRemaining))
}

// EnsureData returns the usage history of f in cacheDir/<N>, writing it
// when the cache lacks it, holds another version, or ends within
// minRemaining of now.
func EnsureData(ctx context.Context, cacheDir string, f Fleet, now time.Time, opts DataOptions, logf func(string, ...any)) (Data, error) {
	opts = opts.withDefaults()
	dir := filepath.Join(cacheDir, strconv.Itoa(f.N))
	if d, err := readData(dir); err == nil && d.usable(f.N, now, opts) {
		d.Dir, d.Cached = filepath.Join(dir, "tsdb"), true
		return d, nil
	}
	logf("writing %s of usage history for %d workloads into %s", opts.Window+lead+opts.Horizon, f.N, dir)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return Data{}, fmt.Errorf("write usage history: %w", err)
	}
	begin := time.Now()
	t0 := now.UTC().Truncate(time.Minute)
	d := Data{
		Version: dataVersion, N: f.N, KubeStateMetrics: !opts.NoKubeStateMetrics,
		Start: t0.Add(-opts.Window - lead), End: t0.Add(opts.Horizon),
	}
	if err := writeData(ctx, filepath.Join(tmp, "tsdb"), f, &d, logf); err != nil {
		_ = os.RemoveAll(tmp)
		return Data{}, err
	}
	d.Written = Duration(time.Since(begin))
	// The writer's heap (12.5 GiB at N = 20,000: a day of the fleet in the
	// block writer's head) goes back to the system before a bed starts.
	debug.FreeOSMemory()
	if err := saveData(tmp, d); err != nil {
		return Data{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return Data{}, fmt.Errorf("write usage history: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Data{}, fmt.Errorf("write usage history: %w", err)
	}
	d.Dir = filepath.Join(dir, "tsdb")
	logf("wrote %d samples of %d series in %d blocks in %s", d.Samples, d.Series, d.Blocks, d.Written)
	return d, nil
}

func readData(dir string) (Data, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return Data{}, err
	}
	var d Data
	if err := json.Unmarshal(b, &d); err != nil {
		return Data{}, fmt.Errorf("read %s: %w", dir, err)
	}
	return d, nil
}

func saveData(dir string, d Data) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("save usage history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save usage history: %w", err)
	}
	return nil
}

// writeData writes the fleet's series from d.Start to d.End into dir, one
// block per day, and fills in d's counts.
func writeData(ctx context.Context, dir string, f Fleet, d *Data, logf func(string, ...any)) error {
	pods := make([][]Pod, len(f.Workloads))
	var rss [][]Pod
	for i, w := range f.Workloads {
		pods[i] = w.Pods(d.Start, d.End)
		if d.KubeStateMetrics {
			rss = append(rss, w.ReplicaSets(d.Start, d.End))
		}
	}
	d.Rollover = pods[0][len(pods[0])-1].Start
	g := &generator{fleet: f, data: d, pods: pods, replicaSets: rss, counters: map[string]float64{}, series: map[string]bool{}}
	for from := d.Start; from.Before(d.End); from = from.Add(blockSpan) {
		to := earliest(from.Add(blockSpan), d.End)
		if err := testbed.WriteBlock(ctx, dir, g.block(from, to)); err != nil {
			return err
		}
		d.Blocks++
		logf("wrote block %d (%s to %s): %d samples so far", d.Blocks, from.Format(time.DateTime), to.Format(time.DateTime), d.Samples)
	}
	d.Series = len(g.series)
	return nil
}

// generator makes the series of one block after another; it carries each
// CPU counter's value from one block to the next.
type generator struct {
	fleet       Fleet
	data        *Data
	pods        [][]Pod
	replicaSets [][]Pod
	// counters holds each CPU counter's value at the end of the last block.
	counters map[string]float64
	// series records the distinct series written.
	series map[string]bool
}

// block yields every series' samples from from until before to.
func (g *generator) block(from, to time.Time) iter.Seq[testbed.Series] {
	return func(yield func(testbed.Series) bool) {
		for i, w := range g.fleet.Workloads {
			for _, p := range g.pods[i] {
				for _, s := range g.podSeries(w, p, from, to) {
					if !g.emit(s, yield) {
						return
					}
				}
			}
			if !g.data.KubeStateMetrics {
				continue
			}
			for _, rs := range g.replicaSets[i] {
				first, last, ok := grid(g.data.Start, latest(rs.Start, from), earliest(rs.End, to))
				if ok && !g.emit(history.ReplicaSetOwner(w.Namespace, rs.Name, rs.OwnerKind, rs.OwnerName, first, last, scrapeInterval), yield) {
					return
				}
			}
		}
	}
}

func (g *generator) emit(s testbed.Series, yield func(testbed.Series) bool) bool {
	if len(s.Samples) == 0 {
		return true
	}
	g.data.Samples += int64(len(s.Samples))
	g.series[s.Name+"/"+s.Labels["pod"]+"/"+s.Labels["replicaset"]+"/"+s.Labels["container"]] = true
	return yield(s)
}

// podSeries returns the series of pod p within [from, to): per container
// its CPU counter, working set and start time, and its kube_pod_owner.
func (g *generator) podSeries(w Workload, p Pod, from, to time.Time) []testbed.Series {
	first, last, ok := grid(g.data.Start, latest(p.Start, from), earliest(p.End, to))
	if !ok {
		return nil
	}
	var out []testbed.Series
	for _, c := range w.Containers {
		labels := map[string]string{"namespace": w.Namespace, "pod": p.Name, "container": c.Name, "job": "kubelet"}
		key := p.Name + "/" + p.Start.String() + "/" + c.Name
		total := g.counters[key]
		cpu := testbed.Series{Name: history.CPUMetric, Labels: labels}
		memory := testbed.Series{Name: history.MemoryMetric, Labels: labels}
		started := testbed.Series{Name: history.StartTimeMetric, Labels: labels}
		for t := first; !t.After(last); t = t.Add(scrapeInterval) {
			cpu.Samples = append(cpu.Samples, testbed.Sample{Time: t, Value: total})
			total += c.CPU(t) * scrapeInterval.Seconds()
			memory.Samples = append(memory.Samples, testbed.Sample{Time: t, Value: c.Memory(t)})
			started.Samples = append(started.Samples, testbed.Sample{Time: t, Value: float64(p.Start.Unix())})
		}
		g.counters[key] = total
		out = append(out, cpu, memory, started)
	}
	if g.data.KubeStateMetrics {
		out = append(out, history.PodOwner(w.Namespace, p.Name, p.OwnerKind, p.OwnerName, first, last, scrapeInterval))
	}
	return out
}

// grid returns the first and last scrape times, on the grid of interval
// from origin, within [from, to), and whether there is any.
func grid(origin, from, to time.Time) (first, last time.Time, ok bool) {
	k := (from.Sub(origin) + scrapeInterval - 1) / scrapeInterval
	first = origin.Add(k * scrapeInterval)
	if !first.Before(to) {
		return time.Time{}, time.Time{}, false
	}
	n := (to.Sub(first) - 1) / scrapeInterval
	return first, first.Add(n * scrapeInterval), true
}

// copyTree copies the regular files below src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	return nil
}
