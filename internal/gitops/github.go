package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v89/github"
)

// gitHub opens pull requests through GitHub's REST API (or GitHub
// Enterprise Server's, with ForgeOptions.APIURL).
type gitHub struct {
	client      *github.Client
	owner, repo string
}

func newGitHub(opts ForgeOptions, owner, repo string) (*gitHub, error) {
	fopts := []github.ClientOptionsFunc{github.WithAuthToken(opts.Token)}
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
		if _, _, err := g.client.PullRequests.RequestReviewers(ctx, g.owner, g.repo, pr.GetNumber(), github.ReviewersRequest{Reviewers: n.Reviewers}); err != nil {
			errs = append(errs, fmt.Errorf("github: requesting reviewers: %w", err))
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
	return &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody()}
}
