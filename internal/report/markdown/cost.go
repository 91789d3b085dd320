package markdown

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// costTotals sums the costs of items: over all their replicas, in cores,
// GiB and money per month. A cost beyond plan.MaxFigure is not summed,
// only counted in beyond: it would swamp every other team's.
type costTotals struct {
	cpu, memory, money plan.Delta
	workloads, beyond  int
	currency           string
}

// add counts c.
func (t *costTotals) add(c *plan.Cost) {
	if c.Beyond != "" {
		t.beyond++
		return
	}
	t.cpu.Merge(c.CPUCores)
	t.memory.Merge(c.MemoryGiB)
	t.money.Merge(c.Monthly)
	t.workloads++
	if t.currency == "" {
		t.currency = c.Prices.Currency
	}
}

// costed reports whether it shows a cost: it is valid, rendered, and
// changes a request.
func costed(it plan.Item) bool {
	return it.Cost != nil && it.Error == nil && (it.Source == nil || it.Source.Error == "") && len(it.Cost.Containers) > 0
}

// costTotalsOf sums the costs of the items of p that show one.
func costTotalsOf(p *plan.Plan) costTotals {
	var t costTotals
	for _, it := range p.Items {
		if costed(it) {
			t.add(it.Cost)
		}
	}
	return t
}

// String is the figures in a line: money, cores and GiB, each net, with
// its decreases and increases beside it when it has both, so that a
// raise is never hidden in a saving.
func (t costTotals) String() string {
	return fmt.Sprintf("%s per month, cpu %s, memory %s", deltaText(t.money, mdText(t.currency)+" ", ""),
		deltaText(t.cpu, "", " cores"), deltaText(t.memory, "", " GiB"))
}

// costOpening is the line a pull request's body opens with: what it does
// to the cluster's requests and their price per month; "" when no item
// of p shows a cost.
func costOpening(p *plan.Plan) string {
	t := costTotalsOf(p)
	switch {
	case t.workloads == 0 && t.beyond == 0:
		return ""
	case t.workloads == 0:
		return "**Monthly change:** not summed:" + t.beyondNote()
	}
	return fmt.Sprintf("**Monthly change:** %s, over all replicas of %d %s (%d hours a month; replicas and prices in each workload's section).%s",
		t, t.workloads, plural(t.workloads, "workload", "workloads"), plan.HoursPerMonth, t.beyondNote())
}

// boundText is plan.MaxFigure as the text shows it: 1e12.
var boundText = strings.Replace(strconv.FormatFloat(plan.MaxFigure, 'e', -1, 64), "e+", "e", 1)

// beyondNote says, after the totals, how many costs they leave out as
// beyond the bound; "" when none.
func (t costTotals) beyondNote() string {
	if t.beyond == 0 {
		return ""
	}
	return fmt.Sprintf(" %d %s beyond ±%s and left out of the totals.", t.beyond, plural(t.beyond, "workload's cost is", "workloads' costs are"), boundText)
}

// costLine is the line of a workload's section that gives its own cost:
// its replicas and where the count came from, the change over them, and
// the prices; "" without a cost.
func costLine(it plan.Item) string {
	if !costed(it) {
		return ""
	}
	c := it.Cost
	t := costTotals{currency: c.Prices.Currency}
	t.add(c)
	prices := "the run's prices"
	if c.Prices.Source == "annotation" {
		prices = "the ResourceRecommend's prices"
	}
	figures := t.String()
	if c.Beyond != "" {
		figures = "left out, beyond ±" + boundText + ": " + mdText(c.Beyond)
	}
	s := fmt.Sprintf("**Cost:** %s; replicas %s (%s), at %s %s per core-hour and %s per GiB-hour (%s).",
		figures, strconv.FormatFloat(c.Replicas, 'f', -1, 64), mdText(c.ReplicasSource), mdText(c.Prices.Currency),
		strconv.FormatFloat(c.Prices.CPUCoreHour, 'f', -1, 64), strconv.FormatFloat(c.Prices.MemoryGiBHour, 'f', -1, 64), prices)
	if c.PriceError != "" {
		s += " " + mdText(cutText(c.PriceError, maxDashboardCell))
	}
	return s
}

// deltaText shows d's net between prefix and suffix, e.g. "−3.20 cores
// (−4.00 cut, +0.80 raised)": its decreases and increases beside it when
// it has both.
func deltaText(d plan.Delta, prefix, suffix string) string {
	s := prefix + fixed(d.Net) + suffix
	if cents(d.Raised) != 0 && cents(d.Cut) != 0 {
		s += " (" + fixed(d.Cut) + " cut, " + fixed(d.Raised) + " raised)"
	}
	return s
}

// cents is v rounded to a hundredth, in hundredths: what shows of it.
// v is first kept within ±plan.MaxFigure (not a number is 0), where an
// int64 of hundredths cannot overflow.
func cents(v float64) int64 {
	if math.IsNaN(v) {
		return 0
	}
	return int64(math.Round(math.Max(-plan.MaxFigure, math.Min(v, plan.MaxFigure)) * 100))
}

// fixed shows v to a hundredth with its sign: +1.25, −0.50 (a minus
// sign, U+2212), 0.00; beyond ±plan.MaxFigure, "over +1e12" or "under
// −1e12" (a sum of many costs each within it). Only here is a figure
// rounded.
func fixed(v float64) string {
	switch {
	case math.IsNaN(v):
		return "not a number"
	case v > plan.MaxFigure:
		return "over +" + boundText
	case v < -plan.MaxFigure:
		return "under −" + boundText
	}
	c := cents(v)
	sign := "+"
	switch {
	case c == 0:
		return "0.00"
	case c < 0:
		sign, c = "−", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// money shows v in currency: USD −16.24.
func money(v float64, currency string) string {
	return mdText(currency) + " " + fixed(v)
}

// maxCostRows is how many workloads the dashboard lists by savings.
const maxCostRows = 10

// dashboardCost writes the dashboard's cost section: the fleet's total
// of every change the run recommends, and the workloads that save most.
func dashboardCost(b *strings.Builder, p *plan.Plan) {
	t := costTotalsOf(p)
	b.WriteString("\n### Cost\n\n")
	if t.workloads == 0 && t.beyond == 0 {
		b.WriteString("None.\n")
		return
	}
	if t.workloads > 0 {
		fmt.Fprintf(b, "**Fleet:** %s, over all replicas of %d %s (%d hours a month).\n", t, t.workloads, plural(t.workloads, "workload", "workloads"), plan.HoursPerMonth)
	}
	if t.beyond > 0 {
		b.WriteString(strings.TrimPrefix(t.beyondNote(), " ") + "\n")
	}
	var saving []plan.Item
	for _, it := range p.Items {
		if costed(it) && it.Cost.Beyond == "" && cents(it.Cost.Monthly.Net) < 0 {
			saving = append(saving, it)
		}
	}
	sort.SliceStable(saving, func(i, j int) bool { return saving[i].Cost.Monthly.Net < saving[j].Cost.Monthly.Net })
	if len(saving) > maxCostRows {
		saving = saving[:maxCostRows]
	}
	rows := make([][]string, 0, len(saving))
	for _, it := range saving {
		c := it.Cost
		rows = append(rows, []string{mdText(it.Namespace + "/" + it.Name), mdText(it.Target.Kind + " " + it.Target.Name),
			strconv.FormatFloat(c.Replicas, 'f', -1, 64) + " (" + mdText(c.ReplicasSource) + ")",
			fixed(c.CPUCores.Net), fixed(c.MemoryGiB.Net), money(c.Monthly.Net, c.Prices.Currency)})
	}
	section(b, fmt.Sprintf("Top %d savings", maxCostRows), []string{"ResourceRecommend", "target", "replicas", "cpu (cores)", "memory (GiB)", "per month"}, rows, MaxBodyLength)
}
