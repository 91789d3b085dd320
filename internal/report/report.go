package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// Format is an output format.
type Format string

// Output formats.
const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
)

// Write prints the plan of a run in format f: JSON and YAML are the plan's
// own encoding, the table is for people.
func Write(w io.Writer, p *plan.Plan, f Format) error {
	switch f {
	case FormatJSON:
		return writeJSON(w, p)
	case FormatYAML:
		b, err := yaml.Marshal(p)
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = w.Write(b)
		return err
	case FormatTable:
		if err := writeTable(w, p); err != nil {
			return err
		}
		if p.Interrupted != "" {
			if _, err := fmt.Fprintf(w, "\ncut short: %s; the report holds what the run had\n", plan.Line(p.Interrupted)); err != nil {
				return err
			}
		}
		if p.Failed != "" {
			_, err := fmt.Fprintf(w, "\nfailed: %s\n", plan.Line(p.Failed))
			return err
		}
		return nil
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
}

// writeTable prints a row per resource, then what happened in git. Text
// from the cluster or the repository goes through line or text, so that
// it cannot move the cursor, recolour or clear a terminal, or add rows.
func writeTable(w io.Writer, p *plan.Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCERECOMMEND\tTARGET\tCONTAINER\tRESOURCE\tCURRENT\tRECOMMENDED\tSTATUS")
	for _, it := range p.Items {
		name := plan.Line(it.Namespace + "/" + it.Name)
		target := plan.Line(it.Target.Kind + "/" + it.Target.Name)
		if it.Error != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tinvalid: %s: %s\n", name, target, plan.Line(it.Error.Code), plan.Line(it.Error.Message))
			continue
		}
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				current := dash(r.Current)
				if r.Current == nil {
					// Nothing set is not a value of 0.
					current = "none"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, target, plan.Line(c.Name), r.Resource,
					current, dash(r.Recommended), plan.Line(status(it, c, r)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeAutoscalers(w, p); err != nil {
		return err
	}
	if err := writeWatches(w, p); err != nil {
		return err
	}
	if p.Unverified != "" {
		if _, err := fmt.Fprintf(w, "\nmerged changes not all checked: %s\n", plan.Line(p.Unverified)); err != nil {
			return err
		}
	}
	if p.Unrecorded != "" {
		if _, err := fmt.Fprintf(w, "\nthis run's pushes not recorded, so not verified once merged: %s\n", plan.Line(p.Unrecorded)); err != nil {
			return err
		}
	}
	if err := writeGit(w, p, ownBranch(p.Git)); err != nil {
		return err
	}
	for _, g := range p.Groups {
		var err error
		switch {
		case g.Held != "":
			_, err = fmt.Fprintf(w, "\ngroup %s: held: %s\n", plan.Line(g.Name), plan.Line(g.Held))
		case g.Waiting != "":
			_, err = fmt.Fprintf(w, "\ngroup %s: waiting: %s\n", plan.Line(g.Name), plan.Line(g.Waiting))
		case g.Git != nil:
			if _, err = fmt.Fprintf(w, "\ngroup %s:", plan.Line(g.Name)); err == nil {
				err = writeGit(w, p, g.Git)
			}
		}
		if err != nil {
			return err
		}
	}
	if d := p.Dashboard; d != nil {
		_, err := fmt.Fprintf(w, "\ndashboard issue #%d %s: %s\n", d.Number, d.Action, plan.Line(d.URL))
		return err
	}
	return nil
}

// writeAutoscalers prints the HPA targets that move with the requests
// (hpa-mode adjust), a row per utilization metric; nothing when none does.
func writeAutoscalers(w io.Writer, p *plan.Plan) error {
	var rows []string
	for _, it := range p.Items {
		for _, a := range it.Autoscalers {
			for _, t := range a.Targets {
				if !t.Changes() {
					continue
				}
				of := "pod"
				if t.Container != "" {
					of = "container " + t.Container
				}
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%d%% -> %d%%\t%s -> %s\t%s\n", plan.Line(it.Namespace+"/"+it.Name), plan.Line(a.Name),
					plan.Line(string(t.Resource)), plan.Line(of), t.From, t.To, dash(t.RequestFrom), dash(t.RequestTo), plan.Line(a.File)))
			}
		}
	}
	return writeSection(w, "autoscaler targets moved with the requests", "RESOURCERECOMMEND\tHPA\tRESOURCE\tOF\tTARGET\tREQUEST\tFILE", rows)
}

// writeSection prints a titled table of tab-separated rows under header;
// nothing when there are no rows.
func writeSection(w io.Writer, title, header string, rows []string) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\n%s:\n", title); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprint(tw, r)
	}
	return tw.Flush()
}

// watchOrder is the order in which the merged changes are listed: what
// needs a person first.
var watchOrder = []string{plan.WatchRegressed, plan.WatchWatching, plan.WatchPending, plan.WatchSuperseded, plan.WatchVerified}

// writeWatches prints the job's merged changes the run watched, a row per
// container resource, regressed ones first; nothing when there are none.
func writeWatches(w io.Writer, p *plan.Plan) error {
	var rows []string
	for _, state := range watchOrder {
		for _, it := range p.Items {
			name := plan.Line(it.Namespace + "/" + it.Name)
			for _, wt := range it.Watches {
				if wt.State != state {
					continue
				}
				change := dash(wt.From) + " -> " + wt.To.String()
				if wt.Corrective {
					change += " (a correction)"
				}
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, plan.Line(wt.Container), plan.Line(string(wt.Resource)),
					change, plan.Line(short(wt.Commit)), wt.State, plan.Line(watchDetail(it, wt))))
			}
		}
	}
	return writeSection(w, "merged changes of the job", "RESOURCERECOMMEND\tCONTAINER\tRESOURCE\tCHANGE\tCOMMIT\tSTATE\tDETAIL", rows)
}

// watchDetail says what a watch found: when the change took effect and,
// for a regression, why and its correction.
func watchDetail(it plan.Item, w plan.Watch) string {
	const layout = "2006-01-02 15:04 UTC"
	switch {
	case w.State == plan.WatchPending:
		return "committed " + w.Committed.UTC().Format(layout) + "; not yet what the cluster runs"
	case w.State == plan.WatchSuperseded:
		return "committed " + w.Committed.UTC().Format(layout) + "; the cluster runs " + dash(w.Live) + " since, neither value: not watched"
	case w.Effective == nil:
		return ""
	case w.State == plan.WatchRegressed:
		s := w.Regression
		if w.Correction != nil {
			s += "; correction " + w.Correction.String()
		}
		if it.Group != "" {
			s += " in group " + it.Group
		}
		return s + " (took effect " + w.Effective.UTC().Format(layout) + ")"
	case w.State == plan.WatchVerified:
		return "took effect " + w.Effective.UTC().Format(layout) + "; nothing worse in the period"
	default:
		return "took effect " + w.Effective.UTC().Format(layout) + "; nothing worse so far"
	}
}

// ownBranch is what the run did on its own branch, without what g sums
// up of its groups (which the groups' lines say); nil when it has none.
func ownBranch(g *plan.Git) *plan.Git {
	if g == nil || len(g.Branches) == 0 && len(g.PullRequests) == 0 {
		return g
	}
	if g.Branch == "" {
		return nil
	}
	own := *g
	own.Pushed = g.Commit != ""
	own.Branches, own.PullRequests = nil, nil
	return &own
}

// writeGit prints what the run did on one branch: pushed, up to date,
// stopped, or what a dry run would commit.
func writeGit(w io.Writer, p *plan.Plan, g *plan.Git) error {
	switch {
	case g == nil:
	case g.Stopped != "":
		_, err := fmt.Fprintf(w, "\nstopped, branch %s left alone: %s\n", plan.Line(g.Branch), plan.Line(g.Stopped))
		return err
	case g.Pushed:
		if _, err := fmt.Fprintf(w, "\npushed %s to branch %s (%s)\n", short(g.Commit), plan.Line(g.Branch), plan.Line(strings.Join(g.Files, ", "))); err != nil {
			return err
		}
		return writePullRequest(w, g)
	case p.DryRun && len(g.Files) > 0:
		if _, err := fmt.Fprintf(w, "\ndry run: would commit %s to branch %s\n", plan.Line(strings.Join(g.Files, ", ")), plan.Line(g.Branch)); err != nil {
			return err
		}
		if g.Diff != "" {
			if _, err := fmt.Fprintf(w, "\n%s", text(g.Diff)); err != nil {
				return err
			}
		}
		if pr := g.PullRequest; pr != nil && pr.Body != "" {
			_, err := fmt.Fprintf(w, "\npull request body:\n\n%s\n", text(pr.Body))
			return err
		}
		return nil
	case p.Failed != "" || p.Interrupted != "":
		// Not pushed because the run ended, not because nothing changed.
		return writePullRequest(w, g)
	case p.NothingRendered():
		// Not up to date: nothing could be written (the STATUS says why).
		_, err := fmt.Fprintf(w, "\nnothing rendered: no target's values could be written to the repository (see STATUS); branch %s left as it is\n", plan.Line(g.Branch))
		return err
	default:
		if _, err := fmt.Fprintf(w, "\nbranch %s is up to date: nothing to commit\n", plan.Line(g.Branch)); err != nil {
			return err
		}
		return writePullRequest(w, g)
	}
	return nil
}

// writePullRequest prints what the run did to the pull request, if any.
func writePullRequest(w io.Writer, g *plan.Git) error {
	pr := g.PullRequest
	if pr == nil || pr.Number == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "pull request #%d %s: %s\n", pr.Number, pr.Action, plan.Line(pr.URL))
	return err
}

// status is what became of a resource's value; a change that went
// through a Helm release says where it went.
func status(it plan.Item, c plan.Container, r plan.Resource) string {
	switch {
	case r.Recommended == nil:
		return r.Reason
	case !r.Changed:
		return "unchanged"
	case it.Source != nil && it.Source.Error != "":
		return "not rendered: " + it.Source.Error
	}
	s := "change"
	switch {
	case it.Source != nil && !it.Source.Changed:
		s = "change, already in git"
	case r.Reason != "":
		s = "change (" + r.Reason + ")"
	}
	if route := helmRoute(it, c, r); route != "" {
		s += ", " + route
	}
	if it.Source != nil && it.Source.Deployer != "" {
		s += ", deployed by " + it.Source.Deployer
	}
	return s
}

// helmRoute says where a resource's values went through a Helm release,
// e.g. "via Helm release shop/shop (chart shop 1.4.0):
// charts/shop/values-production.yaml web.resources.requests.cpu"; "" for
// a value that went to a manifest.
func helmRoute(it plan.Item, c plan.Container, r plan.Resource) string {
	if it.Source == nil || it.Source.Helm == nil {
		return ""
	}
	var keys []string
	for _, k := range []string{c.RequestKey(r.Resource), c.LimitKey(r.Resource)} {
		if k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	h := it.Source.Helm
	where := it.Source.File
	if where == "" {
		where = h.Layer
	}
	return fmt.Sprintf("via Helm release %s/%s (chart %s): %s %s", h.Namespace, h.Release,
		strings.TrimSpace(h.Chart+" "+h.Version), where, strings.Join(keys, ", "))
}

// text is s with its lines and tabs kept and every other control
// character shown as U+FFFD, for multi-line text from the repository (a
// diff).
func text(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control)) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func dash(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// itemsKey is the plan's items as a plan without them encodes them, at the
// top level of the indented document.
const itemsKey = "\n  \"resourceRecommends\": null"

// writeJSON writes p as a json.Encoder indenting by two spaces does, to the
// byte, but an item at a time: the whole report of a large run, indented,
// is several times the size of its items, and would be held at once.
func writeJSON(w io.Writer, p *plan.Plan) error {
	rest := *p
	rest.Items = nil
	doc, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	at := bytes.Index(doc, []byte(itemsKey))
	if at < 0 {
		return errors.New("encoding the report: no place for its items")
	}
	at += len(itemsKey) - len("null")
	// An item that cannot be encoded fails the report before any of it is
	// written, as the encoder would: never half a document.
	for i := range p.Items {
		if _, err := json.Marshal(&p.Items[i]); err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
	}
	bw := bufio.NewWriter(w)
	bw.Write(doc[:at])
	switch {
	case p.Items == nil:
		bw.WriteString("null")
	case len(p.Items) == 0:
		bw.WriteString("[]")
	default:
		bw.WriteByte('[')
		for i := range p.Items {
			item, err := json.MarshalIndent(&p.Items[i], "    ", "  ")
			if err != nil {
				return fmt.Errorf("encoding the report: %w", err)
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n    ")
			bw.Write(item)
		}
		bw.WriteString("\n  ]")
	}
	bw.Write(doc[at+len("null"):])
	bw.WriteByte('\n')
	return bw.Flush()
}
