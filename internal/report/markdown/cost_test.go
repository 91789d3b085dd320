package markdown

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestFixed checks the one place a figure is rounded: to a hundredth,
// half away from zero, with a minus sign and never a negative zero.
func TestFixed(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.00"},
		{-0.004, "0.00"},
		{0.005, "+0.01"},
		{-0.005, "−0.01"},
		{1.005, "+1.00"}, // 1.00499999999999989... in binary
		{16.235, "+16.24"},
		{-21.9, "−21.90"},
		{0.1 + 0.2, "+0.30"},
		{1234567.891, "+1234567.89"},
		// Beyond the bound, what it is, never what its cents wrap to.
		{1e12, "+1000000000000.00"},
		{4.6e25, "over +1e12"},
		{-4.6e25, "under −1e12"},
		{math.Inf(1), "over +1e12"},
		{math.NaN(), "not a number"},
	}
	for _, tt := range tests {
		if got := fixed(tt.in); got != tt.want {
			t.Errorf("fixed(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := money(-29.2, "EUR"); got != "EUR −29.20" {
		t.Errorf("money(-29.2, EUR) = %q", got)
	}
}

// costItem is an item of target Deployment name whose cost is c.
func costItem(name string, c plan.Cost) plan.Item {
	c.Containers = append(c.Containers, plan.ContainerCost{Name: "app"})
	if c.Prices.Currency == "" {
		c.Prices = plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}
	}
	return plan.Item{Namespace: "shop", Name: name, Target: plan.Target{Kind: "Deployment", Name: name}, Valid: true, Cost: &c}
}

// TestCostLines checks the exact text of the body's opening line and of
// a workload's line: nets, with the cuts and raises beside a net that
// has both.
func TestCostLines(t *testing.T) {
	web := costItem("web", plan.Cost{Replicas: 4.2, ReplicasSource: "average over 7d, kube-state-metrics",
		CPUCores: plan.Delta{Net: -4, Cut: -4}, MemoryGiB: plan.Delta{Net: 1.5, Raised: 1.5},
		Monthly: plan.Delta{Net: -87.68, Raised: 4.64, Cut: -92.32}})
	api := costItem("api", plan.Cost{Replicas: 3, ReplicasSource: "spec",
		CPUCores:  plan.Delta{Net: 0.8, Raised: 0.8},
		MemoryGiB: plan.Delta{Net: -0.25, Cut: -0.25},
		Monthly:   plan.Delta{Net: 1.111, Raised: 1.9, Cut: -0.789},
		Prices:    plan.Prices{CPUCoreHour: 0.05, MemoryGiBHour: 0.0065, Currency: "USD", Source: "annotation"}})
	bad := costItem("bad", plan.Cost{Replicas: 5, ReplicasSource: "HPA current, no kube-state-metrics series",
		PriceError: "annotation recommend-job.io/price-cpu-core-hour: \"<b>x</b>\" is not a decimal such as 0.0316; the run's prices are used"})
	unrendered := costItem("gone", plan.Cost{Replicas: 1, ReplicasSource: "spec", CPUCores: plan.Delta{Net: -100, Cut: -100}})
	unrendered.Source = &plan.Source{Error: "target not found"}

	p := &plan.Plan{Items: []plan.Item{web, api, bad, unrendered}}
	want := "**Monthly change:** USD −86.57 (−93.11 cut, +6.54 raised) per month, cpu −3.20 cores (−4.00 cut, +0.80 raised), " +
		"memory +1.25 GiB (−0.25 cut, +1.50 raised), over all replicas of 3 workloads (730 hours a month; replicas and prices in each workload's section)."
	if got := costOpening(p); got != want {
		t.Errorf("costOpening() =\n%s\nwant\n%s", got, want)
	}
	for _, tt := range []struct {
		item plan.Item
		want string
	}{
		{web, "**Cost:** USD −87.68 (−92.32 cut, +4.64 raised) per month, cpu −4.00 cores, memory +1.50 GiB; " +
			"replicas 4.2 (average over 7d, kube-state-metrics), at USD 0.031611 per core-hour and 0.004237 per GiB-hour (the run's prices)."},
		{api, "**Cost:** USD +1.11 (−0.79 cut, +1.90 raised) per month, cpu +0.80 cores, memory −0.25 GiB; " +
			"replicas 3 (spec), at USD 0.05 per core-hour and 0.0065 per GiB-hour (the ResourceRecommend's prices)."},
		{bad, "**Cost:** USD 0.00 per month, cpu 0.00 cores, memory 0.00 GiB; replicas 5 (HPA current, no kube-state-metrics series), " +
			"at USD 0.031611 per core-hour and 0.004237 per GiB-hour (the run's prices). annotation recommend-job.io/price-cpu-core-hour: " +
			"\"&lt;b&gt;x&lt;/b&gt;\" is not a decimal such as 0.0316; the run's prices are used"},
		{unrendered, ""},
	} {
		if got := costLine(tt.item); got != tt.want {
			t.Errorf("costLine(%s) =\n%s\nwant\n%s", tt.item.Name, got, tt.want)
		}
	}
	if got := costOpening(&plan.Plan{Items: []plan.Item{unrendered}}); got != "" {
		t.Errorf("costOpening() of an unrendered item = %q, want none", got)
	}
}

// TestPullRequestBodyOpensWithCost checks that the body's first line
// after the marker is the monthly change, and that each workload's
// section carries its own.
func TestPullRequestBodyOpensWithCost(t *testing.T) {
	p := bodyReport()
	for i := range p.Items {
		p.Items[i].Cost = &plan.Cost{Replicas: 2, ReplicasSource: "spec", CPUCores: plan.Delta{Net: -0.5, Cut: -0.5},
			Monthly: plan.Delta{Net: -11.54, Cut: -11.54}, Containers: []plan.ContainerCost{{Name: "app"}},
			Prices: plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}}
	}
	body := PullRequestBody(p)
	lines := strings.Split(body, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "**Monthly change:** USD −") {
		t.Fatalf("the body opens with %q, want the monthly change", lines[1])
	}
	sections := strings.Count(body, "\n### shop/")
	if n := strings.Count(body, "\n**Cost:** USD −11.54 per month, cpu −0.50 cores, memory 0.00 GiB; replicas 2 (spec)"); n != sections || n == 0 {
		t.Errorf("%d workload cost lines, want one per workload section (%d):\n%s", n, sections, body)
	}
}

// TestDashboardCost checks the dashboard's fleet total and its ten
// workloads that save most, largest first; an increase is in the total,
// not among the savings.
func TestDashboardCost(t *testing.T) {
	p := &plan.Plan{}
	for i := range 12 {
		p.Items = append(p.Items, costItem(fmt.Sprintf("w%02d", i), plan.Cost{Replicas: 1, ReplicasSource: "spec",
			CPUCores: plan.Delta{Net: -float64(i), Cut: -float64(i)}, Monthly: plan.Delta{Net: -float64(i) * 10, Cut: -float64(i) * 10}}))
	}
	p.Items = append(p.Items, costItem("raised", plan.Cost{Replicas: 2, ReplicasSource: "spec",
		CPUCores: plan.Delta{Net: 2, Raised: 2}, Monthly: plan.Delta{Net: 46.15, Raised: 46.15}}))
	body := DashboardBody(p, "recommend-job/main")
	fleet := "**Fleet:** USD −613.85 (−660.00 cut, +46.15 raised) per month, cpu −64.00 cores (−66.00 cut, +2.00 raised), memory 0.00 GiB, " +
		"over all replicas of 13 workloads (730 hours a month).\n"
	if !strings.Contains(body, fleet) {
		t.Errorf("the dashboard lacks the fleet's line %q:\n%s", fleet, body)
	}
	_, top, ok := strings.Cut(body, "### Top 10 savings\n")
	if !ok {
		t.Fatalf("no savings section:\n%s", body)
	}
	top, _, _ = strings.Cut(top, "\n### ")
	var rows []string
	for _, l := range strings.Split(top, "\n") {
		if strings.HasPrefix(l, "| shop/") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 10 || !strings.HasPrefix(rows[0], "| shop/w11 | Deployment w11 | 1 (spec) | −11.00 | 0.00 | USD −110.00 |") ||
		!strings.HasPrefix(rows[9], "| shop/w02 |") || strings.Contains(top, "raised") {
		t.Errorf("savings rows:\n%s", strings.Join(rows, "\n"))
	}
}

// TestPullRequestBodyWithCostIsBounded checks that the cost lines keep
// within the body's bound, and that the opening totals are the whole
// pull request's though its sections are cut.
func TestPullRequestBodyWithCostIsBounded(t *testing.T) {
	rep := manyWorkloads(2000)
	for i := range rep.Items {
		if strings.HasPrefix(rep.Items[i].Name, "web-") {
			rep.Items[i].Cost = &plan.Cost{Replicas: 3, ReplicasSource: "spec", CPUCores: plan.Delta{Net: -0.18, Cut: -0.18},
				Monthly: plan.Delta{Net: -4.15, Cut: -4.15}, Containers: []plan.ContainerCost{{Name: "app"}},
				Prices: plan.Prices{CPUCoreHour: 0.031611, MemoryGiBHour: 0.004237, Currency: "USD", Source: "settings"}}
		}
	}
	body := PullRequestBody(rep)
	if len(body) > MaxBodyLength || !strings.HasSuffix(body, truncatedNote) {
		t.Errorf("body is %d bytes, want at most %d and cut", len(body), MaxBodyLength)
	}
	if opening := strings.Split(body, "\n")[1]; !strings.HasPrefix(opening, "**Monthly change:** USD −8300.00 per month, cpu −360.00 cores, memory 0.00 GiB, over all replicas of 2000 workloads") {
		t.Errorf("the body opens with %q, want the totals of all 2,000 workloads", opening)
	}
	checkBody(t, body)
}

// TestCostBeyondTheBound checks a tenant's cost beyond plan.MaxFigure (a
// minAllowed of 1e15 cores over two billion replicas, as cost.Of caps
// it): its section says it is left out and why, and the totals of the
// pull request and of the dashboard are the other workloads' alone, with
// a note, never a wrapped figure such as −-92233720368547758.-8.
func TestCostBeyondTheBound(t *testing.T) {
	web := costItem("web", plan.Cost{Replicas: 3, ReplicasSource: "spec",
		CPUCores: plan.Delta{Net: -1.5, Cut: -1.5}, Monthly: plan.Delta{Net: -34.62, Cut: -34.62}})
	huge := costItem("huge", plan.Cost{Replicas: 2e9, ReplicasSource: "spec",
		CPUCores: plan.Delta{Net: 1e12, Raised: 1e12}, Monthly: plan.Delta{Net: 1e12, Raised: 1e12}, Beyond: "cpu cores, money per month"})
	for _, tt := range []struct {
		name    string
		items   []plan.Item
		opening string
	}{
		{"beside another", []plan.Item{web, huge}, "**Monthly change:** USD −34.62 per month, cpu −1.50 cores, memory 0.00 GiB, over all replicas of 1 workload " +
			"(730 hours a month; replicas and prices in each workload's section). 1 workload's cost is beyond ±1e12 and left out of the totals."},
		{"alone", []plan.Item{huge}, "**Monthly change:** not summed: 1 workload's cost is beyond ±1e12 and left out of the totals."},
		{"two", []plan.Item{huge, huge, web}, "**Monthly change:** USD −34.62 per month, cpu −1.50 cores, memory 0.00 GiB, over all replicas of 1 workload " +
			"(730 hours a month; replicas and prices in each workload's section). 2 workloads' costs are beyond ±1e12 and left out of the totals."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := costOpening(&plan.Plan{Items: tt.items}); got != tt.opening {
				t.Errorf("costOpening() =\n%s\nwant\n%s", got, tt.opening)
			}
		})
	}
	wantLine := "**Cost:** left out, beyond ±1e12: cpu cores, money per month; replicas 2000000000 (spec), " +
		"at USD 0.031611 per core-hour and 0.004237 per GiB-hour (the run's prices)."
	if got := costLine(huge); got != wantLine {
		t.Errorf("costLine(huge) =\n%s\nwant\n%s", got, wantLine)
	}

	// The body as the forge shows it: the shared opening and huge's section.
	p := bodyReport()
	p.Items[0].Cost = huge.Cost
	for i := 1; i < len(p.Items); i++ {
		p.Items[i].Cost = web.Cost
	}
	body := PullRequestBody(p)
	if lines := strings.Split(body, "\n"); !strings.HasPrefix(lines[1], "**Monthly change:** USD −") ||
		!strings.HasSuffix(lines[1], "1 workload's cost is beyond ±1e12 and left out of the totals.") {
		t.Errorf("the body opens with %q, want the others' totals and the note", lines[1])
	}
	if !strings.Contains(body, "\n"+wantLine) {
		t.Errorf("the body lacks huge's cost line %q:\n%s", wantLine, body)
	}
	if strings.Contains(body, "1000000000000") || strings.Contains(body, "−-") {
		t.Errorf("the body shows a capped or wrapped figure:\n%s", body)
	}
	checkBody(t, body)

	dash := DashboardBody(&plan.Plan{Items: []plan.Item{web, huge}}, "recommend-job/main")
	if !strings.Contains(dash, "**Fleet:** USD −34.62 per month, cpu −1.50 cores, memory 0.00 GiB, over all replicas of 1 workload (730 hours a month).\n"+
		"1 workload's cost is beyond ±1e12 and left out of the totals.\n") || strings.Contains(dash, "shop/huge") {
		t.Errorf("the dashboard's cost, want web's totals, the note, and huge among no savings:\n%s", dash)
	}
}
