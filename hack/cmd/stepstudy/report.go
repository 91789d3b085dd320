package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printTable writes every measurement: per workload the truth, then each
// way of reading it against the default and the truth.
func printTable(w io.Writer, studies []*study, s settings) {
	fmt.Fprintf(w, "%d pods per workload (%d ReplicaSets of %d), a %s window, the fastest of %d reads\n\n",
		s.replicas*s.rollouts, s.rollouts, s.replicas, short(window), s.repeat)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scrape\tshape\tseed\tway\tpoints\tscanned\tscanned/stored\tcpu query\tp90\trequest\tvs default\tvs truth\t")
	for _, st := range studies {
		fmt.Fprintf(tw, "%s\t%s\t%d\ttruth: per-scrape rates\t%d\t\t\t\t%.3f\t%s\t\t\t\n",
			short(st.scrape), st.shape.name, st.seed, st.truth.samples, st.truth.raw, millicores(st.truth.request))
		ref := st.rows[0].out
		for _, r := range st.rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%.2f\t%s\t%.3f\t%s\t%s\t%s\t\n",
				short(st.scrape), st.shape.name, st.seed, r.c.name(), r.points, r.scanned, float64(r.scanned)/float64(st.stored),
				r.took.Round(100*time.Microsecond), r.out.raw, millicores(r.out.request),
				versus(r.out, ref), versus(r.out, st.truth))
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "vs: the p90's difference in percent and in histogram buckets (b: 5-6% each at 1-2 cores), and the request's in percent")
	fmt.Fprintln(w, "scanned: Prometheus's totalQueryableSamples of the CPU queries; stored: the counter samples in the window")
	for _, sh := range shapes {
		fmt.Fprintf(w, "%s: %s\n", sh.name, sh.about)
	}
}

// versus is how far o is from ref: the p90 in percent and buckets, the
// request in percent.
func versus(o, ref outcome) string {
	return fmt.Sprintf("%s %+db, req %s", signed(percent(o.raw, ref.raw)), bucket(o.raw)-bucket(ref.raw), signed(percent(o.request, ref.request)))
}

// printMarkdown writes the summary in docs/metrics.md: per scrape interval, a row
// per way of reading, with its cost and, per shape, its p90's distance
// from the default's and from the truth's, the farthest over the seeds.
func printMarkdown(w io.Writer, studies []*study) {
	type key struct {
		scrape time.Duration
		shape  string
	}
	groups := map[key][]*study{}
	var scrapes []time.Duration
	var names []string
	for _, st := range studies {
		if !slices.Contains(scrapes, st.scrape) {
			scrapes = append(scrapes, st.scrape)
		}
		if !slices.Contains(names, st.shape.name) {
			names = append(names, st.shape.name)
		}
		k := key{st.scrape, st.shape.name}
		groups[k] = append(groups[k], st)
	}
	for _, scrape := range scrapes {
		first := groups[key{scrape, names[0]}]
		fmt.Fprintf(w, "\nScraped every %s, %d workloads of each shape; per shape, the p90's difference from the default's / from the truth's, the largest of the workloads:\n\n",
			short(scrape), len(first))
		head := "| step / rate window | points per pod-day | scanned / stored |"
		rule := "| --- | ---: | ---: |"
		truth := "| truth: exact per-scrape rates, p90 in cores | | |"
		for _, name := range names {
			head += " " + name + " |"
			rule += " ---: |"
			var ps []float64
			for _, st := range groups[key{scrape, name}] {
				ps = append(ps, st.truth.raw)
			}
			truth += " " + spread(ps, "%.2f") + " |"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintln(w, rule)
		fmt.Fprintln(w, truth)
		for i, r := range first[0].rows {
			name := "`" + r.c.name() + "`"
			if i == 0 {
				name += " (default)"
			}
			line := fmt.Sprintf("| %s | %d | %.1f |", name, perPodDay(r.points, first[0].workload), float64(r.scanned)/float64(first[0].stored))
			for _, n := range names {
				var vsRef, vsTruth []float64
				for _, st := range groups[key{scrape, n}] {
					o := st.rows[i].out
					vsRef = append(vsRef, percent(o.raw, st.rows[0].out.raw))
					vsTruth = append(vsTruth, percent(o.raw, st.truth.raw))
				}
				line += " " + farthest(vsRef) + " / " + farthest(vsTruth) + " |"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// spread writes the lowest and highest of vs, or one of them when they
// are the same.
func spread(vs []float64, format string) string {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if l, h := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi); l != h {
		return l + "–" + h
	}
	return fmt.Sprintf(format, lo)
}

// farthest writes the percentage of ps farthest from zero, or the range
// when they lie on both sides of it.
func farthest(ps []float64) string {
	lo, hi := slices.Min(ps), slices.Max(ps)
	switch {
	case math.Round(lo) < 0 && math.Round(hi) > 0:
		return fmt.Sprintf("%.0f..%+.0f%%", lo, hi)
	case -lo > hi:
		return rounded(lo)
	default:
		return rounded(hi)
	}
}

// perPodDay is points per pod and day: the workload runs replicas pods at
// a time over the window.
func perPodDay(points int, w workload) int {
	replicas := 0
	for _, c := range w.containers {
		if c.Start.Equal(w.containers[0].Start) {
			replicas++
		}
	}
	return int(math.Round(float64(points) / float64(replicas) / window.Hours() * 24))
}

// millicores writes cores as a CPU quantity.
func millicores(cores float64) string {
	return fmt.Sprintf("%dm", int64(math.Round(cores*1000)))
}

// signed writes a percentage with its sign and one decimal.
func signed(p float64) string {
	if math.IsNaN(p) {
		return "n/a"
	}
	return strings.Replace(fmt.Sprintf("%+.1f%%", p), "+0.0%", "0%", 1)
}

// rounded writes a percentage to the whole percent, with its sign.
func rounded(p float64) string {
	switch r := math.Round(p); {
	case math.IsNaN(p):
		return "n/a"
	case r == 0:
		return "0"
	default:
		return fmt.Sprintf("%+.0f%%", r)
	}
}
