package forge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge opens pull requests through Gitea's (or Forgejo's) API. It is
// not safe for concurrent use: the SDK takes the context per client.
type giteaForge struct {
	opts        Options
	owner, repo string
	sdk         *gitea.Client
	// limiter holds the forge's rate limits across calls.
	limiter *limiter
}

func newGitea(opts Options, owner, repo string) (*giteaForge, error) {
	if opts.APIURL == "" {
		return nil, errors.New("forge gitea: the API url is required")
	}
	return &giteaForge{opts: opts, owner: owner, repo: repo, limiter: newLimiter(nil)}, nil
}

// client returns the client, set to ctx. The first call asks the server
// for its version, which the SDK needs to read pull requests right.
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	if g.sdk == nil {
		c, err := gitea.NewClient(strings.TrimSuffix(g.opts.APIURL, "/"), gitea.SetToken(g.opts.Token), gitea.SetContext(ctx),
			gitea.SetHTTPClient(&http.Client{Transport: g.limiter}))
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
			if giteaOwnHead(pr) && pr.Head.Ref == head && pr.Base.Ref == base {
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
		// As for an open one: users and teams, each named on failure.
		if err := g.RequestReviewers(ctx, int(pr.Index), n.Reviewers); err != nil {
			errs = append(errs, err)
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
	out := &PullRequest{Number: int(pr.Index), URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body,
		Merged: pr.HasMerged || pr.Merged != nil, ClosedAt: timeOf(pr.Closed)}
	if pr.Head != nil {
		out.Head, out.HeadCommit = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Poster != nil {
		out.Author = pr.Poster.UserName
	}
	if pr.HasMerged && pr.MergedCommitID != nil {
		out.MergeCommit = *pr.MergedCommitID
	}
	if out.Merged && out.ClosedAt.IsZero() {
		out.ClosedAt = timeOf(pr.Merged)
	}
	return out
}

// giteaOwnHead reports whether pr merges from a branch of the repository
// itself, not of a fork.
func giteaOwnHead(pr *gitea.PullRequest) bool {
	return pr.Head != nil && pr.Base != nil && pr.Head.RepoID == pr.Base.RepoID
}

func (g *giteaForge) ListOpen(ctx context.Context, base, headPrefix string) ([]PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	var out []PullRequest
	for page := 1; ; page++ {
		prs, resp, err := c.ListRepoPullRequests(g.owner, g.repo, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateOpen,
		})
		if err != nil {
			return nil, fmt.Errorf("gitea: %w", err)
		}
		for _, pr := range prs {
			if giteaOwnHead(pr) && pr.Base.Ref == base && strings.HasPrefix(pr.Head.Ref, headPrefix) {
				out = append(out, *convertGitea(pr))
			}
		}
		if resp == nil || resp.NextPage == 0 || len(prs) == 0 {
			return out, nil
		}
	}
}

func (g *giteaForge) LastClosed(ctx context.Context, head, base, author string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	// Gitea filters closed pull requests by neither head nor base: the
	// repository's are scanned, most recently updated first, until no
	// later close can follow. Closed includes merged.
	var scan lastClosedScan
	for page := 1; ; page++ {
		prs, resp, err := c.ListRepoPullRequests(g.owner, g.repo, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateClosed, Sort: "recentupdate",
		})
		if err != nil {
			return nil, fmt.Errorf("gitea: %w", err)
		}
		for _, pr := range prs {
			var match *PullRequest
			if giteaOwnHead(pr) && pr.Head.Ref == head && pr.Base.Ref == base && pr.Poster != nil && strings.EqualFold(pr.Poster.UserName, author) {
				match = convertGitea(pr)
			}
			if scan.add(match, timeOf(pr.Updated)) {
				return scan.unmerged(), nil
			}
		}
		if resp == nil || resp.NextPage == 0 || len(prs) == 0 {
			return scan.unmerged(), nil
		}
	}
}

func (g *giteaForge) Get(ctx context.Context, number int) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, _, err := c.GetPullRequest(g.owner, g.repo, int64(number))
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	return convertGitea(pr), nil
}

func (g *giteaForge) Self(ctx context.Context) (string, error) {
	c, err := g.client(ctx)
	if err != nil {
		return "", err
	}
	u, _, err := c.GetMyUserInfo()
	if err != nil {
		return "", fmt.Errorf("gitea: %w", err)
	}
	return u.UserName, nil
}

// maxTimelinePages bounds the timeline Closer reads: a thousand events,
// far more than a pull request of the job's gathers.
const maxTimelinePages = 20

// Closer reads the pull request's timeline: Gitea's pull request has no
// closed_by, but its last "close" event names who closed it.
func (g *giteaForge) Closer(ctx context.Context, number int) (string, bool, error) {
	c, err := g.client(ctx)
	if err != nil {
		return "", false, err
	}
	var login string
	for page := 1; ; page++ {
		events, resp, err := c.ListIssueTimeline(g.owner, g.repo, int64(number), gitea.ListIssueCommentOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50},
		})
		if err != nil {
			return "", false, fmt.Errorf("gitea: reading the timeline of pull request %d: %w", number, err)
		}
		for _, e := range events {
			if e.Type == "close" && e.Poster != nil {
				login = e.Poster.UserName
			}
		}
		if resp == nil || resp.NextPage == 0 || len(events) == 0 || page == maxTimelinePages {
			break
		}
	}
	if login == "" {
		return "", false, nil
	}
	perm, _, err := c.CollaboratorPermission(g.owner, g.repo, login)
	if err != nil {
		return login, false, fmt.Errorf("gitea: reading the permission of %s: %w", login, err)
	}
	if perm == nil {
		return login, false, nil
	}
	switch perm.Permission {
	case "owner", "admin", "write":
		return login, true, nil
	}
	return login, false, nil
}

func (g *giteaForge) RequestReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	var ask []reviewer
	teams := false
	for _, r := range parseReviewers(reviewers) {
		if r.isTeam() && !strings.EqualFold(r.org, g.owner) {
			// Gitea takes team names of the repository's organization.
			failed.add(r, fmt.Errorf("a team of another organization than %s", g.owner))
			continue
		}
		teams = teams || r.isTeam()
		ask = append(ask, r)
	}
	if len(ask) == 0 {
		return failed.err("gitea", number)
	}
	c, err := g.client(ctx)
	if err != nil {
		for _, r := range ask {
			failed.add(r, err)
		}
		return failed.err("gitea", number)
	}
	if teams {
		// Gitea ignores team reviewers, without an error, unless the
		// repository belongs to an organization.
		if _, resp, err := c.GetOrg(g.owner); err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				err = fmt.Errorf("%s is not an organization", g.owner)
			}
			users := ask[:0]
			for _, r := range ask {
				if r.isTeam() {
					failed.add(r, err)
				} else {
					users = append(users, r)
				}
			}
			ask = users
		}
	}
	request := func(rs []reviewer) (*gitea.Response, error) {
		var opt gitea.PullReviewRequestOptions
		for _, r := range rs {
			if r.isTeam() {
				opt.TeamReviewers = append(opt.TeamReviewers, r.slug)
			} else {
				opt.Reviewers = append(opt.Reviewers, r.user)
			}
		}
		return c.CreateReviewRequests(g.owner, g.repo, int64(number), opt)
	}
	if len(ask) > 0 {
		resp, err := request(ask)
		switch {
		case err == nil:
		case len(ask) > 1 && resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity):
			// Gitea stops at the first reviewer it cannot ask (no such
			// user, one who cannot read the repository, the author):
			// ask each alone.
			for _, r := range ask {
				if _, err := request([]reviewer{r}); err != nil {
					failed.add(r, err)
				}
			}
		default:
			for _, r := range ask {
				failed.add(r, err)
			}
		}
	}
	return failed.err("gitea", number)
}

func (g *giteaForge) WithdrawReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	var withdraw []reviewer
	for _, r := range parseReviewers(reviewers) {
		if r.isTeam() && !strings.EqualFold(r.org, g.owner) {
			failed.add(r, fmt.Errorf("a team of another organization than %s", g.owner))
			continue
		}
		withdraw = append(withdraw, r)
	}
	if len(withdraw) == 0 {
		return failed.withdrawErr("gitea", number)
	}
	c, err := g.client(ctx)
	if err != nil {
		for _, r := range withdraw {
			failed.add(r, err)
		}
		return failed.withdrawErr("gitea", number)
	}
	// One at a time: Gitea stops at the first it cannot take back.
	for _, r := range withdraw {
		var opt gitea.PullReviewRequestOptions
		if r.isTeam() {
			opt.TeamReviewers = []string{r.slug}
		} else {
			opt.Reviewers = []string{r.user}
		}
		if _, err := c.DeleteReviewRequests(g.owner, g.repo, int64(number), opt); err != nil {
			failed.add(r, err)
		}
	}
	return failed.withdrawErr("gitea", number)
}

func (g *giteaForge) FindIssues(ctx context.Context, marker string) ([]Issue, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	// Gitea lists issues newest first, with no other order: all pages are
	// read, and the matches sorted.
	var found []Issue
	for page := 1; ; page++ {
		issues, resp, err := c.ListRepoIssues(g.owner, g.repo, gitea.ListIssueOption{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateOpen, Type: gitea.IssueTypeIssue,
		})
		if err != nil {
			return nil, fmt.Errorf("gitea: %w", err)
		}
		for _, is := range issues {
			if is.PullRequest == nil && firstLineIs(is.Body, marker) {
				found = append(found, *convertGiteaIssue(is))
			}
		}
		if resp == nil || resp.NextPage == 0 || len(issues) == 0 {
			break
		}
	}
	slices.SortFunc(found, func(a, b Issue) int { return cmp.Compare(a.Number, b.Number) })
	return found, nil
}

func (g *giteaForge) CreateIssue(ctx context.Context, title, body string, labels []string) (*Issue, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	labelIDs, labelErr := g.labelIDs(c, labels)
	is, _, err := c.CreateIssue(g.owner, g.repo, gitea.CreateIssueOption{Title: title, Body: body, Labels: labelIDs})
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	return convertGiteaIssue(is), labelErr
}

func (g *giteaForge) UpdateIssue(ctx context.Context, number int, title, body string) (*Issue, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	is, _, err := c.EditIssue(g.owner, g.repo, int64(number), gitea.EditIssueOption{Title: title, Body: &body})
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	return convertGiteaIssue(is), nil
}

func (g *giteaForge) CloseIssue(ctx context.Context, number int) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	closed := gitea.StateClosed
	if _, _, err := c.EditIssue(g.owner, g.repo, int64(number), gitea.EditIssueOption{State: &closed}); err != nil {
		return fmt.Errorf("gitea: %w", err)
	}
	return nil
}

func convertGiteaIssue(is *gitea.Issue) *Issue {
	return &Issue{Number: int(is.Index), URL: is.HTMLURL, Title: is.Title, Body: is.Body}
}
