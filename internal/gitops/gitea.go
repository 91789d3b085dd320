package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge opens pull requests through Gitea's (or Forgejo's) API. It is
// not safe for concurrent use: the SDK takes the context per client.
type giteaForge struct {
	opts        ForgeOptions
	owner, repo string
	sdk         *gitea.Client
}

func newGitea(opts ForgeOptions, owner, repo string) (*giteaForge, error) {
	if opts.APIURL == "" {
		return nil, errors.New("forge gitea: the API url is required")
	}
	return &giteaForge{opts: opts, owner: owner, repo: repo}, nil
}

// client returns the client, set to ctx. The first call asks the server
// for its version, which the SDK needs to read pull requests right.
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	if g.sdk == nil {
		c, err := gitea.NewClient(strings.TrimSuffix(g.opts.APIURL, "/"), gitea.SetToken(g.opts.Token), gitea.SetContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("gitea client: %w", err)
		}
		g.sdk = c
	}
	g.sdk.SetContext(ctx)
	return g.sdk, nil
}

func (g *giteaForge) FindOpen(ctx context.Context, head, base string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	for page := 1; ; page++ {
		prs, resp, err := c.ListRepoPullRequests(g.owner, g.repo, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateOpen,
		})
		if err != nil {
			return nil, fmt.Errorf("gitea: %w", err)
		}
		for _, pr := range prs {
			if pr.Head != nil && pr.Base != nil && pr.Head.Ref == head && pr.Base.Ref == base {
				return convertGitea(pr), nil
			}
		}
		if resp == nil || resp.NextPage == 0 || len(prs) == 0 {
			return nil, nil
		}
	}
}

func (g *giteaForge) Create(ctx context.Context, n NewPullRequest) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	labelIDs, err := g.labelIDs(c, n.Labels)
	if err != nil {
		errs = append(errs, err)
	}
	pr, resp, err := c.CreatePullRequest(g.owner, g.repo, gitea.CreatePullRequestOption{
		Head: n.Head, Base: n.Base, Title: n.Title, Body: n.Body, Labels: labelIDs,
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusConflict {
			return nil, fmt.Errorf("gitea: %w", ErrAlreadyExists)
		}
		return nil, fmt.Errorf("gitea: %w", err)
	}
	if len(n.Reviewers) > 0 {
		if _, err := c.CreateReviewRequests(g.owner, g.repo, pr.Index, gitea.PullReviewRequestOptions{Reviewers: n.Reviewers}); err != nil {
			errs = append(errs, fmt.Errorf("gitea: requesting reviewers: %w", err))
		}
	}
	return convertGitea(pr), errors.Join(errs...)
}

// labelIDs maps label names to the repository's label ids; Gitea takes
// only ids.
func (g *giteaForge) labelIDs(c *gitea.Client, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	labels, _, err := c.ListRepoLabels(g.owner, g.repo, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{PageSize: 100}})
	if err != nil {
		return nil, fmt.Errorf("gitea: listing labels: %w", err)
	}
	byName := map[string]int64{}
	for _, l := range labels {
		byName[l.Name] = l.ID
	}
	var ids []int64
	var missing []string
	for _, n := range names {
		if id, ok := byName[n]; ok {
			ids = append(ids, id)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return ids, fmt.Errorf("gitea: no such labels: %s", strings.Join(missing, ", "))
	}
	return ids, nil
}

func (g *giteaForge) Update(ctx context.Context, number int, title, body string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, _, err := c.EditPullRequest(g.owner, g.repo, int64(number), gitea.EditPullRequestOption{Title: title, Body: &body})
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	return convertGitea(pr), nil
}

func (g *giteaForge) Close(ctx context.Context, number int) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	closed := gitea.StateClosed
	if _, _, err := c.EditPullRequest(g.owner, g.repo, int64(number), gitea.EditPullRequestOption{State: &closed}); err != nil {
		return fmt.Errorf("gitea: %w", err)
	}
	return nil
}

func convertGitea(pr *gitea.PullRequest) *PullRequest {
	return &PullRequest{Number: int(pr.Index), URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body}
}
