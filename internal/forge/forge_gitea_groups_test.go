//go:build integration

package forge

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// giteaBed is a repository fleet on a real Gitea, with the job's client
// and the SDK's for what the job does not do itself.
type giteaBed struct {
	t     *testing.T
	owner string
	sdk   *gitea.Client
	forge Forge
	srv   *testbed.Gitea
}

func newGiteaBed(t *testing.T) *giteaBed {
	t.Helper()
	ctx := t.Context()
	srv := testbedtest.Gitea(t)
	url, err := srv.CreateRepo(ctx, "fleet", map[string]string{"web.yaml": "replicas: 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := gitea.NewClient(srv.APIURL(), gitea.SetToken(srv.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	forge, err := New(Options{Kind: KindGitea, APIURL: srv.APIURL(), Token: srv.Token()}, gitops.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return &giteaBed{t: t, owner: srv.Username, sdk: sdk, forge: forge, srv: srv}
}

// branch makes branch off main with a commit of its own.
func (b *giteaBed) branch(name string) {
	b.t.Helper()
	file := strings.ReplaceAll(name, "/", "-") + ".yaml"
	_, _, err := b.sdk.CreateFile(b.owner, "fleet", file, gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "change on " + name, BranchName: "main", NewBranchName: name},
		Content:     base64.StdEncoding.EncodeToString([]byte("replicas: 2\n")),
	})
	if err != nil {
		b.t.Fatalf("create branch %s: %v", name, err)
	}
}

// open opens a pull request from head into main through the job's client.
func (b *giteaBed) open(head, body string) *PullRequest {
	b.t.Helper()
	pr, err := b.forge.Create(b.t.Context(), NewPullRequest{Head: head, Base: "main", Title: "Right-size " + head, Body: body})
	if err != nil {
		b.t.Fatalf("Create(%s) error = %v", head, err)
	}
	if pr.Head != head || pr.Merged || !pr.ClosedAt.IsZero() {
		b.t.Fatalf("Create(%s) = %+v, want an open pull request with its head", head, pr)
	}
	return pr
}

// merge merges pull request number with a merge commit, waiting while
// Gitea still checks whether it can.
func (b *giteaBed) merge(number int) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, resp, err := b.sdk.MergePullRequest(b.owner, "fleet", int64(number), gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) || resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
			b.t.Fatalf("merge #%d: %t, %v", number, ok, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (b *giteaBed) reviewers(number int) []string {
	b.t.Helper()
	pr, _, err := b.sdk.GetPullRequest(b.owner, "fleet", int64(number))
	if err != nil {
		b.t.Fatal(err)
	}
	var names []string
	for _, u := range pr.RequestedReviewers {
		names = append(names, u.UserName)
	}
	slices.Sort(names)
	return names
}

func (b *giteaBed) user(name string) {
	b.t.Helper()
	_, _, err := b.sdk.AdminCreateUser(gitea.CreateUserOption{Username: name, Email: name + "@example.com",
		Password: "pw-" + strings.Repeat(name, 2), MustChangePassword: gitea.OptionalBool(false)})
	if err != nil {
		b.t.Fatalf("create user %s: %v", name, err)
	}
}

// TestGiteaPullRequestGroups lists the open pull requests of the job's
// group branches, finds the last closed one of a branch (nil when the last
// was merged) and asks reviewers, on a real Gitea.
func TestGiteaPullRequestGroups(t *testing.T) {
	ctx := t.Context()
	b := newGiteaBed(t)
	const prefix = "recommend-job/main-"
	shop, blog, pay := prefix+"shop-1a2b", prefix+"blog-3c4d", prefix+"pay-5e6f"
	for _, name := range []string{shop, blog, pay, "feature/other"} {
		b.branch(name)
	}

	shopPR := b.open(shop, "shop\n")
	blogPR := b.open(blog, "blog\r\n| a | b |\n")
	b.open("feature/other", "other")

	got, err := b.forge.ListOpen(ctx, "main", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]PullRequest{*shopPR, *blogPR}, got, cmp.Transformer("byNumber", func(prs []PullRequest) []PullRequest {
		out := slices.Clone(prs)
		slices.SortFunc(out, func(a, b PullRequest) int { return a.Number - b.Number })
		return out
	})); diff != "" {
		t.Errorf("ListOpen(%s) (-want +got):\n%s", prefix, diff)
	}
	if found, err := b.forge.FindOpen(ctx, blog, "main"); err != nil || found == nil || found.Number != blogPR.Number || found.Head != blog {
		t.Errorf("FindOpen(%s) = %+v, %v; want #%d with its head", blog, found, err, blogPR.Number)
	}

	// Closed without a merge: LastClosed returns it.
	if last, err := b.forge.LastClosed(ctx, shop, "main", b.owner); last != nil || err != nil {
		t.Errorf("LastClosed(%s) while it is open = %+v, %v; want nil", shop, last, err)
	}
	before := time.Now().Add(-time.Minute)
	if err := b.forge.Close(ctx, shopPR.Number); err != nil {
		t.Fatal(err)
	}
	last, err := b.forge.LastClosed(ctx, shop, "main", b.owner)
	if err != nil || last == nil {
		t.Fatalf("LastClosed(%s) = %+v, %v; want #%d", shop, last, err, shopPR.Number)
	}
	if last.Number != shopPR.Number || last.Head != shop || last.Merged || last.ClosedAt.Before(before) || last.ClosedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("LastClosed(%s) = %+v, want #%d closed unmerged just now", shop, last, shopPR.Number)
	}
	if got, err := b.forge.ListOpen(ctx, "main", prefix); err != nil || len(got) != 1 || got[0].Number != blogPR.Number {
		t.Errorf("ListOpen() after the close = %+v, %v; want only #%d", got, err, blogPR.Number)
	}

	// Closed unmerged, then another from the same branch merged: the last
	// one was merged, so nil.
	payClosed := b.open(pay, "pay")
	if err := b.forge.Close(ctx, payClosed.Number); err != nil {
		t.Fatal(err)
	}
	if last, err := b.forge.LastClosed(ctx, pay, "main", b.owner); err != nil || last == nil || last.Number != payClosed.Number {
		t.Fatalf("LastClosed(%s) = %+v, %v; want #%d", pay, last, err, payClosed.Number)
	}
	payMerged := b.open(pay, "pay again")
	b.merge(payMerged.Number)
	if last, err := b.forge.LastClosed(ctx, pay, "main", b.owner); last != nil || err != nil {
		t.Errorf("LastClosed(%s) after a merge = %+v, %v; want nil", pay, last, err)
	}

	// Opened and closed again: the newer close counts.
	shopAgain := b.open(shop, "shop again")
	if err := b.forge.Close(ctx, shopAgain.Number); err != nil {
		t.Fatal(err)
	}
	if last, err := b.forge.LastClosed(ctx, shop, "main", b.owner); err != nil || last == nil || last.Number != shopAgain.Number || last.Body != "shop again" {
		t.Errorf("LastClosed(%s) = %+v, %v; want #%d, the newer", shop, last, err, shopAgain.Number)
	}

	// Reviewers: a second user, asked twice, stays asked; one who does not
	// exist and a team of an owner that is no organization are named,
	// and the others are asked all the same.
	b.user("reviewer")
	b.user("second")
	if err := b.forge.RequestReviewers(ctx, blogPR.Number, []string{"@reviewer"}); err != nil {
		t.Fatalf("RequestReviewers() error = %v", err)
	}
	if got := b.reviewers(blogPR.Number); !slices.Equal(got, []string{"reviewer"}) {
		t.Errorf("reviewers = %v, want [reviewer]", got)
	}
	if err := b.forge.RequestReviewers(ctx, blogPR.Number, []string{"reviewer"}); err != nil {
		t.Errorf("RequestReviewers() again error = %v", err)
	}
	err = b.forge.RequestReviewers(ctx, blogPR.Number, []string{"nobody-such", "second", "@" + b.owner + "/platform"})
	if err == nil || !strings.Contains(err.Error(), "nobody-such") || !strings.Contains(err.Error(), "@"+b.owner+"/platform") ||
		!strings.Contains(err.Error(), "not an organization") {
		t.Errorf("RequestReviewers() error = %v, want one naming nobody-such and the team", err)
	} else if named, _, _ := strings.Cut(err.Error(), " to review"); strings.Contains(named, "second") {
		t.Errorf("RequestReviewers() error = %v names second, who could be asked", err)
	}
	if got := b.reviewers(blogPR.Number); !slices.Equal(got, []string{"reviewer", "second"}) {
		t.Errorf("reviewers = %v, want [reviewer second]", got)
	}
}

// TestGiteaIssues finds, creates and updates the issue that starts with a
// marker on a real Gitea; bodies come back as they were sent, and a closed
// issue, a pull request or an issue with the marker further down is not
// found.
func TestGiteaIssues(t *testing.T) {
	ctx := t.Context()
	b := newGiteaBed(t)
	const marker = "<!-- recommend-job: dashboard `recommend-job` -->"
	body := marker + "\nUpdated by every run.\n\n| group | pull request |\n| --- | --- |\n| namespace/shop | #1 |\n"

	if got, err := b.forge.FindIssues(ctx, marker); got != nil || err != nil {
		t.Fatalf("FindIssues() on a repository without issues = %+v, %v; want none", got, err)
	}
	b.branch("recommend-job/main")
	b.open("recommend-job/main", body)
	if _, _, err := b.sdk.CreateIssue(b.owner, "fleet", gitea.CreateIssueOption{Title: "Decoy", Body: "see below\n" + marker}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.forge.FindIssues(ctx, marker); got != nil || err != nil {
		t.Fatalf("FindIssues() with the marker only in a pull request and further down = %+v, %v; want none", got, err)
	}

	if _, _, err := b.sdk.CreateLabel(b.owner, "fleet", gitea.CreateLabelOption{Name: "resources", Color: "#00aabb"}); err != nil {
		t.Fatal(err)
	}
	created, err := b.forge.CreateIssue(ctx, "Dashboard", body, []string{"resources"})
	if err != nil || created == nil || created.Body != body || created.Title != "Dashboard" || created.URL == "" {
		t.Fatalf("CreateIssue() = %+v, %v; want the issue with its body", created, err)
	}
	onGitea, _, err := b.sdk.GetIssue(b.owner, "fleet", int64(created.Number))
	if err != nil {
		t.Fatal(err)
	}
	if len(onGitea.Labels) != 1 || onGitea.Labels[0].Name != "resources" || onGitea.Body != body {
		t.Errorf("issue on Gitea: labels %v, body %q; want resources and the body sent", onGitea.Labels, onGitea.Body)
	}

	found, err := b.forge.FindIssues(ctx, marker)
	if err != nil || len(found) != 1 || found[0] != *created {
		t.Fatalf("FindIssues() = %+v, %v; want %+v", found, err, created)
	}

	// A label that does not exist: the issue is opened, the label named.
	other, err := b.forge.CreateIssue(ctx, "Other", "other", []string{"resources", "missing"})
	if other == nil || err == nil || !strings.Contains(err.Error(), "missing") || strings.Contains(err.Error(), "resources") {
		t.Errorf("CreateIssue() with a missing label = %+v, %v; want the issue and an error naming only the missing label", other, err)
	}

	updatedBody := strings.Replace(body, "#1", "#2", 1) + "\r\ntrailing  \n"
	updated, err := b.forge.UpdateIssue(ctx, created.Number, "Dashboard 2", updatedBody)
	if err != nil || updated.Number != created.Number || updated.Title != "Dashboard 2" || updated.Body != updatedBody {
		t.Fatalf("UpdateIssue() = %+v, %v; want #%d with the new title and body", updated, err, created.Number)
	}
	// A second issue with the marker comes after the first.
	second, err := b.forge.CreateIssue(ctx, "Dashboard copy", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := b.forge.FindIssues(ctx, marker); err != nil || len(found) != 2 || found[0] != *updated || found[1] != *second {
		t.Errorf("FindIssues() after the update and a copy = %+v, %v; want %+v then %+v", found, err, updated, second)
	}

	for _, n := range []int{created.Number, second.Number} {
		if err := b.forge.CloseIssue(ctx, n); err != nil {
			t.Fatalf("CloseIssue(%d): %v", n, err)
		}
		if is, _, err := b.sdk.GetIssue(b.owner, "fleet", int64(n)); err != nil || is.State != gitea.StateClosed {
			t.Errorf("issue %d after CloseIssue: %+v, %v; want it closed", n, is, err)
		}
	}
	if got, err := b.forge.FindIssues(ctx, marker); got != nil || err != nil {
		t.Errorf("FindIssues() after the close = %+v, %v; want none", got, err)
	}
}

// as is a client of a new user with permission on the repository.
func (b *giteaBed) as(name, permission string) *gitea.Client {
	b.t.Helper()
	token, err := b.srv.AddCollaborator(b.t.Context(), "fleet", name, permission)
	if err != nil {
		b.t.Fatal(err)
	}
	c, err := gitea.NewClient(b.srv.APIURL(), gitea.SetToken(token), gitea.SetContext(b.t.Context()))
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

// TestGiteaTellsWhoOpenedAndClosed reads, on a real Gitea, what the job
// trusts a pull request by: the token's account, who opened it, who
// closed it and whether they may write, and the head and merge commits
// of a squash merge.
func TestGiteaTellsWhoOpenedAndClosed(t *testing.T) {
	ctx := t.Context()
	b := newGiteaBed(t)
	rita, mallory, rhea := b.as("rita", "write"), b.as("mallory", "write"), b.as("rhea", "read")
	if self, err := b.forge.Self(ctx); err != nil || self != b.owner {
		t.Fatalf("Self() = %q, %v; want %q", self, err, b.owner)
	}
	const head = "recommend-job/main-shop-1a2b"
	b.branch(head)
	closeAs := func(c *gitea.Client, number int64) {
		t.Helper()
		time.Sleep(1100 * time.Millisecond) // Gitea's times are in seconds
		closed := gitea.StateClosed
		if _, _, err := c.EditPullRequest(b.owner, "fleet", number, gitea.EditPullRequestOption{State: &closed}); err != nil {
			t.Fatal(err)
		}
	}

	// The job's pull request, closed by rita, who may write.
	mine := b.open(head, "mine")
	if mine.Author != b.owner {
		t.Errorf("the job's pull request's author = %q, want %q", mine.Author, b.owner)
	}
	closeAs(rita, int64(mine.Number))
	if who, writer, err := b.forge.Closer(ctx, mine.Number); err != nil || who != "rita" || !writer {
		t.Errorf("Closer(#%d) = %q, %t, %v; want rita, a writer", mine.Number, who, writer, err)
	}

	// mallory's own pull request from the same branch, closed later:
	// the job's is still the last closed of its own.
	theirs, _, err := mallory.CreatePullRequest(b.owner, "fleet", gitea.CreatePullRequestOption{Head: head, Base: "main", Title: "copy", Body: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	closeAs(mallory, theirs.Index)
	if last, err := b.forge.LastClosed(ctx, head, "main", b.owner); err != nil || last == nil || last.Number != mine.Number {
		t.Errorf("LastClosed(%s, the job's account) = %+v, %v; want #%d, not mallory's #%d", head, last, err, mine.Number, theirs.Index)
	}
	if last, err := b.forge.LastClosed(ctx, head, "main", "mallory"); err != nil || last == nil || int64(last.Number) != theirs.Index {
		t.Errorf("LastClosed(%s, mallory) = %+v, %v; want #%d", head, last, err, theirs.Index)
	}

	// rhea may only read: a pull request of hers she closed herself is
	// closed by no writer.
	hers, _, err := rhea.CreatePullRequest(b.owner, "fleet", gitea.CreatePullRequestOption{Head: head, Base: "main", Title: "hers", Body: "hers"})
	if err != nil {
		t.Fatalf("rhea opens a pull request: %v", err)
	}
	closeAs(rhea, hers.Index)
	if who, writer, err := b.forge.Closer(ctx, int(hers.Index)); err != nil || who != "rhea" || writer {
		t.Errorf("Closer(#%d) = %q, %t, %v; want rhea, no writer", hers.Index, who, writer, err)
	}

	// A squash merge: the head is the branch's commit, the merge commit
	// the squash on main.
	branchHead, _, err := b.sdk.GetRepoBranch(b.owner, "fleet", head)
	if err != nil {
		t.Fatal(err)
	}
	again := b.open(head, "again")
	deadline := time.Now().Add(time.Minute)
	for {
		ok, resp, err := b.sdk.MergePullRequest(b.owner, "fleet", int64(again.Number), gitea.MergePullRequestOption{Style: gitea.MergeStyleSquash})
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) || resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("squash #%d: %t, %v", again.Number, ok, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	main, _, err := b.sdk.GetRepoBranch(b.owner, "fleet", "main")
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.forge.Get(ctx, again.Number)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Merged || got.HeadCommit != branchHead.Commit.ID || got.MergeCommit != main.Commit.ID || got.MergeCommit == got.HeadCommit {
		t.Errorf("Get(#%d) = %+v; want merged, head %s, merge commit %s (the squash on main)", again.Number, got, branchHead.Commit.ID, main.Commit.ID)
	}
}

// TestGiteaTitleLinksNothing opens group pull requests whose groups a
// tenant named to link and mention on a real Gitea ("team#1 @admin", and
// "#1" and "!1" set apart, which Gitea links in a title): Gitea stores
// each title as the job wrote it, so a later run finds it unchanged, and
// the pull request's page shows it without a link to #1 or a user.
func TestGiteaTitleLinksNothing(t *testing.T) {
	ctx := t.Context()
	b := newGiteaBed(t)
	for i, group := range []string{"team#1 @admin", "team #1 !1 @admin"} {
		head := fmt.Sprintf("recommend-job/main-team-%d", i)
		b.branch(head)
		title := markdown.GroupPullRequestTitle("main", ".", group)
		pr, err := b.forge.Create(ctx, NewPullRequest{Head: head, Base: "main", Title: title, Body: "body"})
		if err != nil {
			t.Fatal(err)
		}
		stored, _, err := b.sdk.GetPullRequest(b.owner, "fleet", int64(pr.Number))
		if err != nil {
			t.Fatal(err)
		}
		if pr.Title != title || stored.Title != title {
			t.Errorf("%s: Gitea holds the title %q (answered %q), want %q as written", group, stored.Title, pr.Title, title)
		}

		req, err := http.NewRequestWithContext(ctx, http.MethodGet, stored.HTMLURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, %v", stored.HTMLURL, resp.StatusCode, err)
		}
		// The title as rendered: <div id="issue-title-display"><h1>…<span class="index">#2</span>.
		_, rendered, ok := strings.Cut(string(page), `id="issue-title-display"`)
		rendered, _, ok2 := strings.Cut(rendered, `class="index"`)
		if !ok || !ok2 {
			t.Fatalf("%s: no rendered title in the page of %s", group, stored.HTMLURL)
		}
		if strings.Contains(rendered, "<a") || !strings.Contains(rendered, "#") || !strings.Contains(rendered, "@") {
			t.Errorf("%s: the rendered title links, or lost the group's text: %s", group, rendered)
		}
	}
}
