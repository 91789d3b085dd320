package gitops

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// The trailers that record, in each commit of the job's, the requests it
// changes: one line per container and resource, whatever the commit
// template says, so that a later run finds its changes on the base
// branch whichever way they were merged (a merge commit or a rebase keeps
// the commit; a squash keeps its message).
const (
	changeTrailer     = "Recommend-Job-Change"
	correctionTrailer = "Recommend-Job-Correction"
)

// maxTrailers bounds the trailer lines read from one commit message.
const maxTrailers = 10000

// trailerLine is one trailer: namespace/name of the ResourceRecommend,
// container, resource, the request before ("none" when unset) and after.
// Every name is a Kubernetes name, which has no spaces.
var trailerLine = regexp.MustCompile(`^(` + changeTrailer + `|` + correctionTrailer + `): ([a-z0-9][a-z0-9.-]*)/([a-z0-9][a-z0-9.-]*) ([a-z0-9][a-z0-9.-]*) (cpu|memory) (\S+) (\S+)$`)

// RecordedChange is one request change the job committed.
type RecordedChange struct {
	// Item is the ResourceRecommend's namespace/name.
	Item      string
	Container string
	Resource  corev1.ResourceName
	// From is the request before, nil when unset; To the request after.
	From *resource.Quantity
	To   resource.Quantity
	// Correction marks the correction of a regression.
	Correction bool
	// Commit and Time are the commit and its committer time; URL is
	// where a person reads the commit, when the repository's web address
	// can be told from its git URL.
	Commit string
	Time   time.Time
	URL    string
}

// ChangeTrailers are the trailer lines that record the requests p changes
// in the files that changed, "" when none. Names that could not be read
// back are left out.
func ChangeTrailers(p *plan.Plan) string {
	var b strings.Builder
	for _, it := range p.Items {
		for _, c := range it.Containers {
			if !c.Landed {
				continue
			}
			for _, r := range c.Resources {
				if r.LimitsOnly || r.Request == nil || !r.Changed || (r.Current != nil && r.Current.Cmp(*r.Request) == 0) {
					continue
				}
				key := changeTrailer
				if r.Correction {
					key = correctionTrailer
				}
				line := fmt.Sprintf("%s: %s/%s %s %s %s %s", key, it.Namespace, it.Name, c.Name, r.Resource, orNone(r.Current), r.Request.String())
				if trailerLine.MatchString(line) {
					b.WriteString(line + "\n")
				}
			}
		}
	}
	return b.String()
}

// WithTrailers is message with trailers as its last paragraph.
func WithTrailers(message, trailers string) string {
	if trailers == "" {
		return message
	}
	return strings.TrimRight(message, "\n") + "\n\n" + trailers
}

// ParseChanges reads the change trailers of a commit message; lines that
// do not parse are ignored.
func ParseChanges(message string) []RecordedChange {
	var out []RecordedChange
	for line := range strings.Lines(message) {
		m := trailerLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		to, err := resource.ParseQuantity(m[7])
		if err != nil {
			continue
		}
		c := RecordedChange{Item: m[2] + "/" + m[3], Container: m[4], Resource: corev1.ResourceName(m[5]), To: to,
			Correction: m[1] == correctionTrailer}
		if m[6] != "none" {
			from, err := resource.ParseQuantity(m[6])
			if err != nil {
				continue
			}
			c.From = &from
		}
		out = append(out, c)
		if len(out) == maxTrailers {
			break
		}
	}
	return out
}

// webURL is the web address of the repository at g, for links to its
// commits: the https URL without .git, or the host and path of an ssh
// URL; "" for a local repository.
func webURL(g gitURL) string {
	if g.scp != nil {
		return "https://" + g.scp[2] + "/" + strings.TrimSuffix(strings.TrimPrefix(g.scp[3], "/"), ".git")
	}
	u := g.u
	if u == nil || u.Host == "" {
		return ""
	}
	scheme := u.Scheme
	if scheme == "ssh" {
		scheme = "https"
	}
	return scheme + "://" + u.Hostname() + portOf(u) + strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
}

// portOf keeps the port of an http(s) URL, which a web address shares.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return ":" + p
	}
	return ""
}

// orNone shows q in a trailer, or "none" for a request that was unset.
func orNone(q *resource.Quantity) string {
	if q == nil {
		return "none"
	}
	return q.String()
}
