package markdown

import (
	"fmt"
	"strings"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// DashboardMarker is the first line of the dashboard issue of the job
// that key names (DashboardKey): the job finds its one issue by it.
func DashboardMarker(key string) string {
	return "<!-- recommend-job: dashboard " + code(key) + " -->"
}

// DashboardKey is what names the dashboard issue of the job that pushes
// to pushBranch for cluster (gitops.Options.Cluster) in its marker: the
// push branch alone when the job names no cluster, as it always was, so
// that two clusters whose jobs share a push branch keep a dashboard each.
func DashboardKey(pushBranch, cluster string) string {
	if cluster == "" {
		return pushBranch
	}
	return pushBranch + " cluster " + cluster
}

// DashboardTitle is the dashboard issue's title.
func DashboardTitle(base, path string) string {
	if path == "" || path == "." {
		return "Resource recommendations dashboard for " + base
	}
	return fmt.Sprintf("Resource recommendations dashboard for %s on %s", path, base)
}

// The issue must stay under the forges' size limits whatever the cluster
// holds: each section shows at most maxDashboardRows rows, a reason or
// message at most maxDashboardCell characters, and rows stop where the
// body would pass MaxBodyLength, less the room kept for the sections
// still to come.
const (
	maxDashboardRows = 200
	maxDashboardCell = 300
	sectionReserve   = 200
)

// DashboardBody is the dashboard issue's body, from a run's plan: the
// groups with an open pull request, those waiting on pr-limit or
// pr-per-run, those held by a closed pull request; then the targets that
// could not be rendered and why, the invalid ResourceRecommends with
// their codes, and the values without enough data; then the job's merged
// changes that regressed (with the pull request that corrects them), those
// under watch, and those verified. Text from the cluster
// or the repository is escaped as in pull request bodies.
func DashboardBody(p *plan.Plan, key string) string {
	var b strings.Builder
	b.WriteString(DashboardMarker(key) + "\n")
	b.WriteString("Updated by every run of recommend-job; it lists what waits for a person.\n")
	dashboardCost(&b, p)
	var open, waiting, held [][]string
	for _, g := range p.Groups {
		name := mdText(g.Name)
		switch {
		case g.Held != "":
			held = append(held, []string{name, mdCell(g.Held)})
		case g.Waiting != "":
			waiting = append(waiting, []string{name, fmt.Sprintf("%.2f", g.Savings), mdCell(g.Waiting)})
		case g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Number > 0 && g.Git.PullRequest.Action != plan.PRClosed:
			pr := g.Git.PullRequest
			open = append(open, []string{name, fmt.Sprintf("[#%d](%s)", pr.Number, mdURL(pr.URL))})
		}
	}
	var unrendered, invalid, nodata [][]string
	regressed, watching, verified := dashboardWatches(p)
	for _, it := range p.Items {
		name := mdText(it.Namespace + "/" + it.Name)
		target := mdText(it.Target.Kind + " " + it.Target.Name)
		switch {
		case it.Error != nil:
			invalid = append(invalid, []string{name, target, code(it.Error.Code), mdCell(it.Error.Message)})
			continue
		case it.Source != nil && it.Source.Error != "":
			unrendered = append(unrendered, []string{name, target, mdCell(it.Source.Error)})
		}
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if r.Recommended == nil && r.Reason != "" {
					nodata = append(nodata, []string{name, mdText(c.Name), mdText(string(r.Resource)), mdCell(r.Reason)})
				}
			}
		}
	}
	// Nothing that moves from run to run without a change (such as what
	// a run did), so that a quiet run leaves the issue alone.
	sections := []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"Open pull requests", []string{"group", "pull request"}, open},
		{"Waiting on the pull request limits", []string{"group", "savings (cores)", "waiting on"}, waiting},
		{"Held by a closed pull request", []string{"group", "why"}, held},
		{"Not rendered", []string{"ResourceRecommend", "target", "why"}, unrendered},
		{"Invalid ResourceRecommends", []string{"ResourceRecommend", "target", "code", "message"}, invalid},
		{"Not enough data", []string{"ResourceRecommend", "container", "resource", "why"}, nodata},
		{"Regressed changes", []string{"ResourceRecommend", "container", "change", "commit", "regression", "correction", "pull request"}, regressed},
		{"Changes under watch", []string{"ResourceRecommend", "container", "change", "commit", "state", "took effect"}, watching},
		{"Verified changes", []string{"ResourceRecommend", "container", "change", "commit", "took effect"}, verified},
	}
	for i, s := range sections {
		section(&b, s.title, s.header, s.rows, MaxBodyLength-(len(sections)-i)*sectionReserve)
	}
	return b.String()
}

// mdCell is mdText of s cut to maxDashboardCell characters.
func mdCell(s string) string { return mdText(cutText(s, maxDashboardCell)) }

// dashboardWatches are the rows of the job's merged changes: those that
// regressed, with the pull request that corrects them (its group's, or
// the group's name before it has one); those pending or watched; and
// those verified within the runs' history.
func dashboardWatches(p *plan.Plan) (regressed, watching, verified [][]string) {
	prs := map[string]string{}
	for _, g := range p.Groups {
		if g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Number > 0 && g.Git.PullRequest.Action != plan.PRClosed {
			prs[g.Name] = fmt.Sprintf("[#%d](%s)", g.Git.PullRequest.Number, mdURL(g.Git.PullRequest.URL))
		}
	}
	for _, it := range p.Items {
		name := mdText(it.Namespace + "/" + it.Name)
		for _, w := range it.Watches {
			change := mdText(string(w.Resource)) + " " + quantity(w.From) + " → " + quantity(&w.To)
			if w.Corrective {
				change += " (correction)"
			}
			commit := commitLink(w.Commit, w.CommitURL)
			effective := "-"
			if w.Effective != nil {
				effective = w.Effective.UTC().Format("2006-01-02 15:04 UTC")
			}
			switch w.State {
			case plan.WatchRegressed:
				pr := prs[it.Group]
				switch {
				case pr != "":
					pr += " (" + code(it.Group) + ")"
				case it.Group != "":
					pr = code(it.Group)
				default:
					pr = "-"
				}
				regressed = append(regressed, []string{name, mdText(w.Container), change, commit, mdCell(w.Regression), quantity(w.Correction), pr})
			case plan.WatchVerified:
				verified = append(verified, []string{name, mdText(w.Container), change, commit, effective})
			case plan.WatchSuperseded:
				// Not under watch: the cluster runs another value since.
			default:
				watching = append(watching, []string{name, mdText(w.Container), change, commit, mdText(w.State), effective})
			}
		}
	}
	return regressed, watching, verified
}

// section writes a titled table, or that there is nothing in it; its
// rows stop at maxDashboardRows, or before the body passes limit.
func section(b *strings.Builder, title string, header []string, rows [][]string, limit int) {
	fmt.Fprintf(b, "\n### %s\n\n", title)
	if len(rows) == 0 {
		b.WriteString("None.\n")
		return
	}
	b.WriteString(row(header...) + "\n")
	b.WriteString(row(strings.Split(strings.Repeat("---,", len(header)-1)+"---", ",")...) + "\n")
	for i, r := range rows {
		line := row(r...) + "\n"
		if i == maxDashboardRows || b.Len()+len(line) > limit {
			fmt.Fprintf(b, "\nand %d more.\n", len(rows)-i)
			break
		}
		b.WriteString(line)
	}
}

// mdURL keeps a forge's URL inside a Markdown link.
func mdURL(u string) string {
	return strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "\n", "", "\r", "").Replace(u)
}
