package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLab opens merge requests through GitLab's REST API.
type gitLab struct {
	client  *gitlab.Client
	project string
}

func newGitLab(opts ForgeOptions, project string) (*gitLab, error) {
	var copts []gitlab.ClientOptionFunc
	if opts.APIURL != "" {
		copts = append(copts, gitlab.WithBaseURL(opts.APIURL))
	}
	c, err := gitlab.NewClient(opts.Token, copts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab client: %w", err)
	}
	return &gitLab{client: c, project: project}, nil
}

func (g *gitLab) FindOpen(ctx context.Context, head, base string) (*PullRequest, error) {
	mrs, _, err := g.client.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), SourceBranch: &head, TargetBranch: &base,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	for _, mr := range mrs {
		if mr.SourceBranch == head && mr.TargetBranch == base {
			return &PullRequest{Number: int(mr.IID), URL: mr.WebURL, Title: mr.Title, Body: mr.Description}, nil
		}
	}
	return nil, nil
}

func (g *gitLab) Create(ctx context.Context, n NewPullRequest) (*PullRequest, error) {
	opts := &gitlab.CreateMergeRequestOptions{
		Title: &n.Title, Description: &n.Body, SourceBranch: &n.Head, TargetBranch: &n.Base,
	}
	if len(n.Labels) > 0 {
		labels := gitlab.LabelOptions(n.Labels)
		opts.Labels = &labels
	}
	// Reviewers are user ids on GitLab; a name that finds no user is
	// reported after the merge request is opened.
	var errs []error
	if len(n.Reviewers) > 0 {
		var ids []int64
		for _, name := range n.Reviewers {
			users, _, err := g.client.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(name)}, gitlab.WithContext(ctx))
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("gitlab: looking up reviewer %s: %w", name, err))
			case len(users) == 0:
				errs = append(errs, fmt.Errorf("gitlab: reviewer %s: no such user", name))
			default:
				ids = append(ids, users[0].ID)
			}
		}
		if len(ids) > 0 {
			opts.ReviewerIDs = &ids
		}
	}
	mr, _, err := g.client.MergeRequests.CreateMergeRequest(g.project, opts, gitlab.WithContext(ctx))
	if err != nil {
		var er *gitlab.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusConflict {
			return nil, fmt.Errorf("gitlab: %w", ErrAlreadyExists)
		}
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return &PullRequest{Number: int(mr.IID), URL: mr.WebURL, Title: mr.Title, Body: mr.Description}, errors.Join(errs...)
}

func (g *gitLab) Update(ctx context.Context, number int, title, body string) (*PullRequest, error) {
	mr, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, int64(number), &gitlab.UpdateMergeRequestOptions{
		Title: &title, Description: &body,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return &PullRequest{Number: int(mr.IID), URL: mr.WebURL, Title: mr.Title, Body: mr.Description}, nil
}

func (g *gitLab) Close(ctx context.Context, number int) error {
	_, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, int64(number), &gitlab.UpdateMergeRequestOptions{
		StateEvent: gitlab.Ptr("close"),
	}, gitlab.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	return nil
}
