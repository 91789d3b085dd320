package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
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

// DefaultMergedDepth is how many commits of the base branch ReadMerged
// reads at most.
const DefaultMergedDepth = 500

// ReadMerged returns the request changes of the job's commits on the base
// branch made since since, newest first, reading at most depth commits
// back (DefaultMergedDepth when zero) with a clone into memory. A commit
// counts as the job's when the job is its author or a co-author (a
// squash merge on a forge may credit the person who merged): trailers in
// anyone else's commits are not the job's changes.
func ReadMerged(ctx context.Context, opts Options, since time.Time, depth int) ([]RecordedChange, error) {
	cleanURL, auth, err := authFor(opts)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if depth <= 0 {
		depth = DefaultMergedDepth
	}
	if strings.HasPrefix(cleanURL, "file:") {
		depth = 0 // the file transport does not serve shallow clones
	}
	cloneCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// On disk: a clone into memory would hold every file of every commit
	// read, inflated.
	tmp, err := os.MkdirTemp("", "recommend-job-history-")
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary clone: nothing to lose
	repo, err := cloneToDisk(cloneCtx, tmp, &git.CloneOptions{
		URL:           cleanURL,
		Auth:          auth,
		ReferenceName: plumbing.NewBranchReferenceName(opts.BaseBranch),
		SingleBranch:  true,
		Depth:         depth,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		return nil, redact(fmt.Errorf("reading the history of %s branch %s: %w", cleanURL, opts.BaseBranch, err), opts)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	commits, err := repo.Log(&git.LogOptions{From: head.Hash(), Since: &since})
	if err != nil {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	web := webURL(cleanURL)
	var out []RecordedChange
	n := 0
	err = commits.ForEach(func(c *object.Commit) error {
		if n++; n > max(depth, DefaultMergedDepth) {
			return storer.ErrStop
		}
		if !byJob(c, opts.AuthorEmail) {
			return nil
		}
		for _, rc := range ParseChanges(c.Message) {
			rc.Commit, rc.Time = c.Hash.String(), c.Committer.When
			if web != "" {
				rc.URL = web + "/commit/" + rc.Commit
			}
			out = append(out, rc)
		}
		return nil
	})
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("reading the history of branch %s: %w", opts.BaseBranch, err)
	}
	return out, nil
}

// byJob reports whether the job, whose author email is email, wrote c or
// is credited in it.
func byJob(c *object.Commit, email string) bool {
	if email == "" {
		return false
	}
	if strings.EqualFold(c.Author.Email, email) {
		return true
	}
	for line := range strings.Lines(c.Message) {
		line = strings.TrimSpace(line)
		if len(line) > len("co-authored-by:") && strings.EqualFold(line[:len("co-authored-by:")], "co-authored-by:") &&
			strings.HasSuffix(strings.ToLower(line), "<"+strings.ToLower(email)+">") {
			return true
		}
	}
	return false
}

// webURL is the web address of the repository at cleanURL, for links to
// its commits: the https URL without .git, or the host and path of an ssh
// URL; "" for a local repository.
func webURL(cleanURL string) string {
	if isSCPLike(cleanURL) {
		host, path, _ := strings.Cut(cleanURL[strings.Index(cleanURL, "@")+1:], ":")
		return "https://" + host + "/" + strings.TrimSuffix(strings.TrimPrefix(path, "/"), ".git")
	}
	u, err := url.Parse(cleanURL)
	if err != nil || u.Host == "" {
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
