package markdown

import (
	"regexp"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// titleRefRE matches what GitHub, GitLab and Gitea link in a title: a
// reference or a mention right after its sigil.
var titleRefRE = regexp.MustCompile(`(?i)[#!~%&$@][0-9a-z]|gh-[0-9]|://|www\.`)

// TestGroupPullRequestTitle keeps a tenant's group name to one bounded
// line in the title.
func TestGroupPullRequestTitle(t *testing.T) {
	got := GroupPullRequestTitle("main", ".", "team=pay\nments\r\u202e"+strings.Repeat("x", 200))
	if strings.ContainsAny(got, "\n\r\u202e") || !strings.HasPrefix(got, "Right-size resource requests on main for team=pay ments") || len([]rune(got)) > 140 {
		t.Errorf("title %q", got)
	}
	if got := GroupPullRequestTitle("main", ".", "namespace/shop"); got != "Right-size resource requests on main for namespace/shop" {
		t.Errorf("title %q", got)
	}
}

// TestGroupPullRequestTitleLinksNothing checks that a group name in a
// title reads as it is, less invisible word joiners, yet holds nothing a
// forge links in a title: issue and pull request references, mentions,
// GitHub's GH- and GitLab's references, bare URLs.
func TestGroupPullRequestTitleLinksNothing(t *testing.T) {
	const wj = "\u2060"
	const prefix = "Right-size resource requests on main for "
	tests := []struct {
		group, want string
	}{
		{"team#1 @admin", "team#" + wj + "1 @" + wj + "admin"},
		{"owner/repo#12", "owner/repo#" + wj + "12"},
		{"GH-7 gh-8", "GH-" + wj + "7 gh-" + wj + "8"},
		{"!3 ~bug %v1 &4 $5", "!" + wj + "3 ~" + wj + "bug %" + wj + "v1 &" + wj + "4 $" + wj + "5"},
		{"https://evil.example www.evil.example", "https:" + wj + "//evil.example www" + wj + ".evil.example"},
		{"namespace/shop", "namespace/shop"},
		{"team=pay-ments <b>", "team=pay-ments <b>"}, // not Markdown: shown as it is
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			got := GroupPullRequestTitle("main", ".", tt.group)
			if got != prefix+tt.want {
				t.Errorf("GroupPullRequestTitle(%q) = %q, want %q", tt.group, got, prefix+tt.want)
			}
			if plain := strings.ReplaceAll(got, wj, ""); plain != prefix+tt.group {
				t.Errorf("title without its joiners = %q, want %q", plain, prefix+tt.group)
			}
			if m := titleRefRE.FindString(got); m != "" {
				t.Errorf("title %q holds %q, which a forge links", got, m)
			}
		})
	}
}

// TestOfCluster checks that a title names the cluster unless the job
// names none or the title names it already as its path, and that the
// cluster's name in it is inert.
func TestOfCluster(t *testing.T) {
	const title = "Right-size resource requests in clusters/staging on main for namespace/shop"
	tests := []struct{ path, cluster, want string }{
		{"clusters/staging", "", title},
		{"clusters/staging", "clusters/staging", title},
		{"./clusters/staging/", "clusters/staging", title},
		{"clusters/staging", "eu-1", title + " (cluster eu-1)"},
		{"clusters/staging", "clusters/staging/staging-eu", title + " (cluster clusters/staging/staging-eu)"},
		{"clusters/staging", "a\n@admin", title + " (cluster a @\u2060admin)"},
	}
	for _, tt := range tests {
		if got := OfCluster(title, tt.path, tt.cluster); got != tt.want {
			t.Errorf("OfCluster(%q, %q) = %q, want %q", tt.path, tt.cluster, got, tt.want)
		}
	}
}

// TestDashboardKeyOfCluster checks that two clusters sharing a push
// branch find a dashboard each, and that a job naming no cluster finds
// the one it always had.
func TestDashboardKeyOfCluster(t *testing.T) {
	none := DashboardMarker(DashboardKey("recommend-job/main", ""))
	staging := DashboardMarker(DashboardKey("recommend-job/main", "clusters/staging"))
	production := DashboardMarker(DashboardKey("recommend-job/main", "clusters/production"))
	if none != "<!-- recommend-job: dashboard `recommend-job/main` -->" {
		t.Errorf("marker without a cluster %q changed", none)
	}
	if staging == production || staging == none || production == none {
		t.Errorf("markers %q, %q and %q are not apart", none, staging, production)
	}
	if !strings.HasPrefix(DashboardBody(&plan.Plan{}, DashboardKey("recommend-job/main", "clusters/staging")), staging+"\n") {
		t.Error("the dashboard of a cluster does not start with its marker")
	}
}
