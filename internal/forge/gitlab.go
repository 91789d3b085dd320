package forge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLab opens merge requests through GitLab's REST API.
type gitLab struct {
	client  *gitlab.Client
	project string
}

func newGitLab(opts Options, project string) (*gitLab, error) {
	// The limiter honours GitLab's 429s; the client's own retries would
	// wait past the run's deadline.
	copts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(&http.Client{Transport: newLimiter(nil)}), gitlab.WithoutRetries()}
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
		if mr.SourceBranch == head && mr.TargetBranch == base && ownSource(mr) {
			return convertGitLab(mr), nil
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
			name = strings.TrimPrefix(name, "@")
			if strings.Contains(name, "/") {
				errs = append(errs, fmt.Errorf("gitlab: reviewer %s: a group, which GitLab does not take as a reviewer", name))
				continue
			}
			id, err := g.userID(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("gitlab: reviewer %s: %w", name, err))
			} else {
				ids = append(ids, id)
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
	return convertGitLab(&mr.BasicMergeRequest), errors.Join(errs...)
}

func (g *gitLab) Update(ctx context.Context, number int, title, body string) (*PullRequest, error) {
	mr, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, int64(number), &gitlab.UpdateMergeRequestOptions{
		Title: &title, Description: &body,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return convertGitLab(&mr.BasicMergeRequest), nil
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

// userID looks up the id of the user name; GitLab takes reviewers by id.
func (g *gitLab) userID(ctx context.Context, name string) (int64, error) {
	users, _, err := g.client.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(name)}, gitlab.WithContext(ctx))
	switch {
	case err != nil:
		return 0, fmt.Errorf("looking up the user: %w", err)
	case len(users) == 0:
		return 0, errors.New("no such user")
	default:
		return users[0].ID, nil
	}
}

func convertGitLab(mr *gitlab.BasicMergeRequest) *PullRequest {
	pr := &PullRequest{Number: int(mr.IID), URL: mr.WebURL, Title: mr.Title, Body: mr.Description, Head: mr.SourceBranch,
		HeadCommit: mr.SHA, Merged: mr.State == "merged" || mr.MergedAt != nil, ClosedAt: timeOf(mr.ClosedAt)}
	if mr.Author != nil {
		pr.Author = mr.Author.Username
	}
	if pr.Merged {
		// A merge commit when there is one; else the squash commit; else
		// a fast-forward put the head itself on the target branch.
		pr.MergeCommit = cmp.Or(mr.MergeCommitSHA, mr.SquashCommitSHA, mr.SHA)
	}
	if pr.Merged && pr.ClosedAt.IsZero() {
		// GitLab sets closed_at only on merge requests closed unmerged.
		pr.ClosedAt = timeOf(mr.MergedAt)
	}
	return pr
}

// ownSource reports whether mr merges from a branch of the project itself,
// not of a fork.
func ownSource(mr *gitlab.BasicMergeRequest) bool { return mr.SourceProjectID == mr.TargetProjectID }

func (g *gitLab) ListOpen(ctx context.Context, base, headPrefix string) ([]PullRequest, error) {
	opts := &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), TargetBranch: &base, ListOptions: gitlab.ListOptions{PerPage: 100},
	}
	var out []PullRequest
	for {
		mrs, resp, err := g.client.MergeRequests.ListProjectMergeRequests(g.project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("gitlab: %w", err)
		}
		for _, mr := range mrs {
			if mr.TargetBranch == base && strings.HasPrefix(mr.SourceBranch, headPrefix) && ownSource(mr) {
				out = append(out, *convertGitLab(mr))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitLab) LastClosed(ctx context.Context, head, base, author string) (*PullRequest, error) {
	// GitLab's closed merge requests are the unmerged ones; merged ones
	// are listed apart. The last closed counts only when none was merged
	// after it.
	closed, err := g.lastOf(ctx, "closed", head, base, author)
	if err != nil || closed == nil {
		return nil, err
	}
	merged, err := g.lastOf(ctx, "merged", head, base, author)
	if err != nil {
		return nil, err
	}
	if merged != nil && merged.ClosedAt.After(closed.ClosedAt) {
		return nil, nil
	}
	return closed, nil
}

// lastOf returns the merge request from head into base in state closed
// last (merged, for merged), nil when there is none.
func (g *gitLab) lastOf(ctx context.Context, state, head, base, author string) (*PullRequest, error) {
	opts := &gitlab.ListProjectMergeRequestsOptions{
		State: &state, SourceBranch: &head, TargetBranch: &base,
		OrderBy: gitlab.Ptr("updated_at"), Sort: gitlab.Ptr("desc"),
	}
	var scan lastClosedScan
	for {
		mrs, resp, err := g.client.MergeRequests.ListProjectMergeRequests(g.project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("gitlab: %w", err)
		}
		for _, mr := range mrs {
			var match *PullRequest
			if mr.SourceBranch == head && mr.TargetBranch == base && mr.State == state && ownSource(mr) &&
				mr.Author != nil && strings.EqualFold(mr.Author.Username, author) {
				match = convertGitLab(mr)
			}
			if scan.add(match, timeOf(mr.UpdatedAt)) {
				return scan.last, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return scan.last, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitLab) Get(ctx context.Context, number int) (*PullRequest, error) {
	mr, _, err := g.client.MergeRequests.GetMergeRequest(g.project, int64(number), nil, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return convertGitLab(&mr.BasicMergeRequest), nil
}

func (g *gitLab) Self(ctx context.Context) (string, error) {
	u, _, err := g.client.Users.CurrentUser(gitlab.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("gitlab: %w", err)
	}
	return u.Username, nil
}

// Closer reads closed_by of the merge request and the closer's access to
// the project, inherited from groups included: Developer and above may
// push.
func (g *gitLab) Closer(ctx context.Context, number int) (string, bool, error) {
	mr, _, err := g.client.MergeRequests.GetMergeRequest(g.project, int64(number), nil, gitlab.WithContext(ctx))
	if err != nil {
		return "", false, fmt.Errorf("gitlab: %w", err)
	}
	if mr.ClosedBy == nil || mr.ClosedBy.Username == "" {
		return "", false, nil
	}
	login := mr.ClosedBy.Username
	member, resp, err := g.client.ProjectMembers.GetInheritedProjectMember(g.project, mr.ClosedBy.ID, gitlab.WithContext(ctx))
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return login, false, nil
	}
	if err != nil {
		return login, false, fmt.Errorf("gitlab: reading the access of %s: %w", login, err)
	}
	return login, member.AccessLevel >= gitlab.DeveloperPermissions, nil
}

// reviewerIDs resolves reviewers to GitLab user IDs, once each, in the
// order given (for errors); groups and unknown users go to failed.
func (g *gitLab) reviewerIDs(ctx context.Context, reviewers []string, failed *unasked) ([]int64, map[int64]reviewer) {
	var ids []int64
	byID := map[int64]reviewer{}
	for _, r := range parseReviewers(reviewers) {
		if r.isTeam() {
			failed.add(r, errors.New("groups cannot review merge requests through the API"))
			continue
		}
		id, err := g.userID(ctx, r.user)
		if err != nil {
			failed.add(r, err)
			continue
		}
		if _, seen := byID[id]; !seen {
			byID[id] = r
			ids = append(ids, id)
		}
	}
	return ids, byID
}

func (g *gitLab) RequestReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	ids, asked := g.reviewerIDs(ctx, reviewers, &failed)
	if len(ids) == 0 {
		return failed.err("gitlab", number)
	}
	// reviewer_ids replaces the reviewers: keep those asked before.
	mr, _, err := g.client.MergeRequests.GetMergeRequest(g.project, int64(number), nil, gitlab.WithContext(ctx))
	if err != nil {
		for _, id := range ids {
			failed.add(asked[id], err)
		}
		return failed.err("gitlab", number)
	}
	all := make([]int64, 0, len(mr.Reviewers)+len(ids))
	has := map[int64]bool{}
	for _, u := range mr.Reviewers {
		if u != nil && !has[u.ID] {
			has[u.ID] = true
			all = append(all, u.ID)
		}
	}
	n := len(all)
	for _, id := range ids {
		if !has[id] {
			has[id] = true
			all = append(all, id)
		}
	}
	if len(all) == n {
		return failed.err("gitlab", number)
	}
	updated, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, int64(number), &gitlab.UpdateMergeRequestOptions{
		ReviewerIDs: &all,
	}, gitlab.WithContext(ctx))
	if err != nil {
		for _, id := range ids {
			failed.add(asked[id], err)
		}
		return failed.err("gitlab", number)
	}
	// GitLab drops the reviewers it does not take (one only, on its free
	// tier), without an error.
	now := map[int64]bool{}
	for _, u := range updated.Reviewers {
		if u != nil {
			now[u.ID] = true
		}
	}
	for _, id := range ids {
		if !now[id] {
			failed.add(asked[id], errors.New("not taken as a reviewer"))
		}
	}
	return failed.err("gitlab", number)
}

func (g *gitLab) WithdrawReviewers(ctx context.Context, number int, reviewers []string) error {
	var failed unasked
	ids, withdraw := g.reviewerIDs(ctx, reviewers, &failed)
	if len(ids) == 0 {
		return failed.withdrawErr("gitlab", number)
	}
	// reviewer_ids replaces the reviewers: keep the others.
	mr, _, err := g.client.MergeRequests.GetMergeRequest(g.project, int64(number), nil, gitlab.WithContext(ctx))
	if err != nil {
		for _, id := range ids {
			failed.add(withdraw[id], err)
		}
		return failed.withdrawErr("gitlab", number)
	}
	kept := []int64{}
	for _, u := range mr.Reviewers {
		if u != nil && !slices.Contains(kept, u.ID) {
			if _, gone := withdraw[u.ID]; !gone {
				kept = append(kept, u.ID)
			}
		}
	}
	if len(kept) == len(mr.Reviewers) {
		return failed.withdrawErr("gitlab", number)
	}
	if _, _, err := g.client.MergeRequests.UpdateMergeRequest(g.project, int64(number), &gitlab.UpdateMergeRequestOptions{
		ReviewerIDs: &kept,
	}, gitlab.WithContext(ctx)); err != nil {
		for _, id := range ids {
			failed.add(withdraw[id], err)
		}
	}
	return failed.withdrawErr("gitlab", number)
}

func (g *gitLab) FindIssues(ctx context.Context, marker string) ([]Issue, error) {
	opts := &gitlab.ListProjectIssuesOptions{
		State: gitlab.Ptr("opened"), IssueType: gitlab.Ptr("issue"),
		OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("asc"), ListOptions: gitlab.ListOptions{PerPage: 100},
	}
	var found []Issue
	for {
		issues, resp, err := g.client.Issues.ListProjectIssues(g.project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("gitlab: %w", err)
		}
		for _, is := range issues {
			if firstLineIs(is.Description, marker) {
				found = append(found, *convertGitLabIssue(is))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return found, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitLab) CreateIssue(ctx context.Context, title, body string, labels []string) (*Issue, error) {
	opts := &gitlab.CreateIssueOptions{Title: &title, Description: &body}
	if len(labels) > 0 {
		l := gitlab.LabelOptions(labels)
		opts.Labels = &l
	}
	is, _, err := g.client.Issues.CreateIssue(g.project, opts, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return convertGitLabIssue(is), nil
}

func (g *gitLab) UpdateIssue(ctx context.Context, number int, title, body string) (*Issue, error) {
	is, _, err := g.client.Issues.UpdateIssue(g.project, int64(number), &gitlab.UpdateIssueOptions{
		Title: &title, Description: &body,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return convertGitLabIssue(is), nil
}

func (g *gitLab) CloseIssue(ctx context.Context, number int) error {
	_, _, err := g.client.Issues.UpdateIssue(g.project, int64(number), &gitlab.UpdateIssueOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	return nil
}

func convertGitLabIssue(is *gitlab.Issue) *Issue {
	return &Issue{Number: int(is.IID), URL: is.WebURL, Title: is.Title, Body: is.Description}
}
