package markdown

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// chartsLeftOut is the line that says a body left charts out for its size.
const chartsLeftOut = "_Usage charts are shown for the first workloads only: with more, this description would pass the forges' size limit. " +
	"The JSON report has every point._"

// chartBudget is how many characters a body's usage charts may take, so
// that the charts are the first to go when a description would be too
// long: the body is written without them first, and they take what is
// left, workload by workload, until one does not fit.
type chartBudget struct {
	// unlimited writes every chart; left is what remains otherwise.
	unlimited bool
	left      int
	// full is set once a workload's charts did not fit: later ones are
	// left out too, so that the charts shown are the first workloads'.
	full bool
	// note writes chartsLeftOut.
	note bool
	// taken counts the workloads whose charts were written.
	taken int
}

// take reports whether charts of n characters fit, and counts them.
func (c *chartBudget) take(n int) bool {
	switch {
	case c == nil:
		return false
	case c.unlimited:
	case c.full || n > c.left:
		c.full = true
		return false
	default:
		c.left -= n
	}
	c.taken++
	return true
}

// usageCharts writes, folded, a Mermaid xychart of the usage of each
// resource of containers whose evidence has points, when the budget lets
// it.
func (w *bodyWriter) usageCharts(containers []plan.Container) {
	block := usageChartsBlock(containers)
	if block == "" || !w.charts.take(len(block)+1) {
		return
	}
	w.line(block)
}

// usageChartsBlock is the folded section of usage charts of containers,
// without its last line end; "" when none has points.
func usageChartsBlock(containers []plan.Container) string {
	var b strings.Builder
	period := ""
	for _, c := range containers {
		for _, r := range c.Resources {
			if r.Evidence == nil || len(r.Evidence.Usage) == 0 {
				continue
			}
			if period == "" {
				period = r.Evidence.UsagePeriod
			}
			b.WriteString("\n" + chartLegend(c.Name, r) + "\n\n" + usageChart(c.Name, r) + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	if period != "hour" {
		period = "day"
	}
	// The summary is the job's own text: see open.
	return "\n<details><summary>Usage per " + period + ": p90 and max, with the current and proposed requests</summary>\n" +
		b.String() + "\n</details>"
}

// chartLegend says which series of r's chart is which: Mermaid's
// xychart draws no legend, and colours bars and lines in their order.
func chartLegend(container string, r plan.Resource) string {
	ev := r.Evidence
	unit := "millicores"
	if r.Resource != corev1.ResourceCPU {
		unit = "MiB"
	}
	of := "request"
	if r.LimitsOnly {
		of = "limit"
	}
	lines := []string{"p90"}
	current, proposed := chartLines(r)
	if current != nil {
		lines = append(lines, "the current "+of+" "+quantity(r.Current))
	}
	if proposed != nil {
		lines = append(lines, "the proposed "+of+" "+quantity(r.Recommended))
	}
	return fmt.Sprintf("Usage of %s, %s in %s, per %s (UTC): bars are the max; lines, in order: %s.",
		mdText(container), mdText(string(r.Resource)), unit, dashed(mdText(ev.UsagePeriod)), strings.Join(lines, ", "))
}

// chartLines are the current and proposed values r's chart draws as
// lines, in the chart's unit: nil for none, and no proposed line for a
// value that stays.
func chartLines(r plan.Resource) (current, proposed *float64) {
	if r.Current != nil {
		v := chartValue(r.Resource, r.Current.AsApproximateFloat64())
		current = &v
	}
	if r.Recommended != nil && r.Changed && !heldBack(r) {
		v := chartValue(r.Resource, r.Recommended.AsApproximateFloat64())
		proposed = &v
	}
	return current, proposed
}

// chartValue is v (cores, or bytes) in a chart's unit: millicores or MiB,
// to a tenth.
func chartValue(res corev1.ResourceName, v float64) float64 {
	if res == corev1.ResourceCPU {
		v *= 1000
	} else {
		v /= 1 << 20
	}
	return math.Round(v*10) / 10
}

// usageChart is the Mermaid xychart of r's usage points: the max of each
// period as bars, its p90, the current and the proposed value as lines.
func usageChart(container string, r plan.Resource) string {
	ev := r.Evidence
	labels := make([]string, len(ev.Usage))
	p90s := make([]float64, len(ev.Usage))
	maxes := make([]float64, len(ev.Usage))
	top := 0.0
	for i, p := range ev.Usage {
		layout := "01-02"
		if ev.UsagePeriod == "hour" {
			layout = "01-02 15h"
		}
		labels[i] = strconv.Quote(p.Start.UTC().Format(layout))
		p90s[i], maxes[i] = chartValue(r.Resource, p.P90), chartValue(r.Resource, p.Max)
		top = max(top, p90s[i], maxes[i])
	}
	current, proposed := chartLines(r)
	series := []string{"bar " + numbers(maxes), "line " + numbers(p90s)}
	for _, v := range []*float64{current, proposed} {
		if v == nil {
			continue
		}
		flat := make([]float64, len(ev.Usage))
		for i := range flat {
			flat[i] = *v
		}
		series = append(series, "line "+numbers(flat))
		top = max(top, *v)
	}
	unit := "millicores"
	if r.Resource != corev1.ResourceCPU {
		unit = "MiB"
	}
	return "```mermaid\nxychart-beta\n" +
		"    title \"" + chartText(container+" "+string(r.Resource)) + "\"\n" +
		"    x-axis [" + strings.Join(labels, ", ") + "]\n" +
		"    y-axis \"" + unit + "\" 0 --> " + strconv.FormatFloat(axisTop(top), 'f', -1, 64) + "\n" +
		"    " + strings.Join(series, "\n    ") + "\n```"
}

// numbers is a Mermaid list of numbers.
func numbers(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// axisTop is the top of a chart's axis: a tenth above v, up to the next
// round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten), so
// that no series touches the frame.
func axisTop(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	v *= 1.1
	e := math.Floor(math.Log10(v))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		// Divided below 1, so that 0.6 is 0.6 rather than 6 x 0.1.
		top := m * math.Pow(10, e)
		if e < 0 {
			top = m / math.Pow(10, -e)
		}
		if top >= v {
			return top
		}
	}
	return math.Pow(10, e+1)
}

// maxChartText bounds a chart's title.
const maxChartText = 80

// chartText makes s, a container's name from the cluster, safe in a
// Mermaid string within a fenced block: letters, digits and . _ / - and
// spaces are kept, anything else (a quote, a line end, the % of a
// comment, a backtick that would end the fence) becomes _.
func chartText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxChartText {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '/', r == '-', r == ' ':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
