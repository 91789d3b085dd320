package markdown

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// markerPrefix starts the hidden marker that carries the change set's hash.
// The marker is the body's first line, where no text from the cluster or
// the repository can come before it; it names the change set for people
// and tools, but whether the pull request is up to date is decided by
// comparing whole bodies (see forge.SyncPullRequest), never by the marker.
const markerPrefix = "<!-- recommend-job: sha256="

// forgeBodyLimit is the most a forge takes in a description: GitHub's
// 65,536 characters, the least of the three forges'.
const forgeBodyLimit = 65536

// MaxBodyLength bounds the body a plan shows (a review that long is not
// read anyway), so that with the hidden lines the job adds after it (the
// values it proposes, whom it asked) and the note a closing adds, a
// description stays under forgeBodyLimit.
const MaxBodyLength = 52000

var markerRE = regexp.MustCompile(`^<!-- recommend-job: sha256=([0-9a-f]{64}) -->$`)

// ChangeSetHash is a hash of the changes a run writes: for every changed
// resource with a recommendation, its entry, container, resource and
// recommended value (and limit), sorted. Evidence such as sample counts moves every run
// and is left out, so the hash changes only when the files would.
func ChangeSetHash(p *plan.Plan) string {
	var lines []string
	for _, e := range p.Items {
		if e.Source != nil && e.Source.Error != "" {
			continue
		}
		for _, c := range e.Containers {
			for _, r := range c.Resources {
				if r.Changed && r.Recommended != nil {
					fields := []string{e.Namespace, e.Name, e.Target.Kind, e.Target.Name, c.Name, string(r.Resource), r.Recommended.String()}
					if r.RecommendedLimit != nil {
						fields = append(fields, "limit", r.RecommendedLimit.String())
					}
					lines = append(lines, strings.Join(fields, "\x00"))
				}
			}
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// MarkerHash returns the change-set hash of the marker on a pull request
// body's first line, or "". A marker anywhere else is text like any other.
func MarkerHash(body string) string {
	first, _, _ := strings.Cut(body, "\n")
	if m := markerRE.FindStringSubmatch(strings.TrimSuffix(first, "\r")); m != nil {
		return m[1]
	}
	return ""
}

// PullRequestTitle is the title of the job's pull request for base and path.
func PullRequestTitle(base, path string) string {
	if path == "" || path == "." {
		return "Right-size resource requests on " + base
	}
	return fmt.Sprintf("Right-size resource requests in %s on %s", path, base)
}

// PullRequestBody renders the pull request description from the plan of
// one pull request (a run's, or one group's): the hidden marker on the
// first line; the change in total requested CPU and memory, per replica;
// then per workload a summary table of every resource of the containers
// it changes (current and proposed request, the change, the limit, the
// usage observed, the window, the OOM kills; for a workload a Helm
// release renders, the release, chart and values edited above it and
// each value's values key in it), with the evidence folded below it;
// then what was held back and why, the values without a recommendation
// (folded), and the invalid ResourceRecommends. Every piece of text that
// comes from the cluster or the repository goes through mdText (or code),
// so that no tenant can add lines, markup, comments, links or mentions to
// the description everyone reviews, nor close a folded section early.
// A body over MaxBodyLength is cut after a whole row, its open section
// closed.
func PullRequestBody(p *plan.Plan) string {
	return pullRequestBody(p, MaxBodyLength)
}

// pullRequestBody is the body of p, cut to at most limit characters. Its
// usage charts go first: when the body with all of them is too long, they
// take only what the body without them leaves.
func pullRequestBody(p *plan.Plan, limit int) string {
	all := &chartBudget{unlimited: true}
	if body := bodyWith(p, limit, all); !strings.HasSuffix(body, truncatedNote) || all.taken == 0 {
		return body
	}
	plain := bodyWith(p, limit, &chartBudget{note: true})
	if strings.HasSuffix(plain, truncatedNote) {
		// Too long without charts: none can stay.
		return plain
	}
	return bodyWith(p, limit, &chartBudget{note: true, left: limit - len(plain)})
}

// bodyWith is the body of p with the usage charts charts allows, cut to
// at most limit characters.
func bodyWith(p *plan.Plan, limit int, charts *chartBudget) string {
	w := &bodyWriter{charts: charts}
	if opening := costOpening(p); opening != "" {
		w.line(opening)
		w.line("")
	}
	regressions(w, p)
	w.line("This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.")
	if g := groupName(p); g != "" {
		// The branch holds only a slug of the name: here it is whole.
		w.line("")
		w.line("Group: " + code(cutText(plan.Line(g), maxBodyGroup)))
	}
	var held, missing, invalid []string
	var workloads []func()
	var totals requestTotals
	for _, e := range p.Items {
		name := mdText(e.Namespace + "/" + e.Name)
		target := mdText(e.Target.Kind + " " + e.Target.Name)
		if e.Error != nil {
			invalid = append(invalid, row(name, target, code(e.Error.Code), mdText(e.Error.Message)))
			continue
		}
		notRendered := e.Source != nil && e.Source.Error != ""
		var shown []plan.Container
		for _, c := range e.Containers {
			container := mdText(c.Name)
			writes := false
			for _, r := range c.Resources {
				switch {
				case heldBack(r):
					held = append(held, row(name, container, valueHeld(r), quantity(r.Current), quantity(r.Recommended), mdText(whyHeld(r))))
				case r.Recommended == nil:
					missing = append(missing, row(name, container, mdText(string(r.Resource)), quantity(r.Current), mdText(r.Reason)))
				case !r.Changed:
				case notRendered:
					held = append(held, row(name, container, valueHeld(r), quantity(r.Current), quantity(r.Recommended), "not rendered: "+mdText(e.Source.Error)))
				default:
					writes = true
					totals.add(r)
				}
			}
			if writes {
				shown = append(shown, c)
			}
		}
		if len(shown) > 0 {
			workloads = append(workloads, func() { w.workload(e, name, target, shown) })
		}
	}
	w.line("")
	if len(workloads) == 0 {
		w.line("No request changes.")
	} else {
		w.line(totals.String())
		w.line("")
		w.line("_Usage is what each window observed, neither decayed nor weighted: p50, p90 and max of the CPU of every pod at every step, " +
			"and of the memory peaks per interval. The proposed values come from the decaying histograms in each workload's evidence._")
		if charts.note {
			w.line("")
			w.line(chartsLeftOut)
		}
	}
	for _, write := range workloads {
		write()
	}
	if len(held) > 0 {
		w.text("\n### Held back\n\n| ResourceRecommend | Container | Held back | Current | Recommended | Why |\n|---|---|---|---|---|---|\n")
		w.rows(held)
	}
	if len(missing) > 0 {
		w.text("\n### No recommendation\n\n")
		w.open(fmt.Sprintf("%d %s without a recommendation", len(missing), plural(len(missing), "value", "values")))
		w.text("| ResourceRecommend | Container | Resource | Current | Why |\n|---|---|---|---|---|\n")
		w.rows(missing)
		w.close()
	}
	if len(invalid) > 0 {
		w.text("\n### Invalid ResourceRecommends\n\n| ResourceRecommend | Target | Code | Message |\n|---|---|---|---|\n")
		w.rows(invalid)
	}
	marker := markerPrefix + ChangeSetHash(p) + " -->\n"
	return marker + w.bounded(limit-len(marker))
}

// groupName is the pull request group all of p's items are in, or "".
func groupName(p *plan.Plan) string {
	if len(p.Items) == 0 {
		return ""
	}
	g := p.Items[0].Group
	for _, it := range p.Items[1:] {
		if it.Group != g {
			return ""
		}
	}
	return g
}

// maxBodyGroup bounds a group's name in a body; a title cuts it shorter.
const maxBodyGroup = 256

// workload writes the section of one workload: its heading, the release
// that renders it, the summary table of the containers it changes, and
// their evidence, folded. name and target are escaped already.
func (w *bodyWriter) workload(e plan.Item, name, target string, containers []plan.Container) {
	var helm *plan.Helm
	file := ""
	if e.Source != nil {
		helm = e.Source.Helm
		if e.Source.File != "" {
			file = " in " + code(e.Source.File) + methodNote(e.Source.Method)
		}
	}
	w.text(fmt.Sprintf("\n### %s: %s%s\n\n", name, target, file))
	if e.Source != nil && e.Source.Deployer != "" {
		w.text("Deployed by " + mdText(e.Source.Deployer) + ".\n\n")
	}
	if e.Source != nil && e.Source.Chosen != "" {
		w.text("The source was " + mdText(e.Source.Chosen) + ".\n\n")
	}
	if line := costLine(e); line != "" {
		w.text(line + "\n\n")
	}
	header := "| Container | Resource | Current | Proposed | Change | Limit | Usage p50 / p90 / max | Window | OOM kills |"
	if helm != nil {
		w.text(helmLine(helm) + "\n\n")
		header += " Values key |"
	}
	w.text(header + "\n" + strings.Repeat("|---", strings.Count(header, "|")-1) + "|\n")
	var evidence []string
	for _, c := range containers {
		container := mdText(c.Name)
		for _, r := range c.Resources {
			cells := summaryCells(container, r)
			if helm != nil {
				cells = append(cells, valuesKeyCell(c, r))
			}
			w.row(row(cells...))
			if r.Evidence != nil {
				evidence = append(evidence, row(evidenceCells(container, r)...))
			}
		}
	}
	w.autoscalers(e.Autoscalers)
	w.usageCharts(containers)
	if len(evidence) == 0 {
		return
	}
	w.line("")
	w.open("Evidence: percentile, buffer, OOM floor, rounding, caps")
	w.text("| Container | Resource | Decaying histogram | Percentile value | Buffer | Buffered | OOM floor | Rounded up to | Caps and limit |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	w.rows(evidence)
	w.close()
}

// autoscalers writes, for each HPA target that moves with the requests,
// the arithmetic: the usage per pod at which the HPA adds pods stays.
func (w *bodyWriter) autoscalers(as []plan.Autoscaler) {
	for _, a := range as {
		for _, t := range a.Targets {
			if !t.Changes() || t.RequestFrom == nil || t.RequestTo == nil {
				continue
			}
			file := ""
			if a.File != "" {
				file = " in " + code(a.File)
			}
			of := "per pod"
			if t.Container != "" {
				of = "per container " + mdText(t.Container)
			}
			res := mdText(string(t.Resource))
			at := t.RequestFrom.AsApproximateFloat64() * float64(t.From) / 100
			w.line(fmt.Sprintf("\nHorizontalPodAutoscaler %s%s: %s utilization target **%d%% → %d%%** = round(%d%% × %s / %s), so that it still adds pods at %s of %s %s.",
				code(a.Name), file, res, t.From, t.To, t.From, quantity(t.RequestFrom), quantity(t.RequestTo), usageAmount(t.Resource, at), res, of))
		}
	}
}

// summaryCells are the summary table's cells of one resource of a
// container that changes; container is escaped already.
func summaryCells(container string, r plan.Resource) []string {
	res := mdText(string(r.Resource))
	if r.LimitsOnly {
		res += " limit"
	}
	proposed, change := quantity(r.Recommended), changePercent(r.Current, r.Recommended)
	switch {
	case heldBack(r):
		// What a value held back proposes is to keep it.
		proposed, change = quantity(r.Current), "held back"
		if r.Evidence != nil && r.Evidence.HPA != "" {
			change = "held back: HPA"
		}
	case r.Recommended == nil:
		change = "no recommendation"
	case !r.Changed:
		change = "unchanged"
	}
	current := quantity(r.Current)
	if r.Current == nil {
		// Nothing set is not a value of 0.
		current = "none"
	}
	cells := []string{container, res, current, proposed, change, limitCell(r), "-", "-", "-"}
	ev := r.Evidence
	if ev == nil {
		return cells
	}
	if ev.UsageP50 != nil && ev.UsageP90 != nil && ev.UsageMax != nil {
		cells[6] = usageAmount(r.Resource, *ev.UsageP50) + " / " + usageAmount(r.Resource, *ev.UsageP90) + " / " + usageAmount(r.Resource, *ev.UsageMax)
	}
	if ev.WindowDays > 0 {
		cells[7] = fmt.Sprintf("%s: %d %s over %s", inDays(ev.WindowDays), ev.Samples, plural(ev.Samples, "sample", "samples"), inDays(ev.SpanDays))
	}
	if r.Resource == corev1.ResourceMemory {
		cells[8] = strconv.Itoa(ev.OOMKills)
		if ev.OOMKilled && ev.OOMFloor > ev.BufferedValue {
			cells[8] += ", floor " + usageAmount(r.Resource, ev.OOMFloor) + " set the value"
		}
		if ev.StartupFloor {
			cells[8] += ", startup peak " + usageAmount(r.Resource, ev.StartupPeak) + " set the value"
		}
	}
	return cells
}

// evidenceCells are the cells of one resource's evidence: how its value
// came about. container is escaped already.
func evidenceCells(container string, r plan.Resource) []string {
	ev := r.Evidence
	res := mdText(string(r.Resource))
	if r.LimitsOnly {
		res += " limit"
	}
	hist := fmt.Sprintf("p%s, half-life %s, %d %s over %s of %s", strconv.FormatFloat(ev.Percentile*100, 'f', -1, 64), mdText(dashed(ev.HalfLife)),
		ev.Samples, plural(ev.Samples, "sample", "samples"), mdText(dashed(ev.Span)), mdText(dashed(ev.Window)))
	if ev.Resolution != "" {
		hist += "; " + mdText(ev.Resolution)
	}
	if ev.History != "" {
		hist += "; " + mdText(ev.History)
	}
	cells := []string{container, res, hist, "-", fmt.Sprintf("+%d%%", ev.BufferPercent), "-", "-", "-", "-"}
	// Without a rounding step no value was computed: too little history,
	// or held back for an autoscaler before any.
	if ev.RoundingStep == "" {
		return cells
	}
	cells[3] = usageAmount(r.Resource, ev.RawValue)
	cells[5] = usageAmount(r.Resource, ev.BufferedValue)
	// The floor that set the value is the one shown: the startup peak
	// only sets it above the OOM floor.
	switch {
	case ev.StartupFloor:
		cells[6] = "startup peak " + usageAmount(r.Resource, ev.StartupPeak)
	case ev.OOMKilled:
		cells[6] = usageAmount(r.Resource, ev.OOMFloor)
	}
	cells[7] = mdText(ev.RoundingStep)
	caps := slices.Clone(ev.Capped)
	if ev.LimitRatio > 0 && ev.Limit != "" {
		caps = append(caps, "limit "+ev.Limit+" keeps the ratio "+strconv.FormatFloat(math.Round(ev.LimitRatio*100)/100, 'f', -1, 64))
	}
	cells[8] = mdText(dashed(strings.Join(caps, ", ")))
	return cells
}

// heldBack reports that r is left alone on purpose: within the change
// threshold, a limit-only policy without a limit, or an autoscaler's.
func heldBack(r plan.Resource) bool {
	return r.HeldBack || r.Evidence != nil && (r.Evidence.HeldBack != "" || r.Evidence.HPA != "")
}

// valueHeld names the value of r that stays, escaped: its request, its
// limit, or both when the limit moves with the request.
func valueHeld(r plan.Resource) string {
	res := mdText(string(r.Resource))
	switch {
	case r.LimitsOnly:
		return res + " limit"
	case r.RecommendedLimit != nil || r.Evidence != nil && r.Evidence.Limit != "":
		return res + " request and limit"
	}
	return res + " request"
}

// whyHeld is why r is held back, as recommend put it.
func whyHeld(r plan.Resource) string {
	if ev := r.Evidence; ev != nil {
		switch {
		case ev.HeldBack != "":
			return ev.HeldBack
		case ev.HPA != "":
			return ev.HPA
		}
	}
	return r.Reason
}

// limitCell shows r's limit and whether it changes.
func limitCell(r plan.Resource) string {
	switch {
	case r.LimitsOnly:
		return "this row; the request stays"
	case r.RecommendedLimit != nil && (r.CurrentLimit == nil || r.RecommendedLimit.Cmp(*r.CurrentLimit) != 0):
		return quantity(r.CurrentLimit) + " → " + quantity(r.RecommendedLimit) + " (" + changePercent(r.CurrentLimit, r.RecommendedLimit) + ", ratio kept)"
	}
	live := r.LiveLimit
	if live == nil {
		live = r.CurrentLimit
	}
	if live == nil {
		return "none"
	}
	return quantity(live) + ", unchanged"
}

// valuesKeyCell shows the values keys r was written at: the request's,
// and the limit's when it changes with it, or the limit's alone.
func valuesKeyCell(c plan.Container, r plan.Resource) string {
	if r.LimitsOnly {
		return keyCell(c.LimitKey(r.Resource))
	}
	cell := keyCell(c.RequestKey(r.Resource))
	if r.RecommendedLimit != nil && (r.CurrentLimit == nil || r.RecommendedLimit.Cmp(*r.CurrentLimit) != 0) {
		cell += ", limit " + keyCell(c.LimitKey(r.Resource))
	}
	return cell
}

// requestTotals sums the requests a pull request changes: CPU in
// millicores and memory in bytes, current and proposed, and how many.
type requestTotals struct {
	cpuBefore, cpuAfter int64
	memBefore, memAfter int64
	cpu, mem            int
	// fresh counts the requests set where there was none, freshCPU and
	// freshMem by resource.
	fresh, freshCPU, freshMem int
	// fromLimit counts the requests set where only a limit was, which
	// count from the limit: Kubernetes requests the limit for them.
	fromLimit int
}

// add counts r, a request to write; a limit-only change leaves the
// request as it is.
func (t *requestTotals) add(r plan.Resource) {
	if r.LimitsOnly || r.Recommended == nil {
		return
	}
	current := r.HeldRequest()
	if r.Current == nil && current != nil {
		t.fromLimit++
	}
	var before int64
	switch r.Resource {
	case corev1.ResourceCPU:
		if current != nil {
			before = current.MilliValue()
		}
		t.cpuBefore += before
		t.cpuAfter += r.Recommended.MilliValue()
		t.cpu++
	case corev1.ResourceMemory:
		if current != nil {
			before = current.Value()
		}
		t.memBefore += before
		t.memAfter += r.Recommended.Value()
		t.mem++
	default:
		return
	}
	if current == nil {
		t.fresh++
		if r.Resource == corev1.ResourceCPU {
			t.freshCPU++
		} else {
			t.freshMem++
		}
	}
}

// currentTotal shows the current total: none when no request was set.
func currentTotal(total int64, fresh, count int, format func(int64) string) string {
	if fresh == count {
		return "none"
	}
	return format(total)
}

// String is the line that tells a reviewer how much more or less the
// pull request asks of the cluster. Requests are per pod: it is the
// change per replica, whatever the number of replicas.
func (t requestTotals) String() string {
	var parts []string
	if t.cpu > 0 {
		parts = append(parts, fmt.Sprintf("cpu %s (%s → %s over %d %s)", signed(t.cpuAfter-t.cpuBefore, milliCores),
			currentTotal(t.cpuBefore, t.freshCPU, t.cpu, milliCores), milliCores(t.cpuAfter), t.cpu, plural(t.cpu, "request", "requests")))
	}
	if t.mem > 0 {
		parts = append(parts, fmt.Sprintf("memory %s (%s → %s over %d %s)", signed(t.memAfter-t.memBefore, byteAmount),
			currentTotal(t.memBefore, t.freshMem, t.mem, byteAmount), byteAmount(t.memAfter), t.mem, plural(t.mem, "request", "requests")))
	}
	if len(parts) == 0 {
		return "**Change in total requests, per replica:** none, only limits change."
	}
	s := "**Change in total requests, per replica:** " + strings.Join(parts, ", ") + ": the proposed minus the current requests, summed over the containers."
	if t.fromLimit > 0 {
		s += " A container with a limit and no request counts from its limit, which Kubernetes requests for it."
	}
	if t.fresh > 0 {
		s += " A container without a request counts from zero."
	}
	return s
}

// signed shows d with its sign, formatted by format; ±0 for none.
func signed(d int64, format func(int64) string) string {
	switch {
	case d > 0:
		return "+" + format(d)
	case d < 0:
		return "-" + format(-d)
	}
	return "±0"
}

// milliCores shows m millicores as requests are written: 250m, 2, and
// 1000 rather than Kubernetes' 1k.
func milliCores(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatInt(m, 10) + "m"
}

// byteAmount shows b bytes as requests are written, in whole GiB or MiB
// (2Gi, 1536Mi); else from 10GiB on in GiB, below in MiB, to a tenth.
func byteAmount(b int64) string {
	const mi, gi = 1 << 20, 1 << 30
	switch {
	case b%gi == 0:
		return strconv.FormatInt(b/gi, 10) + "Gi"
	case b >= 10*gi:
		return strconv.FormatFloat(math.Round(float64(b)/gi*10)/10, 'f', -1, 64) + "Gi"
	case b%mi == 0:
		return strconv.FormatInt(b/mi, 10) + "Mi"
	}
	return strconv.FormatFloat(math.Round(float64(b)/mi*10)/10, 'f', -1, 64) + "Mi"
}

// usageAmount shows v, cores for CPU and bytes otherwise, to the
// millicore or the MiB; "&lt;1m" or "&lt;1Mi" for a trace.
func usageAmount(res corev1.ResourceName, v float64) string {
	if res == corev1.ResourceCPU {
		m := math.Round(v * 1000)
		if m == 0 && v > 0 {
			return "&lt;1m"
		}
		return milliCores(int64(m))
	}
	mi := math.Round(v / (1 << 20))
	if mi == 0 && v > 0 {
		return "&lt;1Mi"
	}
	return byteAmount(int64(mi) << 20)
}

// inDays shows a number of days to a tenth: 7d, 1.5d.
func inDays(d float64) string {
	return strconv.FormatFloat(math.Round(d*10)/10, 'f', -1, 64) + "d"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// bodyWriter writes a body and remembers where it may be cut: after a
// whole row or block, with what closes the folded section open there,
// so that a cut leaves no table split and no section open.
type bodyWriter struct {
	b    strings.Builder
	cuts []bodyCut
	// closer closes the folded section being written; "" outside one.
	closer string
	// charts is what the usage charts may take.
	charts *chartBudget
}

// bodyCut is a place a body may be cut, and what must follow the cut.
type bodyCut struct {
	at     int
	closer string
}

// text writes s, after which the body may not be cut: a heading, a
// table's head, the start of a folded section.
func (w *bodyWriter) text(s string) { w.b.WriteString(s) }

// line writes s and a line end, after which the body may be cut.
func (w *bodyWriter) line(s string) {
	w.b.WriteString(s + "\n")
	w.cuts = append(w.cuts, bodyCut{at: w.b.Len(), closer: w.closer})
}

// row writes a table row, after which the body may be cut.
func (w *bodyWriter) row(r string) { w.line(r) }

func (w *bodyWriter) rows(rows []string) {
	for _, r := range rows {
		w.row(r)
	}
}

// open starts a folded section titled summary, which is the job's own
// text: Markdown escapes do not work within HTML, so no text from the
// cluster may go there. The blank line lets a table follow.
func (w *bodyWriter) open(summary string) {
	w.text("<details><summary>" + summary + "</summary>\n\n")
	w.closer = "\n</details>\n"
}

// close ends the folded section; the blank line before the tag ends the
// table in it.
func (w *bodyWriter) close() {
	w.closer = ""
	w.line("\n</details>")
}

// truncatedNote ends a body that was cut.
const truncatedNote = "\n_Truncated: the job's report lists everything._\n"

// bounded is the body, or when it is longer than limit, the body cut at
// the last place it may be, its folded section closed, and a note that
// says so.
func (w *bodyWriter) bounded(limit int) string {
	body := w.b.String()
	if len(body) <= limit {
		return body
	}
	last := bodyCut{}
	for _, c := range w.cuts {
		if c.at+len(c.closer)+len(truncatedNote) > limit {
			break
		}
		last = c
	}
	return body[:last.at] + last.closer + truncatedNote
}

// helmLine tells a reviewer that a workload's values went to a Helm
// release's values rather than to its manifest: the release, the object
// that installs it, the chart with its version and source, and the values
// edited. Every piece is the repository's or the cluster's text, escaped.
func helmLine(h *plan.Helm) string {
	var b strings.Builder
	b.WriteString("Through Helm release " + code(h.Namespace+"/"+h.Release))
	if h.Object != "" {
		b.WriteString(", installed by " + mdText(h.Kind) + " " + code(h.Object))
	}
	b.WriteString(", chart " + code(h.Chart))
	if h.Version != "" {
		b.WriteString(" " + code(h.Version))
	}
	if h.ChartSource != "" {
		b.WriteString(" from " + code(h.ChartSource))
	}
	if h.Layer != "" {
		b.WriteString("; values written to " + mdText(h.Layer))
	}
	b.WriteString(".")
	return b.String()
}

// keyCell shows the values key a value was written at, or a dash.
func keyCell(key string) string {
	if key == "" {
		return "-"
	}
	return code(key)
}

// row is a Markdown table row of cells that are escaped already.
func row(cells ...string) string {
	return "| " + strings.Join(cells, " | ") + " |"
}

// changePercent is the relative change from current to recommended, to a
// tenth of a percent; "new" when there was no request.
func changePercent(current, recommended *resource.Quantity) string {
	if current == nil {
		return "new"
	}
	if recommended == nil || current.IsZero() {
		return "-"
	}
	c, r := current.AsApproximateFloat64(), recommended.AsApproximateFloat64()
	return fmt.Sprintf("%+.1f%%", (r-c)/c*100)
}

// quantity shows q, or a dash for none.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return mdText(q.String())
}

// wordJoiner is an invisible character that forges' reference and mention
// filters do not take as part of a name: "@\u2060team" shows as "@team"
// but pings nobody, and "#\u2060123" links no issue.
const wordJoiner = "\u2060"

// mdText makes s inert text on one line of the pull request body, in a
// table cell or a heading, for GitHub, GitLab and Gitea alike. After
// plan.Line it writes < > & as entities, so no HTML tag or comment
// (such as a forged marker) can form; it backslash-escapes the characters
// of emphasis, links, images, code, tables, math and GitLab's inline diffs
// (\ ` * _ ~ [ ] ( ) ! | $ { }); it puts a word joiner after @ and # so
// (and after GitHub's GH-) so that a tenant can neither mention users or
// teams nor link issues; and it breaks bare URLs ("://", "www.") so that
// they are not made into links.
// What the reader sees is s, less those invisible joiners.
func mdText(s string) string {
	s = plan.Line(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '~', '[', ']', '(', ')', '!', '|', '$', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			writeUnlinked(&b, s, i, r)
		}
	}
	return b.String()
}

// titleText makes s inert text in a pull request's title, which the
// forges do not read as Markdown but still link: #123, owner/repo#1,
// !123 (Gitea, GitLab), GH-123 (GitHub), @user and GitLab's ~label,
// %milestone, &epic and $snippet. It keeps s to one line and puts a word
// joiner where mdText does, so that the title reads as s in plain text
// and links nothing.
func titleText(s string) string {
	s = plan.Line(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i, r := range s {
		switch r {
		case '!', '~', '%', '&', '$':
			// In the body these are escaped as Markdown; a title shows a
			// backslash as it is.
			b.WriteRune(r)
			b.WriteString(wordJoiner)
		default:
			writeUnlinked(&b, s, i, r)
		}
	}
	return b.String()
}

// writeUnlinked writes r, s's rune at i, with a word joiner where a forge
// would start a mention, a reference or a link: after @ and #, after the
// dash of GH-, after the colon of ://, and before the dot of www.
func writeUnlinked(b *strings.Builder, s string, i int, r rune) {
	switch r {
	case '@', '#':
		b.WriteRune(r)
		b.WriteString(wordJoiner)
	case '-':
		b.WriteRune(r)
		if i >= 2 && strings.EqualFold(s[i-2:i], "gh") {
			b.WriteString(wordJoiner)
		}
	case ':':
		b.WriteRune(r)
		if strings.HasPrefix(s[i+1:], "//") {
			b.WriteString(wordJoiner)
		}
	case '.':
		if i >= 3 && strings.EqualFold(s[i-3:i], "www") {
			b.WriteString(wordJoiner)
		}
		b.WriteRune(r)
	default:
		b.WriteRune(r)
	}
}

// codeSafe is what code shows as a code span: text in which none of the
// characters that end a code span, escape in it, split a table or read
// as markup elsewhere can occur.
var codeSafe = regexp.MustCompile(`^[A-Za-z0-9 ._/:=+,-]+$`)

// code shows s as a code span when it is plain enough (a file path, a
// reason code); anything else as mdText, because backslash escapes do not
// work inside a code span.
func code(s string) string {
	if codeSafe.MatchString(s) && strings.TrimSpace(s) == s {
		return "`" + s + "`"
	}
	return mdText(s)
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// methodNote tells a reviewer how a file was edited when it was not by
// splicing the values into its bytes, whose diff is only the values.
func methodNote(method string) string {
	switch method {
	case plan.MethodSubtree:
		return " (the values could not be spliced in: the lines of the edited subtree were re-serialised, every other line is unchanged)"
	case plan.MethodNewFile:
		return " (a new patch file)"
	}
	return ""
}

// regressions flags a body that corrects changes of the job's that
// regressed: per change, the commit that made it, when it took effect,
// what got worse and the correction, then how the container did before
// and after.
func regressions(w *bodyWriter, p *plan.Plan) {
	var changes, observed []string
	for _, it := range p.Items {
		name := mdText(it.Namespace + "/" + it.Name)
		for _, wt := range it.Watches {
			if wt.State != plan.WatchRegressed || wt.Correction == nil {
				continue
			}
			container := mdText(wt.Container)
			effective := "-"
			if wt.Effective != nil {
				effective = wt.Effective.UTC().Format("2006-01-02 15:04 UTC")
			}
			changes = append(changes, row(name, container, mdText(string(wt.Resource))+" "+quantity(wt.From)+" → "+quantity(&wt.To),
				commitLink(wt.Commit, wt.CommitURL), effective, mdText(wt.Regression), quantity(wt.Correction)))
			for _, o := range []struct {
				when string
				obs  *plan.Observed
			}{{"before", wt.Before}, {"after", wt.After}} {
				if o.obs == nil {
					continue
				}
				throttled, peak := "-", "-"
				if o.obs.Throttled != nil {
					throttled = fmt.Sprintf("%.0f%%", *o.obs.Throttled*100)
				}
				if o.obs.MemoryPeak != nil {
					peak = usageAmount(corev1.ResourceMemory, *o.obs.MemoryPeak)
				}
				observed = append(observed, row(name, container, fmt.Sprintf("%s (%s)", o.when, inDays(o.obs.To.Sub(o.obs.From).Hours()/24)),
					fmt.Sprint(o.obs.OOMKills), fmt.Sprint(o.obs.Restarts), throttled, peak))
			}
		}
	}
	if len(changes) == 0 {
		return
	}
	w.line("## Regression")
	w.line("")
	w.line("**This pull request undoes a change of recommend-job that made things worse in production.** " +
		"Until it is merged, the job proposes nothing else for these containers.")
	w.line("")
	w.line(row("ResourceRecommend", "Container", "Change", "Commit", "Took effect", "Regression", "Correction"))
	w.line("|---|---|---|---|---|---|---|")
	w.rows(changes)
	w.line("")
	w.line(row("ResourceRecommend", "Container", "Period", "OOM kills", "Restarts", "Throttled", "Memory peak"))
	w.line("|---|---|---|---|---|---|---|")
	w.rows(observed)
	w.line("")
}

// plainURL is a link target the body may show as it is: one the job made
// from its own git URL, with nothing that could end the link early.
var plainURL = regexp.MustCompile(`^https?://[A-Za-z0-9._~:/-]+$`)

// commitLink shows a commit as its short hash, linked when url is plain.
func commitLink(hash, url string) string {
	short := hash
	if len(short) > 12 {
		short = short[:12]
	}
	if plainURL.MatchString(url) && codeSafe.MatchString(short) {
		return "[`" + short + "`](" + url + ")"
	}
	return code(short)
}
