package markdown

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// withUsage is p with points in the evidence of every resource: n
// periods of length from 2026-11-14, p90 and max rising a tenth a period
// from p90 and max, and a burst of 3 x max in the fourth period.
func withUsage(p *plan.Plan, n int, length time.Duration) *plan.Plan {
	start := time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)
	period := "day"
	if length == time.Hour {
		period = "hour"
	}
	for i := range p.Items {
		for c := range p.Items[i].Containers {
			rs := p.Items[i].Containers[c].Resources
			rs = append([]plan.Resource(nil), rs...)
			for j, r := range rs {
				if r.Evidence == nil || r.Evidence.UsageP90 == nil {
					continue
				}
				ev := *r.Evidence
				ev.Usage, ev.UsagePeriod = nil, period
				for k := range n {
					f := 1 + float64(k)/10
					pt := plan.UsagePoint{Start: start.Add(time.Duration(k) * length), P90: *ev.UsageP90 * f, Max: *ev.UsageMax * f}
					if k == 3 {
						pt.Max *= 3
					}
					ev.Usage = append(ev.Usage, pt)
				}
				rs[j].Evidence = &ev
			}
			p.Items[i].Containers[c].Resources = rs
		}
	}
	return p
}

// TestPullRequestBodyCharts checks the usage charts of a workload, as a
// reviewer reads them: folded under its table, one per container and
// resource, each with the line that says which series is which.
func TestPullRequestBodyCharts(t *testing.T) {
	rep := withUsage(bodyReport(), 4, 24*time.Hour)
	rep.Items = rep.Items[:1]
	body := PullRequestBody(rep)
	want := "| sidecar | memory | 64Mi | 64Mi | held back | 128Mi, unchanged | 41Mi / 52Mi / 58Mi | 7d: 168 samples over 7d | 0 |\n" +
		"\n<details><summary>Usage per day: p90 and max, with the current and proposed requests</summary>\n" +
		"\nUsage of app, cpu in millicores, per day (UTC): bars are the max; lines, in order: p90, the current request 500m, the proposed request 390m.\n\n" +
		"```mermaid\nxychart-beta\n" +
		"    title \"app cpu\"\n" +
		"    x-axis [\"11-14\", \"11-15\", \"11-16\", \"11-17\"]\n" +
		"    y-axis \"millicores\" 0 --> 6000\n" +
		"    bar [1240, 1364, 1488, 4836]\n" +
		"    line [310.5, 341.6, 372.6, 403.7]\n" +
		"    line [500, 500, 500, 500]\n" +
		"    line [390, 390, 390, 390]\n" +
		"```\n" +
		"\nUsage of app, memory in MiB, per day (UTC): bars are the max; lines, in order: p90, the current request 512Mi, the proposed request 600Mi.\n\n" +
		"```mermaid\nxychart-beta\n" +
		"    title \"app memory\"\n" +
		"    x-axis [\"11-14\", \"11-15\", \"11-16\", \"11-17\"]\n" +
		"    y-axis \"MiB\" 0 --> 2500\n" +
		"    bar [498, 547.8, 597.6, 1942.2]\n" +
		"    line [452, 497.2, 542.4, 587.6]\n" +
		"    line [512, 512, 512, 512]\n" +
		"    line [600, 600, 600, 600]\n" +
		"```\n" +
		"\nUsage of sidecar, cpu in millicores, per day (UTC): bars are the max; lines, in order: p90, the proposed request 50m.\n\n" +
		"```mermaid\nxychart-beta\n" +
		"    title \"sidecar cpu\"\n" +
		"    x-axis [\"11-14\", \"11-15\", \"11-16\", \"11-17\"]\n" +
		"    y-axis \"millicores\" 0 --> 400\n" +
		"    bar [90, 99, 108, 351]\n" +
		"    line [41, 45.1, 49.2, 53.3]\n" +
		"    line [50, 50, 50, 50]\n" +
		"```\n" +
		"\nUsage of sidecar, memory in MiB, per day (UTC): bars are the max; lines, in order: p90, the current request 64Mi.\n\n" +
		"```mermaid\nxychart-beta\n" +
		"    title \"sidecar memory\"\n" +
		"    x-axis [\"11-14\", \"11-15\", \"11-16\", \"11-17\"]\n" +
		"    y-axis \"MiB\" 0 --> 250\n" +
		"    bar [58, 63.8, 69.6, 226.2]\n" +
		"    line [52, 57.2, 62.4, 67.6]\n" +
		"    line [64, 64, 64, 64]\n" +
		"```\n" +
		"\n</details>\n" +
		"\n<details><summary>Evidence: percentile, buffer, OOM floor, rounding, caps</summary>\n"
	if !strings.Contains(body, want) {
		t.Errorf("body lacks the charts between the table and the evidence:\n%s\nwant within it:\n%s", body, want)
	}
	if strings.Contains(body, chartsLeftOut) {
		t.Errorf("a body with room for every chart says some are left out")
	}
	checkBody(t, body)
}

// TestPullRequestBodyChartsPerHour checks a window under three days: a
// point per hour, labelled with its day and hour.
func TestPullRequestBodyChartsPerHour(t *testing.T) {
	rep := withUsage(oneWorkload(plan.Container{Name: "app", Resources: []plan.Resource{
		{Resource: "cpu", Current: q("1"), Recommended: q("500m"), Changed: true, Evidence: weekOf(2880, 0.2, 0.3, 0.4)},
	}}), 48, time.Hour)
	body := PullRequestBody(rep)
	for _, want := range []string{
		"<details><summary>Usage per hour: p90 and max, with the current and proposed requests</summary>\n",
		"Usage of app, cpu in millicores, per hour (UTC): ",
		"    x-axis [\"11-14 00h\", \"11-14 01h\", ",
		", \"11-15 23h\"]\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	checkBody(t, body)
	if blocks := strings.Count(body, "```mermaid\n"); blocks != 1 {
		t.Errorf("%d charts, want 1", blocks)
	}
}

// TestChartText checks that a container's name, the cluster's text, can
// neither end a chart's string, nor its line, nor its fence, nor start a
// Mermaid comment or directive.
func TestChartText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"app", "app"},
		{"web-1.api_v2", "web-1.api_v2"},
		{`a"b`, "a_b"},
		{"a\nxychart-beta\nb", "a_xychart-beta_b"},
		{"%%{init: {}}%%", "___init_ _____"},
		{"```", "___"},
		{"<b>é", "_b__"},
		{strings.Repeat("x", 200), strings.Repeat("x", maxChartText)},
	} {
		if got := chartText(tt.in); got != tt.want {
			t.Errorf("chartText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// In a body: the title is cut down, the legend escaped.
	name := "a\"b`%%\n```\n<details>"
	rep := withUsage(oneWorkload(plan.Container{Name: name, Resources: []plan.Resource{
		{Resource: "cpu", Current: q("1"), Recommended: q("500m"), Changed: true, Evidence: weekOf(6048, 0.2, 0.3, 0.4)},
	}}), 7, 24*time.Hour)
	body := PullRequestBody(rep)
	if !strings.Contains(body, "    title \"a_b_________details_ cpu\"\n") {
		t.Errorf("chart title not made safe:\n%s", body)
	}
	checkBody(t, body)
	if c := strings.Count(body, "```mermaid\n"); c != 1 {
		t.Errorf("%d charts, want 1:\n%s", c, body)
	}
}

// TestAxisTop checks the top of a chart's axis.
func TestAxisTop(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{
		{0, 1}, {0.5, 0.6}, {1, 1.5}, {4.4, 5}, {4.6, 6}, {9, 10}, {95, 150}, {1240, 1500}, {4836, 6000},
	} {
		if got := axisTop(tt.in); got != tt.want {
			t.Errorf("axisTop(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestPullRequestBodyDropsChartsFirst checks the order in which a long
// body gives up what it shows: the charts first, from the workload where
// they stop fitting on, saying so; the tables and evidence only when the
// body is too long without any chart.
func TestPullRequestBodyDropsChartsFirst(t *testing.T) {
	sections := func(body string) (workloads, evidence, charts int) {
		return strings.Count(body, "\n### shop/web-"), strings.Count(body, "<summary>Evidence: "), strings.Count(body, "```mermaid\n")
	}
	for _, tt := range []struct {
		name string
		n    int
		// some: some charts are left out; cut: the body is cut.
		some, cut bool
	}{
		{"a few workloads: every chart", 3, false, false},
		{"twenty workloads: the first ones' charts", 20, true, false},
		{"200 workloads: no chart, the body cut", 200, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := withUsage(manyWorkloads(tt.n), 8, 24*time.Hour)
			body := PullRequestBody(rep)
			if len(body) > MaxBodyLength {
				t.Fatalf("body of %d characters, over %d", len(body), MaxBodyLength)
			}
			checkBody(t, body)
			workloads, evidence, charts := sections(body)
			if left := strings.Contains(body, "\n"+chartsLeftOut+"\n"); left != tt.some {
				t.Errorf("says charts are left out: %v, want %v", left, tt.some)
			}
			if cut := strings.HasSuffix(body, truncatedNote); cut != tt.cut {
				t.Errorf("cut: %v, want %v", cut, tt.cut)
			}
			switch {
			case !tt.some:
				if workloads != tt.n || charts != 4*tt.n {
					t.Errorf("%d workloads and %d charts, want %d and %d", workloads, charts, tt.n, 4*tt.n)
				}
			case !tt.cut:
				// Every table and evidence, the charts of the first
				// workloads only.
				if workloads != tt.n || evidence != tt.n || charts == 0 || charts >= 4*tt.n || charts%4 != 0 {
					t.Errorf("%d workloads, %d evidence and %d charts, want %d, %d and some of %d", workloads, evidence, charts, tt.n, tt.n, 4*tt.n)
				}
				last := strings.LastIndex(body, "```mermaid\n")
				next := strings.Index(body[last:], "\n### shop/web-")
				if next < 0 || strings.Contains(body[last+next:], "<summary>Usage per") {
					t.Errorf("charts after a workload without them")
				}
				if len(body) < MaxBodyLength-3000 {
					t.Errorf("body of %d characters: the charts left out would have had room", len(body))
				}
			default:
				if charts != 0 || strings.Contains(body, "<summary>Usage per") || evidence == 0 {
					t.Errorf("a body cut with %d charts and %d evidence sections, want no chart and some evidence", charts, evidence)
				}
			}
		})
	}
}

// Mermaid's xychart grammar, as far as the job writes it.
var (
	chartTitleRE  = regexp.MustCompile(`^    title "[A-Za-z0-9 ._/-]*"$`)
	chartXAxisRE  = regexp.MustCompile(`^    x-axis \[("[0-9 h-]+")(, "[0-9 h-]+")*\]$`)
	chartYAxisRE  = regexp.MustCompile(`^    y-axis "[a-zA-Z]+" ([0-9.]+) --> ([0-9.]+)$`)
	chartSeriesRE = regexp.MustCompile(`^    (bar|line) \[([0-9.]+(, [0-9.]+)*)\]$`)
)

// checkChart fails unless block, the lines between a mermaid fence's
// opening and closing lines, parses as the xychart Mermaid expects: the
// chart type, a title, an x-axis of labels, a y-axis with a title and a
// range, then bars and lines of as many numbers as there are labels, all
// within the range.
func checkChart(t *testing.T, block []string) {
	t.Helper()
	if len(block) < 5 || block[0] != "xychart-beta" || !chartTitleRE.MatchString(block[1]) {
		t.Errorf("not an xychart with a title: %q", block)
		return
	}
	x := chartXAxisRE.FindStringSubmatch(block[2])
	y := chartYAxisRE.FindStringSubmatch(block[3])
	if x == nil || y == nil {
		t.Errorf("axes %q and %q do not parse", block[2], block[3])
		return
	}
	labels := strings.Count(block[2], `"`) / 2
	lo, _ := strconv.ParseFloat(y[1], 64)
	hi, _ := strconv.ParseFloat(y[2], 64)
	if !(lo < hi) {
		t.Errorf("y-axis range %v --> %v", lo, hi)
	}
	for _, l := range block[4:] {
		m := chartSeriesRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("series %q does not parse", l)
			continue
		}
		values := strings.Split(m[2], ", ")
		if len(values) != labels {
			t.Errorf("series of %d values on an axis of %d labels: %q", len(values), labels, l)
		}
		for _, v := range values {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < lo || f > hi {
				t.Errorf("value %q out of the axis' %v --> %v", v, lo, hi)
			}
		}
	}
	for _, l := range block {
		if strings.Contains(l, "%%") || strings.Contains(l, "`") {
			t.Errorf("a comment or backtick in a chart: %q", l)
		}
	}
}
