package markdown

import (
	pathpkg "path"
	"strings"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// GroupPullRequestTitle is the title of a group's pull request: the run's
// title, for the group. A group's name may come from a tenant's label or
// annotation: it is kept to one line, cut, and made inert (titleText) in
// the title, so that it links and mentions no one.
func GroupPullRequestTitle(base, path, group string) string {
	return PullRequestTitle(base, path) + " for " + titleText(cutText(plan.Line(group), maxTitleGroup))
}

// OfCluster is title, of a group's pull request or the dashboard, for
// the cluster the job writes for (gitops.Options.Cluster): title itself
// when the job names no cluster, or when its cluster is the path the
// title names already; else title with the cluster after it.
func OfCluster(title, path, cluster string) string {
	if cluster == "" || cluster == strings.Trim(pathpkg.Clean("/"+path), "/") {
		return title
	}
	return title + " (cluster " + titleText(cutText(plan.Line(cluster), maxTitleGroup)) + ")"
}

// maxTitleGroup bounds the group's part of a title.
const maxTitleGroup = 80

// cutText cuts s to n characters, marking the cut with an ellipsis.
func cutText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// maxClosedNote bounds why a closing says (see MaxBodyLength).
const maxClosedNote = 300

// ClosedBody is the body a pull request the job closes gets: body
// without the line of the values it proposed, ending with why the job
// closed it. A later run takes a pull request closed with those values
// for a person's "not now" (see ParseProposed), which the job's own
// closing is not.
func ClosedBody(body, why string) string {
	why = cutText(why, maxClosedNote)
	var kept []string
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), proposedPrefix) {
			kept = append(kept, line)
		}
	}
	return strings.TrimRight(strings.Join(kept, "\n"), "\n") + "\n\n---\n\n**Closed by recommend-job:** " + mdText(why) + "\n"
}
