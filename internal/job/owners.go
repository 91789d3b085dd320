package job

import (
	"regexp"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// AnnotationReviewers on a ResourceRecommend, or on its namespace, names
// who reviews the pull request that holds its changes: users and teams,
// comma- or space-separated (@alice, @org/payments). A label of that key
// names one user, as label values allow (alice).
const AnnotationReviewers = "recommend-job.io/reviewers"

// maxItemReviewers bounds the reviewers one ResourceRecommend adds: a
// tenant's annotation must not flood a pull request others read.
const maxItemReviewers = 5

// reviewerName is a user or team name as forges accept them.
var reviewerName = regexp.MustCompile(`^@?[A-Za-z0-9][A-Za-z0-9._-]{0,62}(/[A-Za-z0-9][A-Za-z0-9._-]{0,62})?$`)

// reviewersOf returns who reviews a pull request: the run's reviewers,
// the owners the repository's CODEOWNERS gives the changed files, and
// those the items' and their namespaces' annotations and labels name;
// each once ("@alice" and "alice" are one), in that order. Names that are
// not user or team names are left out.
func reviewersOf(run, owners []string, items []plan.Item) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		key := strings.ToLower(strings.TrimPrefix(name, "@"))
		if reviewerName.MatchString(name) && !seen[key] {
			seen[key] = true
			out = append(out, name)
		}
	}
	for _, r := range run {
		add(r)
	}
	for _, o := range owners {
		add(o)
	}
	for _, it := range items {
		for _, text := range []string{it.Annotations[AnnotationReviewers], it.Labels[AnnotationReviewers],
			it.NamespaceAnnotations[AnnotationReviewers], it.NamespaceLabels[AnnotationReviewers]} {
			names := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
			for _, n := range names[:min(len(names), maxItemReviewers)] {
				add(n)
			}
		}
	}
	return slices.Clip(out)
}

// namespacesRead reports whether the namespaces of items were read, so
// that their reviewers are known. Every namespace has a label, its name
// (kubernetes.io/metadata.name): an item without labels of its namespace
// is one whose namespaces could not be listed.
func namespacesRead(items []plan.Item) bool {
	for _, it := range items {
		if it.NamespaceLabels == nil {
			return false
		}
	}
	return true
}
