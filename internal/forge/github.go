package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v89/github"
)

// gitHub opens pull requests through GitHub's REST API (or GitHub
// Enterprise Server's, with Options.APIURL).
type gitHub struct {
	client      *github.Client
	owner, repo string
}

func newGitHub(opts Options, owner, repo string) (*gitHub, error) {
	fopts := []github.ClientOptionsFunc{github.WithAuthToken(opts.Token), github.WithTransport(newLimiter(nil))}
	if opts.APIURL != "" {
		fopts = append(fopts, github.WithEnterpriseURLs(opts.APIURL, opts.APIURL))
	}
	c, err := github.NewClient(fopts...)
	if err != nil {
		return nil, fmt.Errorf("github client: %w", err)
	}
	return &gitHub{client: c, owner: owner, repo: repo}, nil
}

func (g *gitHub) FindOpen(ctx context.Context, head, base string) (*PullRequest, error) {
	// GitHub filters by head only in the form owner:branch.
	prs, _, err := g.client.PullRequests.List(ctx, g.owner, g.repo, &github.PullRequestListOptions{
		State: "open", Head: g.owner + ":" + head, Base: base,
	})
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base {
			return g.convert(pr), nil
		}
	}
	return nil, nil
}

func (g *gitHub) Create(ctx context.Context, n NewPullRequest) (*PullRequest, error) {
	pr, _, err := g.client.PullRequests.Create(ctx, g.owner, g.repo, &github.NewPullRequest{
		Title: &n.Title, Head: &n.Head, Base: &n.Base, Body: &n.Body,
		MaintainerCanModify: github.Ptr(false),
	})
	if err != nil {
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnprocessableEntity &&
			strings.Contains(strings.ToLower(err.Error()), "already exists") {
			return nil, fmt.Errorf("github: %w", ErrAlreadyExists)
		}
		return nil, fmt.Errorf("github: %w", err)
	}
	// Labels go through the Issues API and reviewers through their own
	// call; the pull request stands without them, so a failure there is
	// reported but the pull request is returned too.
	var errs []error
	if len(n.Labels) > 0 {
		if _, _, err := g.client.Issues.AddLabelsToIssue(ctx, g.owner, g.repo, pr.GetNumber(), n.Labels); err != nil {
			errs = append(errs, fmt.Errorf("github: adding labels: %w", err))
		}
	}
	if len(n.Reviewers) > 0 {
		// As for an open one: users and teams, each named on failure.
		if err := g.RequestReviewers(ctx, pr.GetNumber(), n.Reviewers); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return g.convert(pr), errors.Join(errs...)
	}
	return g.convert(pr), nil
}

func (g *gitHub) Update(ctx context.Context, number int, title, body string) (*PullRequest, error) {
	pr, _, err := g.client.PullRequests.Edit(ctx, g.owner, g.repo, number, &github.PullRequest{Title: &title, Body: &body})
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return g.convert(pr), nil
}

func (g *gitHub) Close(ctx context.Context, number int) error {
	if _, _, err := g.client.PullRequests.Edit(ctx, g.owner, g.repo, number, &github.PullRequest{State: github.Ptr("closed")}); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}

func (g *gitHub) convert(pr *github.PullRequest) *PullRequest {
	out := &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody(),
		Head: pr.GetHead().GetRef(), Author: pr.GetUser().GetLogin(), HeadCommit: pr.GetHead().GetSHA(),
		Merged: pr.GetMerged() || pr.MergedAt != nil, ClosedAt: pr.GetClosedAt().Time}
	if out.Merged {
		out.MergeCommit = pr.GetMergeCommitSHA()
	}
	return out
}

// ownHead reports whether pr merges from a branch of the repository
// itself, not of a fork.
func (g *gitHub) ownHead(pr *github.PullRequest) bool {
	return strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), g.owner+"/"+g.repo)
}

func (g *gitHub) ListOpen(ctx context.Context, base, headPrefix string) ([]PullRequest, error) {
	opts := &github.PullRequestListOptions{State: "open", Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	var out []PullRequest
	for {
		prs, resp, err := g.client.PullRequests.List(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		for _, pr := range prs {
			if pr.GetBase().GetRef() == base && strings.HasPrefix(pr.GetHead().GetRef(), headPrefix) && g.ownHead(pr) {
				out = append(out, *g.convert(pr))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitHub) LastClosed(ctx context.Context, head, base, author string) (*PullRequest, error) {
	// Closed includes merged on GitHub; most recently updated first, so
	// that the scan stops after the first page or so.
	opts := &github.PullRequestListOptions{State: "closed", Head: g.owner + ":" + head, Base: base, Sort: "updated", Direction: "desc"}
	var scan lastClosedScan
	for {
		prs, resp, err := g.client.PullRequests.List(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		for _, pr := range prs {
			var match *PullRequest
			if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base && strings.EqualFold(pr.GetUser().GetLogin(), author) {
				match = g.convert(pr)
			}
			if scan.add(match, pr.GetUpdatedAt().Time) {
				return scan.unmerged(), nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return scan.unmerged(), nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitHub) Get(ctx context.Context, number int) (*PullRequest, error) {
	pr, _, err := g.client.PullRequests.Get(ctx, g.owner, g.repo, number)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return g.convert(pr), nil
}

func (g *gitHub) Self(ctx context.Context) (string, error) {
	u, _, err := g.client.Users.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("github: %w", err)
	}
	return u.GetLogin(), nil
}

// Closer reads closed_by from the Issues API, which the pull request
// object lacks, and the closer's permission: write, maintain and admin
// may write (maintain reads as write).
func (g *gitHub) Closer(ctx context.Context, number int) (string, bool, error) {
	is, _, err := g.client.Issues.Get(ctx, g.owner, g.repo, number)
	if err != nil {
		return "", false, fmt.Errorf("github: %w", err)
	}
	login := is.GetClosedBy().GetLogin()
	if login == "" {
		return "", false, nil
	}
	perm, _, err := g.client.Repositories.GetPermissionLevel(ctx, g.owner, g.repo, login)
	if err != nil {
		return login, false, fmt.Errorf("github: reading the permission of %s: %w", login, err)
	}
	switch perm.GetPermission() {
	case "admin", "write":
		return login, true, nil
	}
	return login, false, nil
}

func (g *gitHub) RequestReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	var ask []reviewer
	for _, r := range parseReviewers(reviewers) {
		if r.isTeam() && !strings.EqualFold(r.org, g.owner) {
			// GitHub takes team slugs of the repository's organization
			// only; another's would name a team of this one.
			failed.add(r, fmt.Errorf("a team of another organization than %s", g.owner))
			continue
		}
		ask = append(ask, r)
	}
	request := func(rs []reviewer) error {
		var req github.ReviewersRequest
		for _, r := range rs {
			if r.isTeam() {
				req.TeamReviewers = append(req.TeamReviewers, r.slug)
			} else {
				req.Reviewers = append(req.Reviewers, r.user)
			}
		}
		_, _, err := g.client.PullRequests.RequestReviewers(ctx, g.owner, g.repo, number, req)
		return err
	}
	if len(ask) > 0 {
		err := request(ask)
		var er *github.ErrorResponse
		switch {
		case err == nil:
		case len(ask) > 1 && errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnprocessableEntity:
			// GitHub refuses the whole request when one of them cannot
			// review (not a collaborator, the author): ask each alone.
			for _, r := range ask {
				if err := request([]reviewer{r}); err != nil {
					failed.add(r, err)
				}
			}
		default:
			for _, r := range ask {
				failed.add(r, err)
			}
		}
	}
	return failed.err("github", number)
}

func (g *gitHub) WithdrawReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	var req github.ReviewersRequest
	var withdraw []reviewer
	for _, r := range parseReviewers(reviewers) {
		switch {
		case r.isTeam() && !strings.EqualFold(r.org, g.owner):
			failed.add(r, fmt.Errorf("a team of another organization than %s", g.owner))
			continue
		case r.isTeam():
			req.TeamReviewers = append(req.TeamReviewers, r.slug)
		default:
			req.Reviewers = append(req.Reviewers, r.user)
		}
		withdraw = append(withdraw, r)
	}
	if len(withdraw) > 0 {
		// GitHub takes back the requests it has and ignores the others
		// (one who reviewed meanwhile).
		if _, err := g.client.PullRequests.RemoveReviewers(ctx, g.owner, g.repo, number, req); err != nil {
			for _, r := range withdraw {
				failed.add(r, err)
			}
		}
	}
	return failed.withdrawErr("github", number)
}

func (g *gitHub) FindIssues(ctx context.Context, marker string) ([]Issue, error) {
	opts := &github.IssueListByRepoOptions{State: "open", Sort: "created", Direction: "asc", ListOptions: github.ListOptions{PerPage: 100}}
	var found []Issue
	for {
		issues, resp, err := g.client.Issues.ListByRepo(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		for _, is := range issues {
			// GitHub lists pull requests among issues.
			if !is.IsPullRequest() && firstLineIs(is.GetBody(), marker) {
				found = append(found, *convertGitHubIssue(is))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return found, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

func (g *gitHub) CreateIssue(ctx context.Context, title, body string, labels []string) (*Issue, error) {
	req := &github.IssueRequest{Title: &title, Body: &body}
	if len(labels) > 0 {
		req.Labels = &labels
	}
	is, _, err := g.client.Issues.Create(ctx, g.owner, g.repo, req)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return convertGitHubIssue(is), nil
}

func (g *gitHub) UpdateIssue(ctx context.Context, number int, title, body string) (*Issue, error) {
	is, _, err := g.client.Issues.Edit(ctx, g.owner, g.repo, number, &github.IssueRequest{Title: &title, Body: &body})
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return convertGitHubIssue(is), nil
}

func (g *gitHub) CloseIssue(ctx context.Context, number int) error {
	if _, _, err := g.client.Issues.Edit(ctx, g.owner, g.repo, number, &github.IssueRequest{State: github.Ptr("closed")}); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}

func convertGitHubIssue(is *github.Issue) *Issue {
	return &Issue{Number: is.GetNumber(), URL: is.GetHTMLURL(), Title: is.GetTitle(), Body: is.GetBody()}
}

// gitHubLimited makes go-github's own rate limit errors (it refuses a
// call itself while a limit it saw lasts) ErrRateLimited too.
func gitHubLimited(err error) error {
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	if err != nil && !errors.Is(err, ErrRateLimited) && (errors.As(err, &primary) || errors.As(err, &secondary)) {
		return fmt.Errorf("%w: %w", ErrRateLimited, err)
	}
	return err
}
