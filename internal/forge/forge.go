package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/redact"
)

// Forge kinds.
const (
	KindNone   = "none"
	KindGitHub = "github"
	KindGitLab = "gitlab"
	KindGitea  = "gitea"
)

// ErrAlreadyExists is what a Forge returns from Create when an open pull
// request for the same head and base exists already.
var ErrAlreadyExists = errors.New("pull request already exists")

// Options says where and how to open the pull request.
type Options struct {
	// Kind is github, gitlab, gitea, or none (or empty) for no pull request.
	Kind string
	// APIURL is the API's base URL, e.g. https://api.github.com/,
	// https://gitlab.example.com/api/v4 or https://gitea.example.com; the
	// public service's for github and gitlab when empty.
	APIURL string
	// Token authenticates with the API.
	Token string
	// Repository is owner/name (GitLab: the project path); New takes the
	// git URL's path when it is empty.
	Repository string
	// Labels and Reviewers (user names) are set when a pull request is
	// opened.
	Labels    []string
	Reviewers []string
	// CloseWhenEmpty closes the open pull request when a run finds nothing
	// to change; it is left alone otherwise.
	CloseWhenEmpty bool
	// Timeout bounds each call of a Forge's methods, the requests it
	// sends included; DefaultTimeout when zero.
	Timeout time.Duration
}

// DefaultTimeout bounds each forge call when Options.Timeout is
// zero. A call is a few requests that a forge answers within seconds; one
// that stalls (a forge choking on a CODEOWNERS file) must not hold the run.
const DefaultTimeout = 30 * time.Second

// ErrTimeout means a forge call did not end within the forge timeout.
var ErrTimeout = errors.New("the forge did not answer within the forge timeout")

// Enabled reports whether a pull request is wanted.
func (o Options) Enabled() bool { return o.Kind != "" && o.Kind != KindNone }

// PullRequest is a pull (merge) request as a forge reports it.
type PullRequest struct {
	Number int
	URL    string
	Title  string
	Body   string
	// Head is the branch it merges from.
	Head string
	// Author is the login of the account that opened it.
	Author string
	// HeadCommit is the commit it merges; MergeCommit the commit that
	// brought it onto the base branch (a merge, a squash or, for a
	// fast-forward, the head itself), "" until it is merged. Only Get
	// fills them.
	HeadCommit, MergeCommit string
	// Merged reports whether it was merged.
	Merged bool
	// ClosedAt is when it was closed or merged; zero while it is open.
	ClosedAt time.Time
}

// Issue is an issue of the repository.
type Issue struct {
	Number int
	URL    string
	Title  string
	Body   string
}

// NewPullRequest is what Create opens.
type NewPullRequest struct {
	Head, Base  string
	Title, Body string
	Labels      []string
	Reviewers   []string
	// AllReviewers says Reviewers are every owner the pull request has
	// now: the requests the job made before of those not among them are
	// withdrawn. False when an owner could not be read (CODEOWNERS, the
	// namespaces), so that no one loses a request by a failed read.
	AllReviewers bool
}

// Forge is the little of a forge's API the job uses. Bodies go to the
// forge and come back exactly as they are; forges may store them with
// CRLF line ends (see sameBody). Only pull requests from branches of the
// repository itself count: those from forks are never found or listed.
type Forge interface {
	// FindOpen returns the open pull request from head into base, nil
	// when there is none.
	FindOpen(ctx context.Context, head, base string) (*PullRequest, error)
	// ListOpen lists the open pull requests into base whose head branch
	// starts with headPrefix, all pages of them.
	ListOpen(ctx context.Context, base, headPrefix string) ([]PullRequest, error)
	// LastClosed returns the pull request from head into base opened by
	// author closed last, if it was closed without being merged; nil when
	// none was closed or the last one was merged. Pull requests anyone
	// else opened from the branch are passed over.
	LastClosed(ctx context.Context, head, base, author string) (*PullRequest, error)
	// Get returns pull request number with its head and merge commits.
	Get(ctx context.Context, number int) (*PullRequest, error)
	// Self is the login of the account the token acts for: the job's.
	Self(ctx context.Context) (string, error)
	// Closer returns who closed pull request number, and whether that
	// account may write to the repository.
	Closer(ctx context.Context, number int) (login string, writer bool, err error)
	// Create opens a pull request. One returned with an error was opened,
	// but its labels or reviewers could not all be set.
	Create(ctx context.Context, pr NewPullRequest) (*PullRequest, error)
	Update(ctx context.Context, number int, title, body string) (*PullRequest, error)
	Close(ctx context.Context, number int) error
	// RequestReviewers asks reviewers to review pull request number:
	// users by name (alice or @alice) and teams as @org/team. Those
	// asked before stay asked. The error names the reviewers that could
	// not be asked; the others are asked all the same.
	RequestReviewers(ctx context.Context, number int, reviewers []string) error
	// WithdrawReviewers takes back the requests to review pull request
	// number from reviewers, named as RequestReviewers takes them; a
	// review they gave stays. The error names those whose request could
	// not be withdrawn; the others' are withdrawn all the same.
	WithdrawReviewers(ctx context.Context, number int, reviewers []string) error
	// FindIssues returns the open issues whose body's first line (its
	// line end and trailing white space aside) is marker, oldest first.
	FindIssues(ctx context.Context, marker string) ([]Issue, error)
	// CreateIssue opens an issue. One returned with an error was opened,
	// but its labels could not all be set.
	CreateIssue(ctx context.Context, title, body string, labels []string) (*Issue, error)
	UpdateIssue(ctx context.Context, number int, title, body string) (*Issue, error)
	CloseIssue(ctx context.Context, number int) error
}

// New returns the client for opts.Kind, for the repository of git:
// opts.Repository, else the git URL's path. It checks the settings (the
// kind, the token, owner/name) and builds the client's requests' headers
// without contacting the forge. Every call of the client's methods ends
// within opts.Timeout, failing with ErrTimeout past it. Every error out of
// it, and out of the client's methods, has the token (and any credentials
// in the API or git URL) taken out, and unwraps to nothing that holds the
// HTTP request: forges echo the request's headers in error bodies.
func New(opts Options, git gitops.Options) (Forge, error) {
	r := forgeRedactor(opts, git.URLToken())
	f, err := newForge(opts, git)
	if err != nil {
		return nil, r.Seal(err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &redactingForge{forge: f, r: r, timeout: timeout}, nil
}

// forgeRedactor knows the credentials of a forge: its token, any in the
// user part of the API URL, and gitToken, the git URL's.
func forgeRedactor(opts Options, gitToken string) *redact.Redactor {
	secrets := []string{opts.Token, gitToken}
	if u, err := url.Parse(opts.APIURL); err != nil {
		secrets = append(secrets, redact.BeforeHost(opts.APIURL))
	} else {
		secrets = append(secrets, redact.UserSecret(u))
	}
	return redact.New(secrets...)
}

// redactingForge bounds every call of forge by timeout and passes its
// errors through r.
type redactingForge struct {
	forge   Forge
	r       *redact.Redactor
	timeout time.Duration
	// self is the token's account, once asked.
	self string
}

// call runs one call of the forge within f.timeout, and seals its error.
func call[T any](ctx context.Context, f *redactingForge, do func(context.Context) (T, error)) (T, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("%w of %s", ErrTimeout, f.timeout))
	defer cancel()
	v, err := do(callCtx)
	err = gitHubLimited(err)
	// The HTTP client reports the cause itself; not every client does.
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(callCtx), ErrTimeout) && !errors.Is(err, ErrTimeout) {
		err = fmt.Errorf("%w: %w", context.Cause(callCtx), err)
	}
	return v, f.r.Seal(err)
}

// callErr is call for a method that returns only an error.
func callErr(ctx context.Context, f *redactingForge, do func(context.Context) error) error {
	_, err := call(ctx, f, func(ctx context.Context) (struct{}, error) { return struct{}{}, do(ctx) })
	return err
}

func (f *redactingForge) FindOpen(ctx context.Context, head, base string) (*PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) (*PullRequest, error) { return f.forge.FindOpen(ctx, head, base) })
}

func (f *redactingForge) Create(ctx context.Context, pr NewPullRequest) (*PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) (*PullRequest, error) { return f.forge.Create(ctx, pr) })
}

func (f *redactingForge) Update(ctx context.Context, number int, title, body string) (*PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) (*PullRequest, error) { return f.forge.Update(ctx, number, title, body) })
}

func (f *redactingForge) Close(ctx context.Context, number int) error {
	return callErr(ctx, f, func(ctx context.Context) error { return f.forge.Close(ctx, number) })
}

func (f *redactingForge) ListOpen(ctx context.Context, base, headPrefix string) ([]PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) ([]PullRequest, error) { return f.forge.ListOpen(ctx, base, headPrefix) })
}

func (f *redactingForge) LastClosed(ctx context.Context, head, base, author string) (*PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) (*PullRequest, error) { return f.forge.LastClosed(ctx, head, base, author) })
}

func (f *redactingForge) Get(ctx context.Context, number int) (*PullRequest, error) {
	return call(ctx, f, func(ctx context.Context) (*PullRequest, error) { return f.forge.Get(ctx, number) })
}

// Self asks the forge once per client: the token's account does not
// change within a run.
func (f *redactingForge) Self(ctx context.Context) (string, error) {
	if f.self != "" {
		return f.self, nil
	}
	login, err := call(ctx, f, f.forge.Self)
	if err != nil {
		return "", err
	}
	if login == "" {
		return "", errors.New("the forge names no account for the token")
	}
	f.self = login
	return login, nil
}

func (f *redactingForge) Closer(ctx context.Context, number int) (string, bool, error) {
	type closer struct {
		login  string
		writer bool
	}
	c, err := call(ctx, f, func(ctx context.Context) (closer, error) {
		login, writer, err := f.forge.Closer(ctx, number)
		return closer{login, writer}, err
	})
	return c.login, c.writer, err
}

func (f *redactingForge) RequestReviewers(ctx context.Context, number int, reviewers []string) error {
	return callErr(ctx, f, func(ctx context.Context) error { return f.forge.RequestReviewers(ctx, number, reviewers) })
}

func (f *redactingForge) WithdrawReviewers(ctx context.Context, number int, reviewers []string) error {
	return callErr(ctx, f, func(ctx context.Context) error { return f.forge.WithdrawReviewers(ctx, number, reviewers) })
}

func (f *redactingForge) FindIssues(ctx context.Context, marker string) ([]Issue, error) {
	return call(ctx, f, func(ctx context.Context) ([]Issue, error) { return f.forge.FindIssues(ctx, marker) })
}

func (f *redactingForge) CreateIssue(ctx context.Context, title, body string, labels []string) (*Issue, error) {
	return call(ctx, f, func(ctx context.Context) (*Issue, error) { return f.forge.CreateIssue(ctx, title, body, labels) })
}

func (f *redactingForge) UpdateIssue(ctx context.Context, number int, title, body string) (*Issue, error) {
	return call(ctx, f, func(ctx context.Context) (*Issue, error) { return f.forge.UpdateIssue(ctx, number, title, body) })
}

func (f *redactingForge) CloseIssue(ctx context.Context, number int) error {
	return callErr(ctx, f, func(ctx context.Context) error { return f.forge.CloseIssue(ctx, number) })
}

func newForge(opts Options, git gitops.Options) (Forge, error) {
	owner, name, err := repositoryOf(opts.Repository, git)
	if err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("forge %s: a token is required", opts.Kind)
	}
	switch opts.Kind {
	case KindGitHub:
		return newGitHub(opts, owner, name)
	case KindGitLab:
		return newGitLab(opts, owner+"/"+name)
	case KindGitea:
		return newGitea(opts, owner, name)
	default:
		return nil, fmt.Errorf("forge kind must be github, gitlab, gitea or none, got %q", opts.Kind)
	}
}

// repositoryOf splits owner/name from repo, or from the git URL's path
// when repo is empty. The owner may hold slashes (GitLab groups).
func repositoryOf(repo string, git gitops.Options) (owner, name string, err error) {
	if repo == "" {
		if repo, err = git.RepositoryPath(); err != nil {
			return "", "", errors.New("forge: cannot take the repository from the git url")
		}
	}
	repo = strings.TrimSuffix(strings.Trim(repo, "/"), ".git")
	i := strings.LastIndex(repo, "/")
	if i <= 0 || i == len(repo)-1 {
		return "", "", fmt.Errorf("forge: repository %q is not owner/name", repo)
	}
	return repo[:i], repo[i+1:], nil
}

// SyncPullRequest makes the one open pull request from head to base say
// title and body: it finds the open one first, updates it unless it says
// exactly title and body already, and opens one otherwise. The whole body
// is compared, not a marker in it: the body shows text from the cluster,
// and someone who can edit the description can copy any marker, so only
// the body the job would write proves that the description shows the
// values on the branch. A Create that races another run's ("already
// exists") finds and updates that one instead of failing. The reviewers
// of a pull request that was open already are asked again, so that they
// follow its files and ResourceRecommends; those asked before stay asked
// while they are owners, and have the job's requests withdrawn once they
// are not (pr.AllReviewers). A pull request returned with an error was opened or brought up to date,
// but its labels or reviewers could not all be set.
func SyncPullRequest(ctx context.Context, f Forge, pr NewPullRequest) (*plan.PullRequest, error) {
	body := pr.Body
	pr.Body = withReviewersLine(body, pr.Reviewers)
	open, err := f.FindOpen(ctx, pr.Head, pr.Base)
	if err != nil {
		return nil, fmt.Errorf("finding the open pull request: %w", err)
	}
	if open == nil {
		created, err := f.Create(ctx, pr)
		switch {
		case created != nil:
			// An error with a pull request is about its labels or
			// reviewers: the pull request stands.
			return &plan.PullRequest{URL: created.URL, Number: created.Number, Action: plan.PRCreated, Body: pr.Body}, err
		case !errors.Is(err, ErrAlreadyExists):
			return nil, fmt.Errorf("opening the pull request: %w", err)
		}
		if open, err = f.FindOpen(ctx, pr.Head, pr.Base); err != nil {
			return nil, fmt.Errorf("finding the open pull request: %w", err)
		}
		if open == nil {
			return nil, fmt.Errorf("opening the pull request: %w, but none is open", ErrAlreadyExists)
		}
	}
	// Without every owner, the line keeps those asked before who are no
	// owners now, as their requests stay; with every owner, those are
	// withdrawn below, and asked again should they come back.
	asked := askedReviewers(open.Body)
	var gone []string
	if pr.AllReviewers {
		gone = newReviewers(asked, pr.Reviewers)
	} else {
		pr.Body = withReviewersLine(body, append(slices.Clone(pr.Reviewers), newReviewers(asked, pr.Reviewers)...))
	}
	var synced *plan.PullRequest
	if open.Title == pr.Title && sameBody(open.Body, pr.Body) {
		synced = &plan.PullRequest{URL: open.URL, Number: open.Number, Action: plan.PRUnchanged, Body: open.Body}
	} else {
		updated, err := f.Update(ctx, open.Number, pr.Title, pr.Body)
		if err != nil {
			return nil, fmt.Errorf("updating pull request %d: %w", open.Number, err)
		}
		synced = &plan.PullRequest{URL: updated.URL, Number: updated.Number, Action: plan.PRUpdated, Body: pr.Body}
	}
	// Owners change with the files and the ResourceRecommends: those the
	// job has not asked yet are asked; no one is asked twice, not even
	// after they reviewed.
	var errs []error
	if missing := newReviewers(pr.Reviewers, asked); len(missing) > 0 {
		if err := f.RequestReviewers(ctx, synced.Number, missing); err != nil {
			errs = append(errs, fmt.Errorf("asking the reviewers of pull request %d: %w", synced.Number, err))
		}
	}
	// Those who are no owners any more are not left waited for: the job
	// takes back its own requests, in the first run that finds them gone,
	// as it asks a new owner in the first run that finds them.
	if len(gone) > 0 {
		if err := f.WithdrawReviewers(ctx, synced.Number, gone); err != nil {
			errs = append(errs, fmt.Errorf("withdrawing the review requests of pull request %d: %w", synced.Number, err))
		}
	}
	return synced, errors.Join(errs...)
}

// reviewersPrefix starts the hidden line of a body that records whom the
// job asked to review it.
const reviewersPrefix = "<!-- recommend-job: reviewers "

// maxReviewersLine bounds the line of reviewers (see
// markdown.MaxBodyLength): the names past it are not recorded, and are
// asked again on each update.
const maxReviewersLine = 1000

// withReviewersLine adds to body the hidden line naming reviewers (names
// only, so no text ends the comment early).
func withReviewersLine(body string, reviewers []string) string {
	var names []string
	n := len(reviewersPrefix) + len(" -->\n")
	for _, r := range reviewers {
		if reviewerSafe.MatchString(r) && n+len(r)+1 <= maxReviewersLine {
			names = append(names, r)
			n += len(r) + 1
		}
	}
	if len(names) == 0 {
		return body
	}
	return strings.TrimRight(body, "\n") + "\n" + reviewersPrefix + strings.Join(names, " ") + " -->\n"
}

// reviewerSafe is a user or team name, which cannot end a comment.
var reviewerSafe = regexp.MustCompile(`^@?[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// askedReviewers reads the names the job asked, from a body it wrote.
func askedReviewers(body string) []string {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), reviewersPrefix); ok {
			return strings.Fields(strings.TrimSuffix(rest, "-->"))
		}
	}
	return nil
}

// newReviewers returns the reviewers not in asked ("@alice" is "alice").
func newReviewers(reviewers, asked []string) []string {
	key := func(s string) string { return strings.ToLower(strings.TrimPrefix(s, "@")) }
	seen := map[string]bool{}
	for _, a := range asked {
		seen[key(a)] = true
	}
	var out []string
	for _, r := range reviewers {
		if !seen[key(r)] && reviewerSafe.MatchString(r) {
			seen[key(r)] = true
			out = append(out, r)
		}
	}
	return out
}

// sameBody reports whether the forge's body says what the job would write.
// Forges store descriptions edited in a browser with CRLF line ends, and
// some trim the final line end, so line ends and trailing white space do
// not count; every other byte does.
func sameBody(forge, job string) bool {
	norm := func(s string) string {
		return strings.TrimRightFunc(strings.ReplaceAll(s, "\r\n", "\n"), unicode.IsSpace)
	}
	return norm(forge) == norm(job)
}

// CloseOpenPullRequest closes the open pull request from head to base,
// if any, and returns what it did; nil when none was open. Its body is
// first replaced by closing of the body it has: the report's note of why
// the job closed it (see markdown.ClosedBody).
func CloseOpenPullRequest(ctx context.Context, f Forge, head, base string, closing func(body string) string) (*plan.PullRequest, error) {
	open, err := f.FindOpen(ctx, head, base)
	if err != nil || open == nil {
		return nil, err
	}
	if _, err := f.Update(ctx, open.Number, open.Title, closing(open.Body)); err != nil {
		return nil, fmt.Errorf("updating pull request %d before closing it: %w", open.Number, err)
	}
	if err := f.Close(ctx, open.Number); err != nil {
		return nil, fmt.Errorf("closing pull request %d: %w", open.Number, err)
	}
	return &plan.PullRequest{URL: open.URL, Number: open.Number, Action: plan.PRClosed}, nil
}

// reviewer is one entry of RequestReviewers: a user, or a team when org
// is set.
type reviewer struct {
	// name is the entry as given, for errors.
	name string
	// user is the user name, without its @.
	user string
	// org and slug name a team, @org/slug.
	org, slug string
}

// parseReviewers splits reviewers into users (alice, @alice) and teams
// (@org/team), skipping empty and repeated entries.
func parseReviewers(reviewers []string) []reviewer {
	var out []reviewer
	seen := map[string]bool{}
	for _, name := range reviewers {
		s := strings.TrimPrefix(strings.TrimSpace(name), "@")
		if s == "" || seen[strings.ToLower(s)] {
			continue
		}
		seen[strings.ToLower(s)] = true
		r := reviewer{name: name, user: s}
		if org, slug, ok := strings.Cut(s, "/"); ok {
			r = reviewer{name: name, org: org, slug: slug}
		}
		out = append(out, r)
	}
	return out
}

// isTeam reports whether r names a team.
func (r reviewer) isTeam() bool { return r.org != "" || r.slug != "" }

// unasked collects the reviewers that could not be asked, and why.
type unasked struct {
	names []string
	errs  []error
}

func (u *unasked) add(r reviewer, err error) {
	u.names = append(u.names, r.name)
	u.errs = append(u.errs, fmt.Errorf("%s: %w", r.name, err))
}

// err names the reviewers that could not be asked, nil when there are
// none.
func (u *unasked) err(forge string, number int) error {
	if len(u.names) == 0 {
		return nil
	}
	return fmt.Errorf("%s: could not ask %s to review pull request %d: %w", forge, strings.Join(u.names, ", "), number, errors.Join(u.errs...))
}

// withdrawErr names the reviewers whose requests could not be withdrawn,
// nil when there are none.
func (u *unasked) withdrawErr(forge string, number int) error {
	if len(u.names) == 0 {
		return nil
	}
	return fmt.Errorf("%s: could not withdraw the requests of %s to review pull request %d: %w", forge, strings.Join(u.names, ", "), number, errors.Join(u.errs...))
}

// lastClosedScan finds the pull request closed last in a list sorted by
// last update, newest first. Closing a pull request updates it, so once
// the updates fall before the latest close seen, no entry further down
// was closed later, and the scan can stop.
type lastClosedScan struct {
	last *PullRequest
}

// add considers pr (nil for an entry of another head or base), last
// updated at updated, and reports whether the scan can stop.
func (s *lastClosedScan) add(pr *PullRequest, updated time.Time) bool {
	if s.last != nil && !updated.IsZero() && updated.Before(s.last.ClosedAt) {
		return true
	}
	if pr != nil && !pr.ClosedAt.IsZero() && (s.last == nil || pr.ClosedAt.After(s.last.ClosedAt)) {
		s.last = pr
	}
	return false
}

// unmerged is the last pull request closed, nil when there is none or it
// was merged.
func (s *lastClosedScan) unmerged() *PullRequest {
	if s.last == nil || s.last.Merged {
		return nil
	}
	return s.last
}

// firstLineIs reports whether body's first line, its line end and
// trailing white space aside, is marker.
func firstLineIs(body, marker string) bool {
	line, _, _ := strings.Cut(body, "\n")
	return strings.TrimRightFunc(line, unicode.IsSpace) == marker
}

// timeOf is *t, the zero time for nil.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
