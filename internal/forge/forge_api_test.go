package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v89/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// exchange is one request a scripted forge expects, and its answer.
type exchange struct {
	// method and path (escaped) of the request.
	method, path string
	// query is the whole query wanted; nil for none.
	query url.Values
	// body is the JSON body wanted, as a value that marshals to it; nil
	// for none.
	body any
	// status, header and answer (marshalled to JSON) make the response.
	status int
	header http.Header
	answer any
}

// scriptedForge is a forge's REST API that expects the requests of a
// script, in order, each authenticated, and answers them as the script
// says. Any other request fails the test.
type scriptedForge struct {
	t      *testing.T
	mu     sync.Mutex
	script []exchange
	next   int
	// authorized reports whether a request carries the token.
	authorized func(*http.Request) bool
}

func (s *scriptedForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	got := r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.RawQuery
	if !s.authorized(r) {
		t.Errorf("request %s without the token", got)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
		return
	}
	if s.next >= len(s.script) {
		t.Errorf("unexpected request %s after the script's end", got)
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not Found"})
		return
	}
	x := s.script[s.next]
	s.next++
	if r.Method != x.method || r.URL.EscapedPath() != x.path {
		t.Errorf("request %d = %s, want %s %s", s.next, got, x.method, x.path)
	}
	if diff := cmp.Diff(x.query, r.URL.Query(), cmpEmptyValues); diff != "" {
		t.Errorf("request %d (%s): query (-want +got):\n%s", s.next, got, diff)
	}
	raw, _ := io.ReadAll(r.Body)
	var body any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request %d (%s): body %q is not JSON: %v", s.next, got, raw, err)
		}
	}
	if diff := cmp.Diff(asJSON(t, x.body), body); diff != "" {
		t.Errorf("request %d (%s): body (-want +got):\n%s", s.next, got, diff)
	}
	for k, v := range x.header {
		w.Header()[k] = v
	}
	writeJSON(w, x.status, x.answer)
}

// cmpEmptyValues makes a nil query equal an empty one.
var cmpEmptyValues = cmp.FilterValues(func(a, b url.Values) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

// asJSON is v as JSON decodes it into an any: numbers as float64, structs
// as maps; nil for nil.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// newScriptedForge serves script as a forge of kind and returns the client
// of org/fleet on it; the test fails unless the whole script was played.
func newScriptedForge(t *testing.T, kind string, script ...exchange) Forge {
	t.Helper()
	s := &scriptedForge{t: t, script: script}
	switch kind {
	case KindGitHub:
		s.authorized = func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+forgeToken }
	case KindGitLab:
		s.authorized = func(r *http.Request) bool { return r.Header.Get("Private-Token") == forgeToken }
	default:
		t.Fatalf("no scripted forge of kind %s", kind)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, x := range s.script[s.next:] {
			t.Errorf("expected request %s %s never came", x.method, x.path)
		}
	})
	forge, err := New(Options{Kind: kind, APIURL: srv.URL + "/", Token: forgeToken}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
	if err != nil {
		t.Fatal(err)
	}
	return forge
}

// query builds url.Values from key, value pairs.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}

// day is a UTC time of 2026 on month/day at hour:00.
func day(month time.Month, d, hour int) time.Time {
	return time.Date(2026, month, d, hour, 0, 0, 0, time.UTC)
}

// ts is t as the forges write it; nil (null) for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(time.RFC3339)
}

// jobLogin is the job's account on the scripted forges.
const jobLogin = "recommend-job"

const (
	ghPulls  = "/api/v3/repos/org/fleet/pulls"
	ghIssues = "/api/v3/repos/org/fleet/issues"
	glMRs    = "/api/v4/projects/org%2Ffleet/merge_requests"
	glIssues = "/api/v4/projects/org%2Ffleet/issues"
)

// ghPR is a pull request as GitHub's API writes it: from a branch of
// repo (org/fleet unless given).
type ghPR struct {
	number                  int
	head, base, state, repo string
	// author opened it; the job's account (jobLogin) unless given.
	author                  string
	closed, merged, updated time.Time
	title, body             string
}

func (p ghPR) json() map[string]any {
	repo := p.repo
	if repo == "" {
		repo = "org/fleet"
	}
	if p.state == "" {
		p.state = "open"
	}
	if p.title == "" {
		p.title = fmt.Sprintf("Right-size %d", p.number)
	}
	if p.author == "" {
		p.author = jobLogin
	}
	return map[string]any{
		"number": p.number, "state": p.state, "title": p.title, "body": p.body, "user": map[string]any{"login": p.author},
		"html_url":  fmt.Sprintf("https://github.example.com/org/fleet/pull/%d", p.number),
		"head":      map[string]any{"ref": p.head, "label": strings.Split(repo, "/")[0] + ":" + p.head, "repo": map[string]any{"full_name": repo}},
		"base":      map[string]any{"ref": p.base, "repo": map[string]any{"full_name": "org/fleet"}},
		"closed_at": ts(p.closed), "merged_at": ts(p.merged), "updated_at": ts(p.updated),
	}
}

func ghPRs(prs ...ghPR) []map[string]any {
	out := []map[string]any{}
	for _, p := range prs {
		out = append(out, p.json())
	}
	return out
}

// ghNext is the Link header of a page followed by page next.
func ghNext(path string, next int) http.Header {
	return http.Header{"Link": {fmt.Sprintf(`<%s?page=%d&per_page=100>; rel="next", <%s?page=%d&per_page=100>; rel="last"`, path, next, path, next)}}
}

// TestGitHubListOpen lists over two pages: only pull requests from the
// repository's own branches with the prefix, into base, are listed.
func TestGitHubListOpen(t *testing.T) {
	forge := newScriptedForge(t, KindGitHub,
		exchange{method: http.MethodGet, path: ghPulls, query: query("state", "open", "base", "main", "per_page", "100"),
			status: http.StatusOK, header: ghNext(ghPulls, 2), answer: ghPRs(
				ghPR{number: 1, head: "recommend-job/main-shop-1a2b", base: "main", body: "shop\r\n"},
				ghPR{number: 2, head: "feature/x", base: "main"},
				ghPR{number: 3, head: "recommend-job/main-evil-3c4d", base: "main", repo: "fork/fleet"},
			)},
		exchange{method: http.MethodGet, path: ghPulls, query: query("state", "open", "base", "main", "per_page", "100", "page", "2"),
			status: http.StatusOK, answer: ghPRs(
				ghPR{number: 5, head: "recommend-job/main-blog-5e6f", base: "main", body: "blog"},
				ghPR{number: 6, head: "recommend-job", base: "main"},
			)},
	)
	got, err := forge.ListOpen(context.Background(), "main", "recommend-job/main-")
	if err != nil {
		t.Fatal(err)
	}
	want := []PullRequest{
		{Number: 1, URL: "https://github.example.com/org/fleet/pull/1", Title: "Right-size 1", Body: "shop\r\n", Head: "recommend-job/main-shop-1a2b", Author: jobLogin},
		{Number: 5, URL: "https://github.example.com/org/fleet/pull/5", Title: "Right-size 5", Body: "blog", Head: "recommend-job/main-blog-5e6f", Author: jobLogin},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListOpen() (-want +got):\n%s", diff)
	}
}

// TestGitHubLastClosed reads closed pull requests of the head, most
// recently updated first: the one closed last counts, and only when it
// was not merged.
func TestGitHubLastClosed(t *testing.T) {
	const head = "recommend-job/main-shop-1a2b"
	q := func(page string) url.Values {
		v := query("state", "closed", "head", "org:"+head, "base", "main", "sort", "updated", "direction", "desc")
		if page != "" {
			v.Set("page", page)
		}
		return v
	}
	closed4 := ghPR{number: 4, head: head, base: "main", state: "closed", closed: day(3, 2, 10), updated: day(3, 2, 10), body: "held"}
	want4 := &PullRequest{Number: 4, URL: "https://github.example.com/org/fleet/pull/4", Title: "Right-size 4", Body: "held",
		Head: head, Author: jobLogin, ClosedAt: day(3, 2, 10)}
	// Someone else's pull request from the job's branch, closed last.
	foreign9 := ghPR{number: 9, head: head, base: "main", state: "closed", author: "mallory", closed: day(3, 9, 0), updated: day(3, 9, 0), body: "held"}
	merged6 := ghPR{number: 6, head: head, base: "main", state: "closed", closed: day(3, 5, 9), merged: day(3, 5, 9), updated: day(3, 5, 9)}
	merged2 := ghPR{number: 2, head: head, base: "main", state: "closed", closed: day(1, 1, 9), merged: day(1, 1, 9), updated: day(1, 1, 9)}
	commented4 := closed4
	commented4.updated = day(3, 10, 0) // a comment after the close

	tests := []struct {
		name   string
		script []exchange
		want   *PullRequest
	}{
		{name: "closed after a merge", want: want4, script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, answer: ghPRs(closed4, merged2)},
		}},
		{name: "merged last", script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, answer: ghPRs(merged6, closed4)},
		}},
		// Another account's pull request neither releases nor holds.
		{name: "another account's closed last", want: want4, script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, answer: ghPRs(foreign9, closed4, merged2)},
		}},
		{name: "merged last, the closed one updated later", script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, answer: ghPRs(commented4, merged6, merged2)},
		}},
		{name: "none", script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, answer: ghPRs()},
		}},
		{name: "next page read while a later close may follow", want: want4, script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, header: ghNext(ghPulls, 2), answer: ghPRs(commented4)},
			{method: http.MethodGet, path: ghPulls, query: q("2"), status: http.StatusOK, answer: ghPRs(merged2)},
		}},
		// No request for page 2: #2 was updated before #4 was closed,
		// and so was everything after it.
		{name: "no page read past the last close", want: want4, script: []exchange{
			{method: http.MethodGet, path: ghPulls, query: q(""), status: http.StatusOK, header: ghNext(ghPulls, 2), answer: ghPRs(closed4, merged2)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitHub, tt.script...)
			got, err := forge.LastClosed(context.Background(), head, "main", jobLogin)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LastClosed() (-want +got):\n%s", diff)
			}
		})
	}
}

// ghValidationFailed is GitHub's answer to a reviewer it cannot ask.
var ghValidationFailed = map[string]any{"message": "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the org/fleet repository."}

// TestGitHubRequestReviewers checks the reviewers request, and that those
// GitHub refuses are named while the others are asked.
func TestGitHubRequestReviewers(t *testing.T) {
	const path = ghPulls + "/3/requested_reviewers"
	asked := ghPR{number: 3, head: "h", base: "main"}.json()
	type body struct {
		Reviewers     []string `json:"reviewers,omitempty"`
		TeamReviewers []string `json:"team_reviewers,omitempty"`
	}
	tests := []struct {
		name                string
		reviewers           []string
		script              []exchange
		wantNamed, wantNot  []string
		wantErr, wantStatus bool
	}{
		{
			name:      "users and a team of the organization",
			reviewers: []string{"alice", "@bob", "@org/platform", "@alice", ""},
			script: []exchange{{method: http.MethodPost, path: path, status: http.StatusCreated, answer: asked,
				body: body{Reviewers: []string{"alice", "bob"}, TeamReviewers: []string{"platform"}}}},
		},
		{
			name:      "a team of another organization",
			reviewers: []string{"alice", "@other/platform"},
			script: []exchange{{method: http.MethodPost, path: path, status: http.StatusCreated, answer: asked,
				body: body{Reviewers: []string{"alice"}}}},
			wantErr: true, wantNamed: []string{"@other/platform"}, wantNot: []string{"alice"},
		},
		{
			name:      "one refused: the others asked alone",
			reviewers: []string{"alice", "mallory", "@org/platform"},
			script: []exchange{
				{method: http.MethodPost, path: path, status: http.StatusUnprocessableEntity, answer: ghValidationFailed,
					body: body{Reviewers: []string{"alice", "mallory"}, TeamReviewers: []string{"platform"}}},
				{method: http.MethodPost, path: path, status: http.StatusCreated, answer: asked, body: body{Reviewers: []string{"alice"}}},
				{method: http.MethodPost, path: path, status: http.StatusUnprocessableEntity, answer: ghValidationFailed, body: body{Reviewers: []string{"mallory"}}},
				{method: http.MethodPost, path: path, status: http.StatusCreated, answer: asked, body: body{TeamReviewers: []string{"platform"}}},
			},
			wantErr: true, wantNamed: []string{"mallory", "422"}, wantNot: []string{"alice", "platform"},
		},
		{
			name:      "the pull request is gone: all named, no retries",
			reviewers: []string{"alice", "bob"},
			script: []exchange{{method: http.MethodPost, path: path, status: http.StatusNotFound, answer: map[string]string{"message": "Not Found"},
				body: body{Reviewers: []string{"alice", "bob"}}}},
			wantErr: true, wantNamed: []string{"alice, bob", "404"},
		},
		{name: "nobody", reviewers: []string{"@", " "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitHub, tt.script...)
			err := forge.RequestReviewers(context.Background(), 3, tt.reviewers)
			if (err != nil) != tt.wantErr {
				t.Fatalf("RequestReviewers() error = %v, want error %t", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if !strings.HasPrefix(err.Error(), "github: could not ask ") || !strings.Contains(err.Error(), "review pull request 3") {
				t.Errorf("error = %q, want github: could not ask ... to review pull request 3", err)
			}
			head, _, _ := strings.Cut(err.Error(), " to review")
			for _, s := range tt.wantNamed {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error = %q, want it to name %q", err, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(head, s) {
					t.Errorf("error = %q names %q, who was asked", err, s)
				}
			}
			var ghErr *github.ErrorResponse
			if errors.As(err, &ghErr) {
				t.Errorf("error %q hands out GitHub's response", err)
			}
		})
	}
}

func ghIssue(number int, body string, pull bool) map[string]any {
	is := map[string]any{"number": number, "title": fmt.Sprintf("Issue %d", number), "body": body, "state": "open",
		"html_url": fmt.Sprintf("https://github.example.com/org/fleet/issues/%d", number)}
	if pull {
		is["pull_request"] = map[string]any{"url": fmt.Sprintf("https://github.example.com/api/v3/repos/org/fleet/pulls/%d", number)}
	}
	return is
}

// TestGitHubIssues finds the oldest open issue with the marker, over two
// pages, skipping pull requests, and creates and updates issues with
// bodies sent and read back exactly.
func TestGitHubIssues(t *testing.T) {
	const marker = "<!-- recommend-job: dashboard -->"
	q := query("state", "open", "sort", "created", "direction", "asc", "per_page", "100")
	q2 := query("state", "open", "sort", "created", "direction", "asc", "per_page", "100", "page", "2")
	body := marker + "\r\n| a | b |  \n\ttrailing tab\t\n"

	t.Run("find", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitHub,
			exchange{method: http.MethodGet, path: ghIssues, query: q, status: http.StatusOK, header: ghNext(ghIssues, 2), answer: []map[string]any{
				ghIssue(1, marker+"\nfrom a pull request", true),
				ghIssue(2, "not it\n"+marker, false),
				ghIssue(3, marker+" and more", false),
			}},
			exchange{method: http.MethodGet, path: ghIssues, query: q2, status: http.StatusOK, answer: []map[string]any{
				ghIssue(4, body, false),
				ghIssue(9, marker, false),
			}},
		)
		got, err := forge.FindIssues(context.Background(), marker)
		want := []Issue{
			{Number: 4, URL: "https://github.example.com/org/fleet/issues/4", Title: "Issue 4", Body: body},
			{Number: 9, URL: "https://github.example.com/org/fleet/issues/9", Title: "Issue 9", Body: marker},
		}
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("FindIssues() = %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitHub,
			exchange{method: http.MethodGet, path: ghIssues, query: q, status: http.StatusOK, answer: []map[string]any{ghIssue(2, "other", false)}})
		if got, err := forge.FindIssues(context.Background(), marker); got != nil || err != nil {
			t.Errorf("FindIssues() = %+v, %v; want none", got, err)
		}
	})
	t.Run("create and update", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitHub,
			exchange{method: http.MethodPost, path: ghIssues, status: http.StatusCreated, answer: ghIssue(7, body, false),
				body: map[string]any{"title": "Dashboard", "body": body, "labels": []string{"resources", "cost"}}},
			exchange{method: http.MethodPost, path: ghIssues, status: http.StatusCreated, answer: ghIssue(8, "plain", false),
				body: map[string]any{"title": "Plain", "body": "plain"}},
			exchange{method: http.MethodPatch, path: ghIssues + "/7", status: http.StatusOK, answer: ghIssue(7, body+"more\n", false),
				body: map[string]any{"title": "Dashboard 2", "body": body + "more\n"}},
			exchange{method: http.MethodPatch, path: ghIssues + "/8", status: http.StatusOK, answer: ghIssue(8, "plain", false),
				body: map[string]any{"state": "closed"}},
		)
		ctx := context.Background()
		got, err := forge.CreateIssue(ctx, "Dashboard", body, []string{"resources", "cost"})
		if err != nil || got.Number != 7 || got.Body != body || got.URL != "https://github.example.com/org/fleet/issues/7" {
			t.Errorf("CreateIssue() = %+v, %v; want #7 with the body", got, err)
		}
		if got, err := forge.CreateIssue(ctx, "Plain", "plain", nil); err != nil || got.Number != 8 {
			t.Errorf("CreateIssue() without labels = %+v, %v; want #8", got, err)
		}
		got, err = forge.UpdateIssue(ctx, 7, "Dashboard 2", body+"more\n")
		if err != nil || got.Number != 7 || got.Body != body+"more\n" {
			t.Errorf("UpdateIssue() = %+v, %v; want #7 with the new body", got, err)
		}
		if err := forge.CloseIssue(ctx, 8); err != nil {
			t.Errorf("CloseIssue() = %v", err)
		}
	})
}

// TestGitHubHead checks that FindOpen, Create and Update say the head
// branch.
func TestGitHubHead(t *testing.T) {
	const head = "recommend-job/main-shop-1a2b"
	pr := ghPR{number: 3, head: head, base: "main", body: "b"}
	forge := newScriptedForge(t, KindGitHub,
		exchange{method: http.MethodGet, path: ghPulls, query: query("state", "open", "head", "org:"+head, "base", "main"),
			status: http.StatusOK, answer: ghPRs(pr)},
		exchange{method: http.MethodPost, path: ghPulls, status: http.StatusCreated, answer: pr.json(),
			body: map[string]any{"title": "t", "head": head, "base": "main", "body": "b", "maintainer_can_modify": false}},
		exchange{method: http.MethodPatch, path: ghPulls + "/3", status: http.StatusOK, answer: pr.json(),
			body: map[string]any{"title": "t", "body": "b"}},
	)
	ctx := context.Background()
	found, err := forge.FindOpen(ctx, head, "main")
	if err != nil || found == nil || found.Head != head {
		t.Errorf("FindOpen() = %+v, %v; want head %s", found, err, head)
	}
	created, err := forge.Create(ctx, NewPullRequest{Head: head, Base: "main", Title: "t", Body: "b"})
	if err != nil || created.Head != head {
		t.Errorf("Create() = %+v, %v; want head %s", created, err, head)
	}
	updated, err := forge.Update(ctx, 3, "t", "b")
	if err != nil || updated.Head != head {
		t.Errorf("Update() = %+v, %v; want head %s", updated, err, head)
	}
}

// glMR is a merge request as GitLab's API writes it, of project 1 unless
// from a fork.
type glMR struct {
	iid               int
	head, base, state string
	// author opened it; the job's account (jobLogin) unless given.
	author                  string
	fork                    bool
	closed, merged, updated time.Time
	body                    string
	reviewers               []int
}

func (m glMR) json() map[string]any {
	if m.state == "" {
		m.state = "opened"
	}
	source := 1
	if m.fork {
		source = 99
	}
	if m.author == "" {
		m.author = jobLogin
	}
	reviewers := []map[string]any{}
	for _, id := range m.reviewers {
		reviewers = append(reviewers, map[string]any{"id": id, "username": fmt.Sprintf("user%d", id)})
	}
	return map[string]any{
		"iid": m.iid, "id": 1000 + m.iid, "project_id": 1, "state": m.state, "title": fmt.Sprintf("Right-size %d", m.iid), "description": m.body,
		"web_url":       fmt.Sprintf("https://gitlab.example.com/org/fleet/-/merge_requests/%d", m.iid),
		"source_branch": m.head, "target_branch": m.base, "source_project_id": source, "target_project_id": 1,
		"closed_at": ts(m.closed), "merged_at": ts(m.merged), "updated_at": ts(m.updated), "reviewers": reviewers,
		"author": map[string]any{"id": 7, "username": m.author},
	}
}

func glList(mrs ...glMR) []map[string]any {
	out := []map[string]any{}
	for _, m := range mrs {
		out = append(out, m.json())
	}
	return out
}

// glNext is the pagination header of a page followed by page next.
func glNext(next int) http.Header { return http.Header{"X-Next-Page": {fmt.Sprint(next)}} }

// TestGitLabListOpen lists over two pages: only merge requests from the
// project's own branches with the prefix, into base, are listed.
func TestGitLabListOpen(t *testing.T) {
	forge := newScriptedForge(t, KindGitLab,
		exchange{method: http.MethodGet, path: glMRs, query: query("state", "opened", "target_branch", "main", "per_page", "100"),
			status: http.StatusOK, header: glNext(2), answer: glList(
				glMR{iid: 1, head: "recommend-job/main-shop-1a2b", base: "main", body: "shop\r\n"},
				glMR{iid: 2, head: "feature/x", base: "main"},
				glMR{iid: 3, head: "recommend-job/main-evil-3c4d", base: "main", fork: true},
			)},
		exchange{method: http.MethodGet, path: glMRs, query: query("state", "opened", "target_branch", "main", "per_page", "100", "page", "2"),
			status: http.StatusOK, answer: glList(glMR{iid: 5, head: "recommend-job/main-blog-5e6f", base: "main", body: "blog"})},
	)
	got, err := forge.ListOpen(context.Background(), "main", "recommend-job/main-")
	if err != nil {
		t.Fatal(err)
	}
	want := []PullRequest{
		{Number: 1, URL: "https://gitlab.example.com/org/fleet/-/merge_requests/1", Title: "Right-size 1", Body: "shop\r\n", Head: "recommend-job/main-shop-1a2b", Author: jobLogin},
		{Number: 5, URL: "https://gitlab.example.com/org/fleet/-/merge_requests/5", Title: "Right-size 5", Body: "blog", Head: "recommend-job/main-blog-5e6f", Author: jobLogin},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListOpen() (-want +got):\n%s", diff)
	}
}

// TestGitLabLastClosed reads the closed merge requests of the head, and
// the merged ones when one was closed: GitLab lists them apart.
func TestGitLabLastClosed(t *testing.T) {
	const head = "recommend-job/main-shop-1a2b"
	q := func(state string) url.Values {
		return query("state", state, "source_branch", head, "target_branch", "main", "order_by", "updated_at", "sort", "desc")
	}
	closed4 := glMR{iid: 4, head: head, base: "main", state: "closed", closed: day(3, 2, 10), updated: day(3, 2, 10), body: "held"}
	want4 := &PullRequest{Number: 4, URL: "https://gitlab.example.com/org/fleet/-/merge_requests/4", Title: "Right-size 4", Body: "held",
		Head: head, Author: jobLogin, ClosedAt: day(3, 2, 10)}
	foreign9 := glMR{iid: 9, head: head, base: "main", state: "closed", author: "mallory", closed: day(3, 9, 0), updated: day(3, 9, 0)}
	closed1 := glMR{iid: 1, head: head, base: "main", state: "closed", closed: day(1, 2, 10), updated: day(1, 2, 10)}
	fork7 := glMR{iid: 7, head: head, base: "main", state: "closed", fork: true, closed: day(3, 9, 0), updated: day(3, 9, 0)}
	merged6 := glMR{iid: 6, head: head, base: "main", state: "merged", merged: day(3, 5, 9), updated: day(3, 5, 9)}
	merged2 := glMR{iid: 2, head: head, base: "main", state: "merged", merged: day(1, 1, 9), updated: day(1, 1, 9)}

	tests := []struct {
		name   string
		script []exchange
		want   *PullRequest
	}{
		{name: "closed after a merge", want: want4, script: []exchange{
			{method: http.MethodGet, path: glMRs, query: q("closed"), status: http.StatusOK, answer: glList(fork7, closed4, closed1)},
			{method: http.MethodGet, path: glMRs, query: q("merged"), status: http.StatusOK, answer: glList(merged2)},
		}},
		{name: "merged last", script: []exchange{
			{method: http.MethodGet, path: glMRs, query: q("closed"), status: http.StatusOK, answer: glList(closed4)},
			{method: http.MethodGet, path: glMRs, query: q("merged"), status: http.StatusOK, answer: glList(merged6, merged2)},
		}},
		{name: "another account's closed last", want: want4, script: []exchange{
			{method: http.MethodGet, path: glMRs, query: q("closed"), status: http.StatusOK, answer: glList(foreign9, closed4)},
			{method: http.MethodGet, path: glMRs, query: q("merged"), status: http.StatusOK, answer: glList(merged2)},
		}},
		// Without a closed one, merged ones do not matter: one request.
		{name: "none closed", script: []exchange{
			{method: http.MethodGet, path: glMRs, query: q("closed"), status: http.StatusOK, answer: glList(fork7)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitLab, tt.script...)
			got, err := forge.LastClosed(context.Background(), head, "main", jobLogin)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LastClosed() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGitLabRequestReviewers looks reviewers up by user name, keeps those
// asked before in reviewer_ids, and names the groups, the unknown users
// and those GitLab drops.
func TestGitLabRequestReviewers(t *testing.T) {
	const users = "/api/v4/users"
	user := func(name string, id int) exchange {
		answer := []map[string]any{}
		if id != 0 {
			answer = append(answer, map[string]any{"id": id, "username": name})
		}
		return exchange{method: http.MethodGet, path: users, query: query("username", name), status: http.StatusOK, answer: answer}
	}
	mr := func(reviewers ...int) glMR { return glMR{iid: 3, head: "h", base: "main", reviewers: reviewers} }
	tests := []struct {
		name               string
		reviewers          []string
		script             []exchange
		wantNamed, wantNot []string
	}{
		{
			name:      "users added to those asked before",
			reviewers: []string{"alice", "@bob", "@org/platform", "carol"},
			script: []exchange{
				user("alice", 7), user("bob", 8), user("carol", 0),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr(8, 5).json()},
				{method: http.MethodPut, path: glMRs + "/3", status: http.StatusOK, answer: mr(8, 5, 7).json(),
					body: map[string]any{"reviewer_ids": []int{8, 5, 7}}},
			},
			wantNamed: []string{"@org/platform", "carol", "no such user", "groups cannot review"},
			wantNot:   []string{"alice", "bob"},
		},
		{
			name:      "all asked before: no update",
			reviewers: []string{"alice"},
			script: []exchange{
				user("alice", 7),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr(7).json()},
			},
		},
		{
			name:      "one dropped by GitLab",
			reviewers: []string{"alice", "bob"},
			script: []exchange{
				user("alice", 7), user("bob", 8),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr().json()},
				{method: http.MethodPut, path: glMRs + "/3", status: http.StatusOK, answer: mr(7).json(),
					body: map[string]any{"reviewer_ids": []int{7, 8}}},
			},
			wantNamed: []string{"bob", "not taken"},
			wantNot:   []string{"alice"},
		},
		{
			name:      "groups only: no request",
			reviewers: []string{"@org/platform"},
			wantNamed: []string{"@org/platform"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitLab, tt.script...)
			err := forge.RequestReviewers(context.Background(), 3, tt.reviewers)
			if (err != nil) != (len(tt.wantNamed) > 0) {
				t.Fatalf("RequestReviewers() error = %v, want error %t", err, len(tt.wantNamed) > 0)
			}
			if err == nil {
				return
			}
			if !strings.HasPrefix(err.Error(), "gitlab: could not ask ") {
				t.Errorf("error = %q, want gitlab: could not ask ...", err)
			}
			head, _, _ := strings.Cut(err.Error(), " to review")
			for _, s := range tt.wantNamed {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error = %q, want it to name %q", err, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(head, s) {
					t.Errorf("error = %q names %q, who was asked", err, s)
				}
			}
		})
	}
}

func glIssue(iid int, body string) map[string]any {
	return map[string]any{"iid": iid, "id": 2000 + iid, "title": fmt.Sprintf("Issue %d", iid), "description": body, "state": "opened",
		"web_url": fmt.Sprintf("https://gitlab.example.com/org/fleet/-/issues/%d", iid)}
}

// TestGitLabIssues finds the oldest open issue with the marker over two
// pages, and creates and updates issues with bodies sent and read back
// exactly.
func TestGitLabIssues(t *testing.T) {
	const marker = "<!-- recommend-job: dashboard -->"
	q := query("state", "opened", "issue_type", "issue", "order_by", "created_at", "sort", "asc", "per_page", "100")
	q2 := query("state", "opened", "issue_type", "issue", "order_by", "created_at", "sort", "asc", "per_page", "100", "page", "2")
	body := marker + "\r\n| a | b |  \n\ttrailing tab\t\n"

	t.Run("find", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitLab,
			exchange{method: http.MethodGet, path: glIssues, query: q, status: http.StatusOK, header: glNext(2),
				answer: []map[string]any{glIssue(2, "not it\n"+marker), glIssue(3, " "+marker)}},
			exchange{method: http.MethodGet, path: glIssues, query: q2, status: http.StatusOK,
				answer: []map[string]any{glIssue(4, body), glIssue(9, marker)}},
		)
		got, err := forge.FindIssues(context.Background(), marker)
		want := []Issue{
			{Number: 4, URL: "https://gitlab.example.com/org/fleet/-/issues/4", Title: "Issue 4", Body: body},
			{Number: 9, URL: "https://gitlab.example.com/org/fleet/-/issues/9", Title: "Issue 9", Body: marker},
		}
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("FindIssues() = %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitLab,
			exchange{method: http.MethodGet, path: glIssues, query: q, status: http.StatusOK, answer: []map[string]any{}})
		if got, err := forge.FindIssues(context.Background(), marker); got != nil || err != nil {
			t.Errorf("FindIssues() = %+v, %v; want none", got, err)
		}
	})
	t.Run("create and update", func(t *testing.T) {
		forge := newScriptedForge(t, KindGitLab,
			exchange{method: http.MethodPost, path: glIssues, status: http.StatusCreated, answer: glIssue(7, body),
				body: map[string]any{"title": "Dashboard", "description": body, "labels": "resources,cost"}},
			exchange{method: http.MethodPut, path: glIssues + "/7", status: http.StatusOK, answer: glIssue(7, body+"more\n"),
				body: map[string]any{"title": "Dashboard 2", "description": body + "more\n"}},
			exchange{method: http.MethodPut, path: glIssues + "/8", status: http.StatusOK, answer: glIssue(8, "plain"),
				body: map[string]any{"state_event": "close"}},
		)
		ctx := context.Background()
		got, err := forge.CreateIssue(ctx, "Dashboard", body, []string{"resources", "cost"})
		if err != nil || got.Number != 7 || got.Body != body || got.URL != "https://gitlab.example.com/org/fleet/-/issues/7" {
			t.Errorf("CreateIssue() = %+v, %v; want #7 with the body", got, err)
		}
		got, err = forge.UpdateIssue(ctx, 7, "Dashboard 2", body+"more\n")
		if err != nil || got.Number != 7 || got.Body != body+"more\n" {
			t.Errorf("UpdateIssue() = %+v, %v; want #7 with the new body", got, err)
		}
		if err := forge.CloseIssue(ctx, 8); err != nil {
			t.Errorf("CloseIssue() = %v", err)
		}
	})
}

// TestGitLabHead checks that FindOpen, Create and Update say the source
// branch.
func TestGitLabHead(t *testing.T) {
	const head = "recommend-job/main-shop-1a2b"
	mr := glMR{iid: 3, head: head, base: "main", body: "b"}
	forge := newScriptedForge(t, KindGitLab,
		exchange{method: http.MethodGet, path: glMRs, query: query("state", "opened", "source_branch", head, "target_branch", "main"),
			status: http.StatusOK, answer: glList(mr)},
		exchange{method: http.MethodPost, path: glMRs, status: http.StatusCreated, answer: mr.json(),
			body: map[string]any{"title": "t", "description": "b", "source_branch": head, "target_branch": "main"}},
		exchange{method: http.MethodPut, path: glMRs + "/3", status: http.StatusOK, answer: mr.json(),
			body: map[string]any{"title": "t", "description": "b"}},
	)
	ctx := context.Background()
	found, err := forge.FindOpen(ctx, head, "main")
	if err != nil || found == nil || found.Head != head {
		t.Errorf("FindOpen() = %+v, %v; want head %s", found, err, head)
	}
	created, err := forge.Create(ctx, NewPullRequest{Head: head, Base: "main", Title: "t", Body: "b"})
	if err != nil || created.Head != head {
		t.Errorf("Create() = %+v, %v; want head %s", created, err, head)
	}
	updated, err := forge.Update(ctx, 3, "t", "b")
	if err != nil || updated.Head != head {
		t.Errorf("Update() = %+v, %v; want head %s", updated, err, head)
	}
}

// TestForgeNewMethodsSealErrors calls the methods added for pull request
// groups on every forge against a server that echoes the token back: the
// error names the forge, holds the echo with the token taken out, and
// unwraps to nothing that holds it or the response.
func TestForgeNewMethodsSealErrors(t *testing.T) {
	const token = "b674f00d5eed1e55c0ffee42deadbeef01234567"
	ops := []struct {
		name string
		call func(context.Context, Forge) error
	}{
		{"ListOpen", func(ctx context.Context, f Forge) error { _, err := f.ListOpen(ctx, "main", "h"); return err }},
		{"LastClosed", func(ctx context.Context, f Forge) error {
			_, err := f.LastClosed(ctx, "h", "main", jobLogin)
			return err
		}},
		{"RequestReviewers", func(ctx context.Context, f Forge) error {
			return f.RequestReviewers(ctx, 1, []string{"alice"})
		}},
		{"WithdrawReviewers", func(ctx context.Context, f Forge) error {
			return f.WithdrawReviewers(ctx, 1, []string{"alice"})
		}},
		{"FindIssues", func(ctx context.Context, f Forge) error { _, err := f.FindIssues(ctx, "m"); return err }},
		{"CloseIssue", func(ctx context.Context, f Forge) error { return f.CloseIssue(ctx, 1) }},
		{"CreateIssue", func(ctx context.Context, f Forge) error {
			_, err := f.CreateIssue(ctx, "t", "b", []string{"l"})
			return err
		}},
		{"UpdateIssue", func(ctx context.Context, f Forge) error { _, err := f.UpdateIssue(ctx, 1, "t", "b"); return err }},
	}
	srv := httptest.NewServer(echoingHandler(true))
	t.Cleanup(srv.Close)
	for _, kind := range []string{KindGitHub, KindGitLab, KindGitea} {
		for _, op := range ops {
			t.Run(kind+"/"+op.name, func(t *testing.T) {
				forge, err := New(Options{Kind: kind, APIURL: srv.URL, Token: token}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
				if err != nil {
					t.Fatal(err)
				}
				err = op.call(context.Background(), forge)
				if err == nil {
					t.Fatal("no error from a server that refuses everything")
				}
				if !strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), "REDACTED") {
					t.Errorf("error = %q, want the %s echo with the token REDACTED", err, kind)
				}
				walkErrors(err, func(e error) {
					if strings.Contains(e.Error(), token) {
						t.Errorf("an error in the chain holds the token: %q", e)
					}
				})
				var ghErr *github.ErrorResponse
				var glErr *gitlab.ErrorResponse
				if errors.As(err, &ghErr) || errors.As(err, &glErr) {
					t.Errorf("error %q hands out the forge's response", err)
				}
			})
		}
	}
}

// TestGitHubWithdrawReviewers takes back users' and a team's requests in
// one call, and names those GitHub would not take back.
func TestGitHubWithdrawReviewers(t *testing.T) {
	const path = ghPulls + "/3/requested_reviewers"
	pr := ghPR{number: 3, head: "h", base: "main"}.json()
	tests := []struct {
		name      string
		reviewers []string
		script    []exchange
		wantNamed []string
	}{
		{
			name:      "users and a team of the organization",
			reviewers: []string{"@ana", "ben", "@org/platform", "ana"},
			script: []exchange{{method: http.MethodDelete, path: path, status: http.StatusOK, answer: pr,
				body: map[string]any{"reviewers": []string{"ana", "ben"}, "team_reviewers": []string{"platform"}}}},
		},
		{
			name:      "a team of another organization is not sent",
			reviewers: []string{"ana", "@other/platform"},
			script: []exchange{{method: http.MethodDelete, path: path, status: http.StatusOK, answer: pr,
				body: map[string]any{"reviewers": []string{"ana"}}}},
			wantNamed: []string{"@other/platform"},
		},
		{
			name:      "refused",
			reviewers: []string{"ana"},
			script: []exchange{{method: http.MethodDelete, path: path, status: http.StatusUnprocessableEntity, answer: ghValidationFailed,
				body: map[string]any{"reviewers": []string{"ana"}}}},
			wantNamed: []string{"ana", "422"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitHub, tt.script...)
			err := forge.WithdrawReviewers(context.Background(), 3, tt.reviewers)
			if (err != nil) != (len(tt.wantNamed) > 0) {
				t.Fatalf("WithdrawReviewers() error = %v, want error %t", err, len(tt.wantNamed) > 0)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "github: could not withdraw the requests of ") {
				t.Errorf("error = %q, want github: could not withdraw the requests of ...", err)
			}
			for _, s := range tt.wantNamed {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error = %q, want it to name %q", err, s)
				}
			}
		})
	}
}

// TestGitLabWithdrawReviewers looks users up by name and sets reviewer_ids
// to the merge request's other reviewers; nothing is sent when none of
// them is a reviewer.
func TestGitLabWithdrawReviewers(t *testing.T) {
	const users = "/api/v4/users"
	user := func(name string, id int) exchange {
		answer := []map[string]any{}
		if id != 0 {
			answer = append(answer, map[string]any{"id": id, "username": name})
		}
		return exchange{method: http.MethodGet, path: users, query: query("username", name), status: http.StatusOK, answer: answer}
	}
	mr := func(reviewers ...int) glMR { return glMR{iid: 3, head: "h", base: "main", reviewers: reviewers} }
	tests := []struct {
		name      string
		reviewers []string
		script    []exchange
		wantNamed []string
	}{
		{
			name:      "the others kept",
			reviewers: []string{"ana", "@org/platform", "cyd"},
			script: []exchange{
				user("ana", 7), user("cyd", 0),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr(8, 7, 5).json()},
				{method: http.MethodPut, path: glMRs + "/3", status: http.StatusOK, answer: mr(8, 5).json(),
					body: map[string]any{"reviewer_ids": []int{8, 5}}},
			},
			wantNamed: []string{"@org/platform", "cyd", "no such user"},
		},
		{
			name:      "the last one: none left",
			reviewers: []string{"ana"},
			script: []exchange{
				user("ana", 7),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr(7).json()},
				{method: http.MethodPut, path: glMRs + "/3", status: http.StatusOK, answer: mr().json(),
					body: map[string]any{"reviewer_ids": []int{}}},
			},
		},
		{
			name:      "not a reviewer any more: no update",
			reviewers: []string{"ana"},
			script: []exchange{
				user("ana", 7),
				{method: http.MethodGet, path: glMRs + "/3", status: http.StatusOK, answer: mr(8).json()},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge := newScriptedForge(t, KindGitLab, tt.script...)
			err := forge.WithdrawReviewers(context.Background(), 3, tt.reviewers)
			if (err != nil) != (len(tt.wantNamed) > 0) {
				t.Fatalf("WithdrawReviewers() error = %v, want error %t", err, len(tt.wantNamed) > 0)
			}
			for _, s := range tt.wantNamed {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error = %q, want it to name %q", err, s)
				}
			}
		})
	}
}
