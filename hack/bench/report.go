package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// header is the table's columns, with the forge's requests beside the
// apiserver's when the run had a forge.
func (r *Result) header() []string {
	h := []string{"", "wall time", "apiserver requests"}
	if r.Forge != nil {
		h = append(h, "forge requests")
	}
	return append(h, "PromQL queries", "samples scanned", "bytes received", "peak RSS")
}

// tableRows returns the table's rows as text: the stages, the total, the
// floor's parts and sum, the baseline.
func (r *Result) tableRows() [][]string {
	var rows [][]string
	add := func(name string, row Row, rss bool) {
		peak := "-"
		if rss && row.PeakRSS > 0 {
			peak = formatBytes(row.PeakRSS)
		}
		cells := []string{name, formatDuration(time.Duration(row.Wall)), formatCount(int64(row.APIRequests))}
		if r.Forge != nil {
			cells = append(cells, formatCount(int64(row.ForgeRequests)))
		}
		rows = append(rows, append(cells, formatCount(int64(row.Queries)), formatSI(row.Samples), formatBytes(row.Bytes), peak))
	}
	for _, s := range r.Stages {
		name := s.Name
		if s.Note != "" {
			name += " *"
		}
		add(name, s, true)
	}
	add("total (VmHWM)", r.Total, true)
	for _, f := range r.Floor {
		add("floor: "+f.Name, f, false)
	}
	if len(r.Floor) > 0 {
		add("floor", r.FloorTotal, false)
	}
	if r.Concurrent != nil {
		add(r.Concurrent.Name+" *", *r.Concurrent, false)
	}
	if r.Baseline != nil {
		add("baseline (katalyst)", *r.Baseline, false)
	}
	if w := r.Warm; w != nil {
		for _, s := range w.Stages {
			add("warm: "+s.Name, s, true)
		}
		add("warm total (VmHWM)", w.Total, true)
		for _, f := range w.Floor {
			add("warm floor: "+f.Name, f, false)
		}
		if len(w.Floor) > 0 {
			add("warm floor", w.FloorTotal, false)
		}
		if w.Concurrent != nil {
			add("warm: "+w.Concurrent.Name+" *", *w.Concurrent, false)
		}
	}
	return rows
}

// WriteText writes the scale's table and its context as plain text.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.title() + "\n")
	for _, l := range r.context() {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(r.header(), "\t")+"\t")
	for _, row := range r.tableRows() {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, l := range r.summary() {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the scale's table and its context as markdown.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", r.title())
	for _, l := range r.context() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	header := r.header()
	b.WriteString("\n| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range r.tableRows() {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
	for _, l := range r.summary() {
		fmt.Fprintf(&b, "%s\n\n", l)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Result) title() string {
	return fmt.Sprintf("N = %s: %s ResourceRecommends over %s workloads in %d namespaces",
		formatCount(int64(r.N)), formatCount(int64(r.N)), formatCount(int64(r.N)), r.Namespaces)
}

// context describes the run: machine, date, commit, command, data.
func (r *Result) context() []string {
	m := r.Machine
	cached := "written for this run"
	if r.Data.Cached {
		cached = "from the cache"
	}
	limit := "no memory limit"
	if r.MemoryLimit > 0 {
		limit = "in a memory cgroup limited to " + formatBytes(r.MemoryLimit) + ", as in a container of that limit"
	}
	lines := []string{
		fmt.Sprintf("workloads: %d Deployments, %d StatefulSets, %d DaemonSets, 2 containers each; %d in kustomize base + overlay layouts, the others plain files",
			r.Kinds[KindDeployment], r.Kinds[KindStatefulSet], r.Kinds[KindDaemonSet], r.Kustomize),
		fmt.Sprintf("machine: %d CPUs (%s), %s of memory, %s, %s", m.CPUs, m.CPUModel, formatBytes(m.Memory), m.OS, m.Go),
		fmt.Sprintf("date: %s; commit: %s", r.Date.Format(time.RFC3339), r.Commit),
		fmt.Sprintf("command: %s", r.Command),
		fmt.Sprintf("job: %s", limit),
		fmt.Sprintf("metrics backend: %s", r.backend()),
		fmt.Sprintf("data: 1-minute usage of 2 pods per workload, rolled over at %s, from %s to %s: %s samples of %s series (%s); setup %s",
			r.Data.Rollover.Format(time.DateTime), r.Data.Start.Format(time.DateTime), r.Data.End.Format(time.DateTime),
			formatSI(r.Data.Samples), formatCount(int64(r.Data.Series)), cached, formatDuration(time.Duration(r.Setup))),
	}
	if f := r.Forge; f != nil {
		lines = append(lines, fmt.Sprintf("forge: %s, which holds the repository; its git and its API through one proxy; the job's pull request pacing (pr-per-run, pr-limit) at its defaults", f.Kind))
	}
	return lines
}

// backend names the metrics backend, and what its samples scanned are.
func (r *Result) backend() string {
	switch r.Backend {
	case "", BackendPrometheus:
		return "Prometheus"
	case BackendVictoriaMetrics:
		return "VictoriaMetrics single-node (samples scanned: Prometheus's for the same queries, which VictoriaMetrics does not count)"
	}
	return r.Backend
}

// summary are the lines below the table: notes, ratios and checks.
func (r *Result) summary() []string {
	var out []string
	for _, s := range r.Stages {
		if s.Note != "" {
			out = append(out, fmt.Sprintf("* %s: %s", s.Name, s.Note))
		}
	}
	if c := r.Concurrent; c != nil {
		out = append(out, fmt.Sprintf("* %s: %s", c.Name, c.Note))
	}
	ra := r.Ratios
	ratios := []string{
		fmt.Sprintf("run/floor %s (target <= 1.5)", formatRatio(ra.RunOverFloor)),
		fmt.Sprintf("baseline/history %s (target >= 10)", formatRatio(ra.BaselineOverHistory)),
		fmt.Sprintf("history/its queries alone %s", formatRatio(ra.HistoryOverQueries)),
		fmt.Sprintf("history/its queries at its concurrency %s", formatRatio(ra.HistoryOverConcurrent)),
		fmt.Sprintf("scanned/stored %s (target <= 2; %s samples stored in the window)", formatRatio(ra.ScannedOverStored), formatSI(r.StoredTotal)),
	}
	if r.Baseline != nil {
		ratios = append(ratios, fmt.Sprintf("baseline scanned/stored %s", formatRatio(ra.BaselineScannedOverStored)))
	}
	out = append(out, "ratios: "+strings.Join(ratios, "; "))
	c := r.Checks
	out = append(out, fmt.Sprintf("checks: %s ResourceRecommends, %s with every value, %s values changed; pushed %v to %s, %s files; exit code %d, %d warnings",
		formatCount(int64(c.ResourceRecommends)), formatCount(int64(c.WithValues)), formatCount(int64(c.Changed)), c.Pushed, c.Branch,
		formatCount(int64(c.Files)), c.ExitCode, c.Warnings))
	if w := r.Warm; w != nil {
		out = append(out, fmt.Sprintf("warm, %s after the cold run: scanned/cold's %s (target <= 0.2); checkpoints %s in %d pages (target <= 20 MiB); %d of %d values differ from a run without checkpoints at the same moment; exit code %d, %d warnings",
			formatDuration(time.Duration(w.After)), formatRatio(w.ScannedOverCold), formatBytes(w.CheckpointBytes), w.CheckpointPages,
			w.Differ, w.Values, w.Checks.ExitCode, w.Checks.Warnings))
		out = append(out, fmt.Sprintf("warm ratios: run/floor %s (target <= 1.5); baseline/history %s (target >= 10, the cold run's baseline); history/its queries alone %s; history/its queries at its concurrency %s",
			formatRatio(w.Ratios.RunOverFloor), formatRatio(w.Ratios.BaselineOverHistory), formatRatio(w.Ratios.HistoryOverQueries), formatRatio(w.Ratios.HistoryOverConcurrent)))
	}
	if len(r.Targets) > 0 {
		out = append(out, "targets: "+formatTargets(r.Targets))
	}
	if r.Forge != nil {
		out = append(out, r.Forge.summary())
	}
	out = append(out, fmt.Sprintf("apiserver requests of the run (%d): %s", len(r.APICalls), strings.Join(r.APICalls, ", ")))
	if w := r.Warm; w != nil {
		out = append(out, fmt.Sprintf("apiserver requests of the warm run (%d): %s", len(w.APICalls), strings.Join(w.APICalls, ", ")))
	}
	out = append(out, fmt.Sprintf("PromQL queries per namespace: %s (series listings aside); %s", strconv.FormatFloat(r.QueriesPerNamespace, 'f', -1, 64), strings.Join(r.QueryShapes, "; ")))
	return out
}

func formatRatio(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "x"
}

// formatDuration rounds d to what matters: milliseconds below 10 s,
// tenths of seconds below 10 min, seconds above.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// formatCount writes n with thousands separators.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + formatCount(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formatSI writes n with a k, M or G suffix above 10,000.
func formatSI(n int64) string {
	v := float64(n)
	switch {
	case n < 10_000:
		return formatCount(n)
	case v < 1e6:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v < 1e9:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G"
}

// formatBytes writes n in KiB, MiB or GiB.
func formatBytes(n int64) string {
	v := float64(n)
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(v/(1<<10), 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(v/(1<<30), 'f', 2, 64) + " GiB"
}
