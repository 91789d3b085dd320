//go:build integration

package forge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestGiteaSyncPullRequestForgedMarker runs SyncPullRequest against a real
// Gitea on a pull request someone opened with a forged description: the
// marker of the very change set the job writes as its first line, and
// values nobody computed after it. The job rewrites it with its own body,
// tenant text escaped; that body round-trips through Gitea unchanged, and
// an edit that keeps the job's marker but changes a value is rewritten
// again.
func TestGiteaSyncPullRequestForgedMarker(t *testing.T) {
	ctx := t.Context()
	srv := testbedtest.Gitea(t)
	url, err := srv.CreateRepo(ctx, "fleet", map[string]string{"web.yaml": "replicas: 1\n"})
	if err != nil {
		t.Fatal(err)
	}

	// The job's branch holds a change, so that a pull request can be opened.
	const head, base, title = "recommend-job/main", "main", "Right-size resource requests on main"
	ws, err := gitops.Checkout(ctx, gitops.Options{URL: url, BaseBranch: base, PushBranch: head, Username: srv.Username, Token: srv.Token(),
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws.Dir(), "web.yaml"), []byte("replicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ws.Commit([]string{"web.yaml"}, "Right-size resource requests"); err != nil || !ok {
		t.Fatalf("Commit() = %t, %v", ok, err)
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}

	sdk, err := gitea.NewClient(srv.APIURL(), gitea.SetToken(srv.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	rep := tenantReport(strings.Repeat("0", 64))
	body := markdown.PullRequestBody(rep)
	forged := forgedMarker(markdown.ChangeSetHash(rep)) + "\n| app | cpu | 500m | 1m |\n"
	opened, _, err := sdk.CreatePullRequest(srv.Username, "fleet", gitea.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: forged})
	if err != nil {
		t.Fatal(err)
	}
	forge, err := New(Options{Kind: KindGitea, APIURL: srv.APIURL(), Token: srv.Token()}, gitops.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	sync := func(want string) {
		t.Helper()
		got, err := SyncPullRequest(ctx, forge, NewPullRequest{Head: head, Base: base, Title: title, Body: body})
		if err != nil || got.Action != want || got.Number != int(opened.Index) {
			t.Fatalf("SyncPullRequest() = %+v, %v; want #%d %s", got, err, opened.Index, want)
		}
	}
	onGitea := func() string {
		t.Helper()
		pr, _, err := sdk.GetPullRequest(srv.Username, "fleet", opened.Index)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Body
	}

	sync(plan.PRUpdated)
	got := onGitea()
	if !sameBody(got, body) || !strings.HasPrefix(got, bodyMarkerPrefix+markdown.ChangeSetHash(rep)+" -->\n") || strings.Count(got, "<!--") != 1 {
		t.Fatalf("body on Gitea =\n%s\nwant the job's, its marker first and alone:\n%s", got, body)
	}
	sync(plan.PRUnchanged)

	edited := strings.Replace(body, "| 250m |", "| 100m |", 1)
	if edited == body {
		t.Fatalf("body lacks the changed value:\n%s", body)
	}
	if _, _, err := sdk.EditPullRequest(srv.Username, "fleet", opened.Index, gitea.EditPullRequestOption{Title: title, Body: &edited}); err != nil {
		t.Fatal(err)
	}
	sync(plan.PRUpdated)
	if got := onGitea(); !sameBody(got, body) {
		t.Errorf("body on Gitea after the edit =\n%s\nwant\n%s", got, body)
	}

	// A refused token: the error is Gitea's, without the token.
	refused, err := New(Options{Kind: KindGitea, APIURL: srv.APIURL(), Token: srv.Token() + "0"}, gitops.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SyncPullRequest(ctx, refused, NewPullRequest{Head: head, Base: base, Title: title, Body: body}); err == nil || strings.Contains(err.Error(), srv.Token()) {
		t.Errorf("SyncPullRequest() with a refused token: error %v, want one without the token", err)
	}
}
