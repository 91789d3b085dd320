package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v89/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
)

const forgeToken = "forge-tok-31337"

// fakePR is a pull request held by a fake forge.
type fakePR struct {
	Number                  int
	Head, Base, Title, Body string
	State                   string
	Labels, Reviewers       []string
}

// fakeForge holds the pull requests of one repository, and the requests
// that changed them, for the fake GitHub and GitLab APIs below.
type fakeForge struct {
	mu  sync.Mutex
	t   *testing.T
	prs []*fakePR
	// hideNextList makes the next list answer empty, as if another run
	// opened its pull request just after this run looked.
	hideNextList bool
	writes       []string
}

func (f *fakeForge) open(head, base string) []*fakePR {
	if f.hideNextList {
		f.hideNextList = false
		return nil
	}
	var out []*fakePR
	for _, p := range f.prs {
		if p.State == "open" && p.Head == head && p.Base == base {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakeForge) find(n int) *fakePR {
	for _, p := range f.prs {
		if p.Number == n {
			return p
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// githubHandler serves the documented REST endpoints go-github calls for
// pull requests of org/fleet, under GitHub Enterprise's /api/v3 prefix.
func (f *fakeForge) githubHandler() http.Handler {
	pr := func(p *fakePR) map[string]any {
		return map[string]any{"number": p.Number, "state": p.State, "title": p.Title, "body": p.Body,
			"html_url": fmt.Sprintf("https://github.example.com/org/fleet/pull/%d", p.Number),
			"head":     map[string]any{"ref": p.Head}, "base": map[string]any{"ref": p.Base}}
	}
	numbered := regexp.MustCompile(`^/api/v3/repos/org/fleet/(pulls|issues)/(\d+)(/labels|/requested_reviewers)?$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+forgeToken {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
			return
		}
		var body map[string]any
		if r.Body != nil && r.Method != http.MethodGet {
			raw := json.RawMessage{}
			_ = json.NewDecoder(r.Body).Decode(&raw)
			_ = json.Unmarshal(raw, &body)
			if body == nil {
				body = map[string]any{"array": raw}
			}
		}
		if r.Method != http.MethodGet {
			f.writes = append(f.writes, r.Method+" "+r.URL.Path)
		}
		switch m := numbered.FindStringSubmatch(r.URL.Path); {
		case r.URL.Path == "/api/v3/repos/org/fleet/pulls" && r.Method == http.MethodGet:
			q := r.URL.Query()
			head, ok := strings.CutPrefix(q.Get("head"), "org:")
			if !ok || q.Get("state") != "open" {
				f.t.Errorf("list query = %s, want state=open and head=org:<branch>", r.URL.RawQuery)
			}
			out := []map[string]any{}
			for _, p := range f.open(head, q.Get("base")) {
				out = append(out, pr(p))
			}
			writeJSON(w, http.StatusOK, out)
		case r.URL.Path == "/api/v3/repos/org/fleet/pulls" && r.Method == http.MethodPost:
			head, base := body["head"].(string), body["base"].(string)
			if len(f.open(head, base)) > 0 || f.hasOpen(head, base) {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
					"errors": []map[string]string{{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for org:" + head + "."}}})
				return
			}
			p := &fakePR{Number: len(f.prs) + 1, Head: head, Base: base, Title: body["title"].(string), Body: body["body"].(string), State: "open"}
			f.prs = append(f.prs, p)
			writeJSON(w, http.StatusCreated, pr(p))
		case m != nil && m[1] == "pulls" && m[3] == "" && r.Method == http.MethodPatch:
			n, _ := strconv.Atoi(m[2])
			p := f.find(n)
			if t, ok := body["title"].(string); ok {
				p.Title = t
			}
			if b, ok := body["body"].(string); ok {
				p.Body = b
			}
			if s, ok := body["state"].(string); ok {
				p.State = s
			}
			writeJSON(w, http.StatusOK, pr(p))
		case m != nil && m[1] == "issues" && m[3] == "/labels" && r.Method == http.MethodPost:
			n, _ := strconv.Atoi(m[2])
			var labels []string
			_ = json.Unmarshal(body["array"].(json.RawMessage), &labels)
			f.find(n).Labels = append(f.find(n).Labels, labels...)
			writeJSON(w, http.StatusOK, []map[string]string{})
		case m != nil && m[1] == "pulls" && m[3] == "/requested_reviewers" && r.Method == http.MethodPost:
			n, _ := strconv.Atoi(m[2])
			for _, rv := range body["reviewers"].([]any) {
				f.find(n).Reviewers = append(f.find(n).Reviewers, rv.(string))
			}
			writeJSON(w, http.StatusCreated, pr(f.find(n)))
		default:
			f.t.Errorf("unexpected github request %s %s", r.Method, r.URL)
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		}
	})
}

// hasOpen ignores hideNextList: the forge itself always knows.
func (f *fakeForge) hasOpen(head, base string) bool {
	for _, p := range f.prs {
		if p.State == "open" && p.Head == head && p.Base == base {
			return true
		}
	}
	return false
}

// gitlabHandler serves the documented merge request and user endpoints of
// GitLab's REST API v4 for the project org/fleet.
func (f *fakeForge) gitlabHandler() http.Handler {
	ids := map[string]int{"alice": 7, "bob": 8}
	mr := func(p *fakePR) map[string]any {
		state := map[string]string{"open": "opened", "closed": "closed"}[p.State]
		reviewers := []map[string]any{}
		for _, name := range p.Reviewers {
			reviewers = append(reviewers, map[string]any{"id": ids[name], "username": name})
		}
		return map[string]any{"iid": p.Number, "id": 1000 + p.Number, "state": state, "title": p.Title, "description": p.Body,
			"web_url":       fmt.Sprintf("https://gitlab.example.com/org/fleet/-/merge_requests/%d", p.Number),
			"source_branch": p.Head, "target_branch": p.Base, "reviewers": reviewers}
	}
	const project = "/api/v4/projects/org%2Ffleet/merge_requests"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Private-Token") != forgeToken {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
			return
		}
		var body map[string]any
		if r.Method != http.MethodGet {
			_ = json.NewDecoder(r.Body).Decode(&body)
			f.writes = append(f.writes, r.Method+" "+r.URL.EscapedPath())
		}
		path := r.URL.EscapedPath()
		switch {
		case path == "/api/v4/users" && r.Method == http.MethodGet:
			if id, ok := ids[r.URL.Query().Get("username")]; ok {
				writeJSON(w, http.StatusOK, []map[string]any{{"id": id, "username": r.URL.Query().Get("username")}})
			} else {
				writeJSON(w, http.StatusOK, []map[string]any{})
			}
		case path == project && r.Method == http.MethodGet:
			q := r.URL.Query()
			if q.Get("state") != "opened" {
				f.t.Errorf("list query = %s, want state=opened", r.URL.RawQuery)
			}
			out := []map[string]any{}
			for _, p := range f.open(q.Get("source_branch"), q.Get("target_branch")) {
				out = append(out, mr(p))
			}
			writeJSON(w, http.StatusOK, out)
		case path == project && r.Method == http.MethodPost:
			head, base := body["source_branch"].(string), body["target_branch"].(string)
			if f.hasOpen(head, base) {
				writeJSON(w, http.StatusConflict, map[string]any{"message": []string{"Another open merge request already exists for this source branch: !1"}})
				return
			}
			p := &fakePR{Number: len(f.prs) + 1, Head: head, Base: base, Title: body["title"].(string), Body: body["description"].(string), State: "open"}
			if l, ok := body["labels"].(string); ok && l != "" {
				p.Labels = strings.Split(l, ",")
			}
			if ids, ok := body["reviewer_ids"].([]any); ok {
				for _, id := range ids {
					p.Reviewers = append(p.Reviewers, map[float64]string{7: "alice", 8: "bob"}[id.(float64)])
				}
			}
			f.prs = append(f.prs, p)
			writeJSON(w, http.StatusCreated, mr(p))
		case strings.HasPrefix(path, project+"/") && r.Method == http.MethodGet:
			n, _ := strconv.Atoi(strings.TrimPrefix(path, project+"/"))
			writeJSON(w, http.StatusOK, mr(f.find(n)))
		case strings.HasPrefix(path, project+"/") && r.Method == http.MethodPut:
			n, _ := strconv.Atoi(strings.TrimPrefix(path, project+"/"))
			p := f.find(n)
			if rv, ok := body["reviewer_ids"].([]any); ok {
				f.writes[len(f.writes)-1] += " reviewers"
				p.Reviewers = nil
				for _, id := range rv {
					p.Reviewers = append(p.Reviewers, map[float64]string{7: "alice", 8: "bob"}[id.(float64)])
				}
			}
			if t, ok := body["title"].(string); ok {
				p.Title = t
			}
			if d, ok := body["description"].(string); ok {
				p.Body = d
			}
			if body["state_event"] == "close" {
				p.State = "closed"
			}
			writeJSON(w, http.StatusOK, mr(p))
		default:
			f.t.Errorf("unexpected gitlab request %s %s", r.Method, r.URL)
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not Found"})
		}
	})
}

// TestForgesSyncPullRequest drives SyncPullRequest and CloseOpenPullRequest
// through the GitHub and GitLab clients against servers that follow those
// APIs' documented requests and answers.
func TestForgesSyncPullRequest(t *testing.T) {
	for _, kind := range []string{KindGitHub, KindGitLab} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			fake := &fakeForge{t: t}
			handler := fake.githubHandler()
			if kind == KindGitLab {
				handler = fake.gitlabHandler()
			}
			srv := httptest.NewServer(handler)
			defer srv.Close()
			forge, err := New(Options{Kind: kind, APIURL: srv.URL + "/", Token: forgeToken}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
			if err != nil {
				t.Fatal(err)
			}
			body := func(hash string) string {
				return "changes\n\n" + bodyMarkerPrefix + strings.Repeat(hash, 64) + " -->\n"
			}
			// What the forge holds: the body, and whom the job asked.
			stored := func(hash string) string { return body(hash) + reviewersPrefix + "alice -->\n" }
			pr := NewPullRequest{Head: "recommend-job/main", Base: "main", Title: "Right-size", Body: body("a"),
				Labels: []string{"resources"}, Reviewers: []string{"alice"}}

			got, err := SyncPullRequest(ctx, forge, pr)
			if err != nil {
				t.Fatalf("first SyncPullRequest() error = %v", err)
			}
			if got.Action != plan.PRCreated || got.Number != 1 || !strings.HasSuffix(got.URL, "/1") {
				t.Errorf("first sync = %+v, want #1 created", got)
			}
			want := []*fakePR{{Number: 1, Head: "recommend-job/main", Base: "main", Title: "Right-size", Body: stored("a"), State: "open",
				Labels: []string{"resources"}, Reviewers: []string{"alice"}}}
			if diff := cmp.Diff(want, fake.prs); diff != "" {
				t.Errorf("forge after create (-want +got):\n%s", diff)
			}

			// The same change set: no write at all.
			writes := len(fake.writes)
			if got, err := SyncPullRequest(ctx, forge, pr); err != nil || got.Action != plan.PRUnchanged || got.Number != 1 {
				t.Errorf("second sync = %+v, %v; want #1 unchanged", got, err)
			}
			if len(fake.writes) != writes {
				t.Errorf("an unchanged sync wrote: %v", fake.writes[writes:])
			}

			// A new change set updates the same pull request.
			pr.Body = body("b")
			if got, err := SyncPullRequest(ctx, forge, pr); err != nil || got.Action != plan.PRUpdated || got.Number != 1 {
				t.Errorf("third sync = %+v, %v; want #1 updated", got, err)
			}
			if fake.prs[0].Body != stored("b") {
				t.Errorf("body after update = %q", fake.prs[0].Body)
			}

			// Another run opened it between this run's look and its create:
			// "already exists" is not an error, the open one is updated.
			fake.hideNextList = true
			pr.Body = body("c")
			if got, err := SyncPullRequest(ctx, forge, pr); err != nil || got.Action != plan.PRUpdated || got.Number != 1 {
				t.Errorf("racing sync = %+v, %v; want #1 updated", got, err)
			}
			if len(fake.prs) != 1 || fake.prs[0].Body != stored("c") {
				t.Errorf("after the race: %d pull requests, body %q; want one with the new body", len(fake.prs), fake.prs[0].Body)
			}

			// Owners change: a new one is asked, and one who left and
			// comes back is not asked again.
			pr.Body, pr.Reviewers = body("e"), []string{"bob"}
			if _, err := SyncPullRequest(ctx, forge, pr); err != nil {
				t.Fatal(err)
			}
			if got := askedReviewers(fake.prs[0].Body); !slices.Equal(got, []string{"bob", "alice"}) {
				t.Errorf("reviewers recorded after bob came: %q, want bob, then alice", got)
			}
			writes = len(fake.writes)
			pr.Reviewers = []string{"alice"}
			if _, err := SyncPullRequest(ctx, forge, pr); err != nil {
				t.Fatal(err)
			}
			for _, w := range fake.writes[writes:] {
				if strings.Contains(w, "reviewers") {
					t.Errorf("alice, asked before, was asked again: %s", w)
				}
			}

			// The job closes it: the body says why, and no longer records
			// the values, which would hold them as a person's closing does.
			pr.Body = body("d") + "\n" + markdown.Proposed{"shop/web/app/cpu": resource.MustParse("100m")}.Line() + "\n"
			if _, err := SyncPullRequest(ctx, forge, pr); err != nil || markdown.ParseProposed(fake.prs[0].Body) == nil {
				t.Fatalf("sync with values = %v, body %q; want the values recorded", err, fake.prs[0].Body)
			}
			closed, err := CloseOpenPullRequest(ctx, forge, "recommend-job/main", "main", closing("nothing <b>left</b>."))
			if err != nil || closed == nil || closed.Action != plan.PRClosed || fake.prs[0].State != "closed" {
				t.Errorf("close = %+v, %v, state %s; want #1 closed", closed, err, fake.prs[0].State)
			}
			if got := fake.prs[0].Body; markdown.ParseProposed(got) != nil || !strings.HasPrefix(got, body("d")) ||
				!strings.HasSuffix(got, "\n\n---\n\n**Closed by recommend-job:** nothing &lt;b&gt;left&lt;/b&gt;.\n") {
				t.Errorf("body of the closed pull request = %q; want its changes, no values, and why it was closed", got)
			}
			if again, err := CloseOpenPullRequest(ctx, forge, "recommend-job/main", "main", closing("done")); again != nil || err != nil {
				t.Errorf("second close = %+v, %v; want nothing to close", again, err)
			}
		})
	}
}

// TestForgeErrorsHoldNoToken checks that a refused token surfaces as an
// error naming the forge, without the token.
func TestForgeErrorsHoldNoToken(t *testing.T) {
	for _, kind := range []string{KindGitHub, KindGitLab} {
		t.Run(kind, func(t *testing.T) {
			fake := &fakeForge{t: t}
			handler := fake.githubHandler()
			if kind == KindGitLab {
				handler = fake.gitlabHandler()
			}
			srv := httptest.NewServer(handler)
			defer srv.Close()
			forge, err := New(Options{Kind: kind, APIURL: srv.URL, Token: "wrong-" + forgeToken}, gitops.Options{URL: "git@git.example.com:org/fleet.git"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = SyncPullRequest(context.Background(), forge, NewPullRequest{Head: "h", Base: "main", Title: "t", Body: "b"})
			if err == nil || !strings.Contains(err.Error(), kind+": ") || !strings.Contains(err.Error(), "401") {
				t.Fatalf("error = %v, want the forge's 401", err)
			}
			if strings.Contains(err.Error(), forgeToken) {
				t.Errorf("error %q holds the token", err)
			}
		})
	}
}

func TestRepositoryOf(t *testing.T) {
	tests := []struct{ repo, url, owner, name string }{
		{"", "https://github.com/org/fleet.git", "org", "fleet"},
		{"", "git@gitlab.com:group/sub/fleet.git", "group/sub", "fleet"},
		{"", "ssh://git@host:2222/org/fleet", "org", "fleet"},
		{"other/repo", "https://github.com/org/fleet.git", "other", "repo"},
	}
	for _, tt := range tests {
		owner, name, err := repositoryOf(tt.repo, gitops.Options{URL: tt.url})
		if err != nil || owner != tt.owner || name != tt.name {
			t.Errorf("repositoryOf(%q, %q) = %q, %q, %v; want %q, %q", tt.repo, tt.url, owner, name, err, tt.owner, tt.name)
		}
	}
	if _, _, err := repositoryOf("", gitops.Options{URL: "https://github.com/fleet.git"}); err == nil {
		t.Error("repositoryOf() of a one-segment path: no error")
	}
}

// TestSyncPullRequestIgnoresForgedMarker opens the pull request with a
// body a tenant or an editor forged: it carries the marker of the new
// change set, before the job's own, as the first line or inside a body
// with other values. Only the very body the job renders counts as up to
// date.
func TestSyncPullRequestIgnoresForgedMarker(t *testing.T) {
	const head, base, title = "recommend-job/main", "main", "Right-size resource requests on main"
	rep := tenantReport(strings.Repeat("0", 64))
	body := markdown.PullRequestBody(rep)
	newHash := markdown.ChangeSetHash(rep)
	old := tenantReport(newHash)
	old.Items[0].Containers[0].Resources[0].Recommended = q("400m")
	if markdown.ChangeSetHash(old) == newHash {
		t.Fatal("the old report has the new change set")
	}
	// What a version that echoed tenant text raw wrote: the tenant's
	// marker of the new change set, then the old values and marker.
	legacy := "Right-size\n| team-c/db | " + forgedMarker(newHash) + " |\n| app | cpu | 500m | 400m |\n" + forgedMarker(markdown.ChangeSetHash(old)) + "\n"

	tests := []struct {
		name, existing string
		wantAction     string
	}{
		{name: "forged marker before the job's", existing: legacy, wantAction: plan.PRUpdated},
		{name: "forged marker as the first line", existing: forgedMarker(newHash) + "\nvalues nobody reviewed\n", wantAction: plan.PRUpdated},
		{name: "job's body with a value edited", existing: strings.Replace(body, "| 250m |", "| 100m |", 1), wantAction: plan.PRUpdated},
		{name: "job's body with a line added", existing: body + "LGTM, merge without looking\n", wantAction: plan.PRUpdated},
		{name: "job's body", existing: body, wantAction: plan.PRUnchanged},
		{name: "job's body as a browser saves it", existing: strings.TrimSuffix(strings.ReplaceAll(body, "\n", "\r\n"), "\r\n"), wantAction: plan.PRUnchanged},
	}
	if !strings.Contains(body, "| 250m |") {
		t.Fatalf("body lacks the changed value:\n%s", body)
	}
	for _, kind := range []string{KindGitHub, KindGitLab} {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				fake := &fakeForge{t: t, prs: []*fakePR{{Number: 1, Head: head, Base: base, Title: title, Body: tt.existing, State: "open"}}}
				handler := fake.githubHandler()
				if kind == KindGitLab {
					handler = fake.gitlabHandler()
				}
				srv := httptest.NewServer(handler)
				defer srv.Close()
				forge, err := New(Options{Kind: kind, APIURL: srv.URL + "/", Token: forgeToken}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
				if err != nil {
					t.Fatal(err)
				}
				got, err := SyncPullRequest(context.Background(), forge, NewPullRequest{Head: head, Base: base, Title: title, Body: body})
				if err != nil || got.Action != tt.wantAction || got.Number != 1 {
					t.Fatalf("SyncPullRequest() = %+v, %v; want #1 %s", got, err, tt.wantAction)
				}
				wantBody := body
				if tt.wantAction == plan.PRUnchanged {
					wantBody = tt.existing
					if len(fake.writes) != 0 {
						t.Errorf("an unchanged sync wrote: %v", fake.writes)
					}
				}
				if fake.prs[0].Body != wantBody {
					t.Errorf("body on the forge =\n%s\nwant\n%s", fake.prs[0].Body, wantBody)
				}
			})
		}
	}
}

// echoingHandler answers every request with 401 and a message that echoes
// the request's headers, as a forge did with "your request header was:
// token b674...". jsonBody picks a JSON message or plain text.
func echoingHandler(jsonBody bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hdr strings.Builder
		_ = r.Header.Write(&hdr)
		msg := "Bad credentials; your request header was: " + hdr.String()
		if jsonBody {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": msg})
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, msg)
	})
}

// TestForgeErrorsRedactEchoedToken calls every operation of every forge
// client against a server that echoes the token back in its errors: the
// token reaches neither the error's text, nor any error it unwraps to,
// nor a log line of it.
func TestForgeErrorsRedactEchoedToken(t *testing.T) {
	const token = "b674f00d5eed1e55c0ffee42deadbeef01234567"
	ops := []struct {
		name string
		call func(context.Context, Forge) error
	}{
		{"FindOpen", func(ctx context.Context, f Forge) error { _, err := f.FindOpen(ctx, "h", "main"); return err }},
		{"Create", func(ctx context.Context, f Forge) error {
			_, err := f.Create(ctx, NewPullRequest{Head: "h", Base: "main", Title: "t", Body: "b", Labels: []string{"l"}, Reviewers: []string{"alice"}})
			return err
		}},
		{"Update", func(ctx context.Context, f Forge) error { _, err := f.Update(ctx, 1, "t", "b"); return err }},
		{"Close", func(ctx context.Context, f Forge) error { return f.Close(ctx, 1) }},
		{"SyncPullRequest", func(ctx context.Context, f Forge) error {
			_, err := SyncPullRequest(ctx, f, NewPullRequest{Head: "h", Base: "main", Title: "t", Body: "b"})
			return err
		}},
		{"CloseOpenPullRequest", func(ctx context.Context, f Forge) error {
			_, err := CloseOpenPullRequest(ctx, f, "h", "main", closing("done"))
			return err
		}},
	}
	echoed := map[string]int{}
	for _, kind := range []string{KindGitHub, KindGitLab, KindGitea} {
		for _, jsonBody := range []bool{true, false} {
			srv := httptest.NewServer(echoingHandler(jsonBody))
			t.Cleanup(srv.Close)
			for _, op := range ops {
				t.Run(fmt.Sprintf("%s/json=%t/%s", kind, jsonBody, op.name), func(t *testing.T) {
					forge, err := New(Options{Kind: kind, APIURL: srv.URL, Token: token}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
					if err != nil {
						t.Fatal(err)
					}
					err = op.call(context.Background(), forge)
					if err == nil {
						t.Fatal("no error from a server that refuses everything")
					}
					// go-github leaves a body that is not JSON out of
					// its errors; every other echo reaches the error,
					// with the token taken out.
					if strings.Contains(err.Error(), "REDACTED") {
						echoed[kind]++
					} else if kind != KindGitHub || jsonBody {
						t.Errorf("error = %q, want the echoed token REDACTED", err)
					}
					var logs bytes.Buffer
					slog.New(slog.NewTextHandler(&logs, nil)).Warn("pull request", "error", err)
					slog.New(slog.NewJSONHandler(&logs, nil)).Warn("pull request", "error", err)
					fmt.Fprintf(&logs, "%v %+v %#v %s %q", err, err, err, err, err)
					if strings.Contains(logs.String(), token) {
						t.Errorf("the token is in the logs:\n%s", logs.String())
					}
					walkErrors(err, func(e error) {
						if strings.Contains(e.Error(), token) {
							t.Errorf("an error in the chain holds the token: %q", e)
						}
					})
					var ghErr *github.ErrorResponse
					var glErr *gitlab.ErrorResponse
					if errors.As(err, &ghErr) || errors.As(err, &glErr) {
						t.Errorf("error %q hands out the forge's response, and with it the request's headers", err)
					}
				})
			}
		}
	}
	for _, kind := range []string{KindGitHub, KindGitLab, KindGitea} {
		if echoed[kind] < len(ops) {
			t.Errorf("%s: %d errors carried the echo, want at least %d", kind, echoed[kind], len(ops))
		}
	}
}

// walkErrors calls visit for err and every error it wraps.
func walkErrors(err error, visit func(error)) {
	if err == nil {
		return
	}
	visit(err)
	switch u := err.(type) { //nolint:errorlint // walking the chain by hand
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, visit)
		}
	}
}

// bodyMarkerPrefix starts the marker line of the job's bodies (see
// markdown.PullRequestBody).
const bodyMarkerPrefix = "<!-- recommend-job: sha256="

// forgedMarker is the marker line of the change set hash, as anyone can
// write it.
func forgedMarker(hash string) string { return bodyMarkerPrefix + hash + " -->" }

// closing is what the job closes a pull request with: the body saying why.
func closing(why string) func(string) string {
	return func(body string) string { return markdown.ClosedBody(body, why) }
}
