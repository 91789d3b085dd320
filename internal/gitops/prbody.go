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

	"github.com/recommend-job/recommend-job/internal/plan"
)

// markerPrefix starts the hidden marker that carries the change set's hash.
// The marker is the body's first line, where no text from the cluster or
// the repository can come before it; it names the change set for people
// and tools, but whether the pull request is up to date is decided by
// comparing whole bodies (see SyncPullRequest), never by the marker.
const markerPrefix = "<!-- recommend-job: sha256="

// MaxBodyLength bounds the body: GitHub refuses descriptions over 65,536
// characters, and a review that long is not read anyway.
const MaxBodyLength = 60000

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

// PullRequestBody renders the pull request description from a run's
// plan: the hidden marker on the first line, then a table per workload
// of the changed requests with their evidence (for a workload a Helm
// release renders, the release, chart and values edited above it, and
// each value's values key in it), then what was held back or
// could not be rendered, then the invalid ResourceRecommends. Every piece
// of text that comes from the cluster or the repository goes through
// mdText (or code), so that no tenant can add lines, markup, comments,
// links or mentions to the description everyone reviews.
func PullRequestBody(p *plan.Plan) string {
	var b strings.Builder
	b.WriteString("This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.\n")
	var held, invalid []string
	changed := 0
	for _, e := range p.Items {
		name := mdText(e.Namespace + "/" + e.Name)
		target := mdText(e.Target.Kind + " " + e.Target.Name)
		if e.Error != nil {
			invalid = append(invalid, row(name, target, code(e.Error.Code), mdText(e.Error.Message)))
			continue
		}
		var helm *plan.Helm
		if e.Source != nil {
			helm = e.Source.Helm
		}
		var rows [][]string
		for _, c := range e.Containers {
			container := mdText(c.Name)
			for _, r := range c.Resources {
				switch {
				case r.Recommended == nil:
					held = append(held, row(name, container, mdText(string(r.Resource)), quantity(r.Current), mdText(r.Reason)))
				case !r.Changed:
				case e.Source != nil && e.Source.Error != "":
					held = append(held, row(name, container, mdText(string(r.Resource)), quantity(r.Current), "not rendered: "+mdText(e.Source.Error)))
				default:
					cells := changeCells(container, r)
					if helm != nil {
						key := c.RequestKey(r.Resource)
						if r.LimitsOnly {
							key = c.LimitKey(r.Resource)
						}
						cells = append(cells, keyCell(key))
					}
					rows = append(rows, cells)
					if r.RecommendedLimit != nil && (r.CurrentLimit == nil || r.RecommendedLimit.Cmp(*r.CurrentLimit) != 0) {
						cells := limitCells(container, r)
						if helm != nil {
							cells = append(cells, keyCell(c.LimitKey(r.Resource)))
						}
						rows = append(rows, cells)
					}
				}
				if r.Recommended != nil && r.Evidence != nil && r.Evidence.HeldBack != "" {
					held = append(held, row(name, container, mdText(string(r.Resource)), quantity(r.Current), mdText(r.Evidence.HeldBack)))
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		changed += len(rows)
		file := ""
		if e.Source != nil && e.Source.File != "" {
			file = " in " + code(e.Source.File) + methodNote(e.Source.Method)
		}
		fmt.Fprintf(&b, "\n### %s: %s%s\n\n", name, target, file)
		if helm != nil {
			b.WriteString(helmLine(helm) + "\n\n")
			b.WriteString("| Container | Resource | Current | Recommended | Change | Window | Samples | Percentile | Buffer | Caps | Values key |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
		} else {
			b.WriteString("| Container | Resource | Current | Recommended | Change | Window | Samples | Percentile | Buffer | Caps |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		}
		for _, cells := range rows {
			b.WriteString(row(cells...) + "\n")
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
	marker := markerPrefix + ChangeSetHash(p) + " -->\n"
	body := b.String()
	if len(marker)+len(body) > MaxBodyLength {
		const note = "\n_Truncated: the job's report lists everything._\n"
		// Cut after a whole line: escaped text holds no line break, so
		// no row or heading is split.
		cut := strings.LastIndexByte(body[:MaxBodyLength-len(marker)-len(note)], '\n')
		body = body[:cut+1] + note
	}
	return marker + body
}

// changeCells are one changed resource's table cells; container is
// escaped already.
func changeCells(container string, r plan.Resource) []string {
	cols := []string{container, mdText(string(r.Resource)), quantity(r.Current), quantity(r.Recommended), changePercent(r.Current, r.Recommended), "", "", "", "", ""}
	if ev := r.Evidence; ev != nil {
		cols[5] = mdText(dashed(ev.Window))
		cols[6] = strconv.Itoa(ev.Samples)
		cols[7] = "p" + strconv.FormatFloat(ev.Percentile*100, 'f', -1, 64)
		cols[8] = fmt.Sprintf("+%d%%", ev.BufferPercent)
		cols[9] = mdText(dashed(strings.Join(ev.Capped, ", ")))
	}
	return cols
}

// limitCells are the cells of a limit that changes with its request
// (RequestsAndLimits): the limit:request ratio is kept, so the evidence is
// the request's row above. container is escaped already.
func limitCells(container string, r plan.Resource) []string {
	return []string{container, mdText(string(r.Resource)) + " limit", quantity(r.CurrentLimit), quantity(r.RecommendedLimit),
		changePercent(r.CurrentLimit, r.RecommendedLimit), "", "", "", "", "ratio kept"}
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
// that a tenant can neither mention users or teams nor link issues; and it
// breaks bare URLs ("://", "www.") so that they are not made into links.
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
		case '@', '#':
			b.WriteRune(r)
			b.WriteString(wordJoiner)
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
	return b.String()
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
