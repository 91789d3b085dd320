package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/report"
)

// markerPrefix starts the hidden marker that carries the change set's hash,
// so that a later run can tell whether the pull request already says what
// it would write.
const markerPrefix = "<!-- recommend-job: sha256="

// MaxBodyLength bounds the body: GitHub refuses descriptions over 65,536
// characters, and a review that long is not read anyway.
const MaxBodyLength = 60000

var markerRE = regexp.MustCompile(`<!-- recommend-job: sha256=([0-9a-f]{64}) -->`)

// ChangeSetHash is a hash of the changes a run writes: for every changed
// resource with a recommendation, its entry, container, resource and
// recommended value (and limit), sorted. Evidence such as sample counts moves every run
// and is left out, so the hash changes only when the files would.
func ChangeSetHash(rep *report.Report) string {
	var lines []string
	for _, e := range rep.ResourceRecommends {
		if e.Source != nil && e.Source.Error != "" {
			continue
		}
		for _, c := range e.Containers {
			for _, r := range c.Resources {
				if r.Changed && r.Recommended != "" {
					fields := []string{e.Namespace, e.Name, e.Target.Kind, e.Target.Name, c.Name, r.Resource, r.Recommended}
					if r.RecommendedLimit != "" {
						fields = append(fields, "limit", r.RecommendedLimit)
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

// MarkerHash returns the change-set hash in a pull request body, or "".
func MarkerHash(body string) string {
	if m := markerRE.FindStringSubmatch(body); m != nil {
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

// PullRequestBody renders the pull request description from a run's
// report: a table per workload of the changed requests with their
// evidence, then what was held back or could not be rendered, then the
// invalid ResourceRecommends, and the hidden marker.
func PullRequestBody(rep *report.Report) string {
	var b strings.Builder
	b.WriteString("This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.\n")
	var held, invalid []string
	changed := 0
	for _, e := range rep.ResourceRecommends {
		name := e.Namespace + "/" + e.Name
		target := e.Target.Kind + " " + e.Target.Name
		if e.Error != nil {
			invalid = append(invalid, fmt.Sprintf("| %s | %s | `%s` | %s |", cell(name), cell(target), cell(e.Error.Code), cell(e.Error.Message)))
			continue
		}
		var rows []string
		for _, c := range e.Containers {
			for _, r := range c.Resources {
				switch {
				case r.Recommended == "":
					held = append(held, fmt.Sprintf("| %s | %s | %s | %s | %s |", cell(name), cell(c.Name), r.Resource, dashed(r.Current), cell(r.Reason)))
				case !r.Changed:
				case e.Source != nil && e.Source.Error != "":
					held = append(held, fmt.Sprintf("| %s | %s | %s | %s | not rendered: %s |", cell(name), cell(c.Name), r.Resource, dashed(r.Current), cell(e.Source.Error)))
				default:
					rows = append(rows, changeRow(c.Name, r))
					if r.RecommendedLimit != "" && r.RecommendedLimit != r.CurrentLimit {
						rows = append(rows, limitRow(c.Name, r))
					}
				}
				if r.Recommended != "" && r.Evidence != nil && r.Evidence.HeldBack != "" {
					held = append(held, fmt.Sprintf("| %s | %s | %s | %s | %s |", cell(name), cell(c.Name), r.Resource, dashed(r.Current), cell(r.Evidence.HeldBack)))
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		changed += len(rows)
		file := ""
		if e.Source != nil && e.Source.File != "" {
			file = " in `" + e.Source.File + "`"
		}
		fmt.Fprintf(&b, "\n### %s: %s%s\n\n", name, target, file)
		b.WriteString("| Container | Resource | Current | Recommended | Change | Window | Samples | Percentile | Buffer | Caps |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, row := range rows {
			b.WriteString(row + "\n")
		}
	}
	if changed == 0 {
		b.WriteString("\nNo request changes.\n")
	}
	if len(held) > 0 {
		b.WriteString("\n### Held back\n\n| ResourceRecommend | Container | Resource | Current | Reason |\n|---|---|---|---|---|\n")
		b.WriteString(strings.Join(held, "\n") + "\n")
	}
	if len(invalid) > 0 {
		b.WriteString("\n### Invalid ResourceRecommends\n\n| ResourceRecommend | Target | Code | Message |\n|---|---|---|---|\n")
		b.WriteString(strings.Join(invalid, "\n") + "\n")
	}
	marker := fmt.Sprintf("\n%s%s -->\n", markerPrefix, ChangeSetHash(rep))
	body := b.String()
	if len(body)+len(marker) > MaxBodyLength {
		const note = "\n\n_Truncated: the job's report lists everything._\n"
		cut := strings.LastIndexByte(body[:MaxBodyLength-len(marker)-len(note)], '\n')
		body = body[:cut] + note
	}
	return body + marker
}

// changeRow is one changed resource's table row.
func changeRow(container string, r report.Resource) string {
	cols := []string{cell(container), r.Resource, dashed(r.Current), r.Recommended, changePercent(r.Current, r.Recommended), "", "", "", "", ""}
	if ev := r.Evidence; ev != nil {
		cols[5] = dashed(ev.Window)
		cols[6] = strconv.Itoa(ev.Samples)
		cols[7] = "p" + strconv.FormatFloat(ev.Percentile*100, 'f', -1, 64)
		cols[8] = fmt.Sprintf("+%d%%", ev.BufferPercent)
		cols[9] = dashed(cell(strings.Join(ev.Capped, ", ")))
	}
	return "| " + strings.Join(cols, " | ") + " |"
}

// limitRow is the row of a limit that changes with its request
// (RequestsAndLimits): the limit:request ratio is kept, so the evidence is
// the request's row above.
func limitRow(container string, r report.Resource) string {
	cols := []string{cell(container), r.Resource + " limit", dashed(r.CurrentLimit), r.RecommendedLimit, changePercent(r.CurrentLimit, r.RecommendedLimit), "", "", "", "", "ratio kept"}
	return "| " + strings.Join(cols, " | ") + " |"
}

// changePercent is the relative change from current to recommended, to a
// tenth of a percent; "new" when there was no request.
func changePercent(current, recommended string) string {
	if current == "" {
		return "new"
	}
	cur, err1 := resource.ParseQuantity(current)
	rec, err2 := resource.ParseQuantity(recommended)
	if err1 != nil || err2 != nil || cur.IsZero() {
		return "-"
	}
	c, r := cur.AsApproximateFloat64(), rec.AsApproximateFloat64()
	return fmt.Sprintf("%+.1f%%", (r-c)/c*100)
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
