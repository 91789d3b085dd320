//go:build integration

package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// loopbackForge is GitHub's or GitLab's REST API, as much of it as a run's
// pull requests and dashboard use, kept in memory for org/fleet. Its
// limit says which pull request creations (counted from 1) it answers
// with its forge's rate limit instead, and how: GitHub's secondary limit
// (403, Retry-After, its message) or GitLab's 429.
type loopbackForge struct {
	t    *testing.T
	kind string
	// limited reports whether the nth creation is answered with the
	// limit, and the Retry-After in seconds.
	limited func(n int) (bool, int)

	mu     sync.Mutex
	prs    []map[string]any
	issues []map[string]any
	// sent counts every request; creates the pull request creations
	// sent, at sentAt; afterLimit the requests sent after the last limit
	// answer.
	sent, creates, afterLimit int
	sentAt                    []time.Time
	limitedOnce               bool
}

func (f *loopbackForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent++
	if f.limitedOnce {
		f.afterLimit++
	}
	path := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/v3"), "/api/v4")
	var in map[string]any
	if r.Body != nil {
		_ = json.NewDecoder(r.Body).Decode(&in)
	}
	prs, issues := "/repos/org/fleet/pulls", "/repos/org/fleet/issues"
	if f.kind == forge.KindGitLab {
		prs, issues = "/projects/org/fleet/merge_requests", "/projects/org/fleet/issues"
	}
	switch {
	case r.Method == http.MethodGet && path == prs:
		f.reply(w, http.StatusOK, f.list(f.prs, r))
	case r.Method == http.MethodPost && path == prs:
		f.creates++
		f.sentAt = append(f.sentAt, time.Now())
		if limit, after := f.limited(f.creates); limit {
			f.limit(w, after)
			return
		}
		f.prs = append(f.prs, f.item(len(f.prs)+len(f.issues)+1, in, true))
		f.reply(w, http.StatusCreated, f.prs[len(f.prs)-1])
	case r.Method == http.MethodGet && path == issues:
		f.reply(w, http.StatusOK, f.list(f.issues, r))
	case r.Method == http.MethodPost && path == issues:
		f.issues = append(f.issues, f.item(len(f.prs)+len(f.issues)+1, in, false))
		f.reply(w, http.StatusCreated, f.issues[len(f.issues)-1])
	case (r.Method == http.MethodPatch || r.Method == http.MethodPut) && (strings.HasPrefix(path, prs+"/") || strings.HasPrefix(path, issues+"/")):
		list := f.prs
		if strings.HasPrefix(path, issues+"/") {
			list = f.issues
		}
		number := path[strings.LastIndex(path, "/")+1:]
		for _, it := range list {
			if fmt.Sprint(it[f.numberKey()]) == number {
				for k, v := range in {
					it[f.field(k)] = v
				}
				f.reply(w, http.StatusOK, it)
				return
			}
		}
		f.reply(w, http.StatusNotFound, map[string]string{"message": "404 Not Found"})
	default:
		f.t.Errorf("%s forge: unexpected request %s %s", f.kind, r.Method, r.URL)
		f.reply(w, http.StatusNotFound, map[string]string{"message": "404 Not Found"})
	}
}

// limit answers with the forge's rate limit, asking to wait after seconds.
func (f *loopbackForge) limit(w http.ResponseWriter, after int) {
	f.limitedOnce, f.afterLimit = true, 0
	w.Header().Set("Retry-After", strconv.Itoa(after))
	if f.kind == forge.KindGitHub {
		f.reply(w, http.StatusForbidden, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
		return
	}
	w.Header().Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Duration(after)*time.Second).Unix(), 10))
	f.reply(w, http.StatusTooManyRequests, map[string]string{"message": "Retry later"})
}

func (f *loopbackForge) numberKey() string {
	if f.kind == forge.KindGitLab {
		return "iid"
	}
	return "number"
}

// field is the field of a stored item that a request's key sets.
func (f *loopbackForge) field(k string) string {
	if k == "state_event" {
		return "state"
	}
	return k
}

// item is a new pull request or issue numbered n, as the forge answers it.
func (f *loopbackForge) item(n int, in map[string]any, pr bool) map[string]any {
	it := map[string]any{}
	for k, v := range in {
		it[k] = v
	}
	it[f.numberKey()], it["id"] = n, n
	if f.kind == forge.KindGitLab {
		it["web_url"], it["state"] = fmt.Sprintf("http://gitlab.example/org/fleet/-/issues/%d", n), "opened"
		if pr {
			it["web_url"], it["sha"] = fmt.Sprintf("http://gitlab.example/org/fleet/-/merge_requests/%d", n), strings.Repeat("a", 40)
			it["source_project_id"], it["target_project_id"], it["author"] = 1, 1, map[string]any{"username": "bot"}
		}
		return it
	}
	it["html_url"], it["state"] = fmt.Sprintf("http://github.example/org/fleet/issues/%d", n), "open"
	if pr {
		it["html_url"] = fmt.Sprintf("http://github.example/org/fleet/pull/%d", n)
		it["head"] = map[string]any{"ref": in["head"], "sha": strings.Repeat("a", 40), "repo": map[string]any{"full_name": "org/fleet"}}
		it["base"] = map[string]any{"ref": in["base"]}
		it["user"] = map[string]any{"login": "bot"}
	}
	return it
}

// list is the open items among all that the request's filters keep.
func (f *loopbackForge) list(all []map[string]any, r *http.Request) []map[string]any {
	q := r.URL.Query()
	out := []map[string]any{}
	for _, it := range all {
		if it["state"] != "open" && it["state"] != "opened" {
			continue
		}
		if head := q.Get("head"); head != "" && "org:"+fmt.Sprint(it["head"].(map[string]any)["ref"]) != head {
			continue
		}
		if src := q.Get("source_branch"); src != "" && it["source_branch"] != src {
			continue
		}
		out = append(out, it)
	}
	return out
}

func (f *loopbackForge) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Error(err)
	}
}

// openPulls are the heads of the open pull requests.
func (f *loopbackForge) openPulls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var heads []string
	for _, it := range f.prs {
		if it["state"] == "open" || it["state"] == "opened" {
			if f.kind == forge.KindGitLab {
				heads = append(heads, fmt.Sprint(it["source_branch"]))
			} else {
				heads = append(heads, fmt.Sprint(it["head"].(map[string]any)["ref"]))
			}
		}
	}
	return heads
}

// dashboard is the body of the one open dashboard issue, "" for none.
func (f *loopbackForge) dashboard(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var bodies []string
	for _, it := range f.issues {
		if it["state"] == "open" || it["state"] == "opened" {
			bodies = append(bodies, fmt.Sprint(it["body"])+fmt.Sprint(it["description"]))
		}
	}
	if len(bodies) > 1 {
		t.Fatalf("%d dashboards open", len(bodies))
	}
	if len(bodies) == 0 {
		return ""
	}
	return bodies[0]
}

// TestWriteBackForgeRateLimits runs a grouped write-back of three groups
// through the real GitHub and GitLab clients against a loopback forge
// that answers a pull request's creation with its rate limit: GitHub's
// secondary limit (403 and Retry-After) or GitLab's 429. A wait that fits
// the call's bound is waited out, once, and every group opens its pull
// request, the dashboard listing them; a wait of an hour stops the run's
// calls to the forge at once (no request after the answer), the report
// says which groups wait for the next run and why, and the run is not
// failed; the next run, the forge no longer limiting, opens them, and
// its dashboard lists all three.
func TestWriteBackForgeRateLimits(t *testing.T) {
	for _, kind := range []string{forge.KindGitHub, forge.KindGitLab} {
		for _, wait := range []int{1, 3600} {
			t.Run(fmt.Sprintf("%s-retry-after-%d", kind, wait), func(t *testing.T) {
				rateLimitedRuns(t, kind, wait)
			})
		}
	}
}

func rateLimitedRuns(t *testing.T, kind string, wait int) {
	ctx := t.Context()
	namespaces := []string{"blog", "pay", "shop"}
	files := map[string]string{}
	for _, ns := range namespaces {
		files["clusters/"+ns+"/web.yaml"] = strings.Replace(webDeployment, "namespace: shop", "namespace: "+ns, 1)
	}
	lf := &loopbackForge{t: t, kind: kind, limited: func(n int) (bool, int) {
		if wait == 1 {
			return n == 2, wait // once: the second creation
		}
		return n >= 2, wait // from the second creation on
	}}
	srv := httptest.NewServer(lf)
	defer srv.Close()
	apiURL := srv.URL + "/api/v3/"
	if kind == forge.KindGitLab {
		apiURL = srv.URL + "/api/v4"
	}
	remote := &fixture{url: testbedtest.FileRemote(t, files)}
	cfg := Config{Path: "clusters", GroupBy: gitops.GroupBy{Kind: "namespace"}, PullRequests: PullRequestPolicy{Dashboard: true},
		Git: gitops.Options{URL: remote.url, BaseBranch: "main", PushBranch: "recommend-job",
			AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}}
	client := func() forge.Forge {
		return newForge(t, forge.Options{Kind: kind, APIURL: apiURL, Token: "forge-token", Repository: "org/fleet"}, cfg.Git)
	}
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	cpus := map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"} // blog saves the most

	cfg.Forge = client()
	first := shopsPlan(cpus)
	if err := writeBack(ctx, newRun(cfg), first, log); err != nil {
		t.Fatalf("first run: %v", err)
	}
	created, waiting := 0, 0
	for _, g := range first.Groups {
		switch {
		case g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Action == plan.PRCreated:
			created++
		case strings.HasPrefix(g.Waiting, "the forge's rate limit") && (g.Git == nil || g.Git.PullRequest == nil):
			waiting++
		default:
			t.Errorf("first run: group %s: git %+v, waiting %q", g.Name, g.Git, g.Waiting)
		}
	}
	if wait == 1 {
		if created != 3 || lf.creates != 4 || len(lf.openPulls()) != 3 {
			t.Fatalf("first run: %d created, %d creations sent, %d open; want 3, 4 (one sent again) and 3", created, lf.creates, len(lf.openPulls()))
		}
		if gap := lf.sentAt[2].Sub(lf.sentAt[1]); gap < time.Second {
			t.Errorf("the limited creation was sent again after %s, want the second it asked for", gap)
		}
		dash := lf.dashboard(t)
		for _, ns := range namespaces {
			if !strings.Contains(dash, "| namespace/"+ns+" | [#") {
				t.Errorf("the dashboard does not list %s's pull request:\n%s", ns, dash)
			}
		}
		return
	}
	// Blog's pull request opened; pay's creation was refused for an
	// hour, and shop asked nothing.
	if created != 1 || waiting != 2 || lf.creates != 2 || lf.afterLimit != 0 {
		t.Fatalf("first run: %d created, %d waiting, %d creations sent, %d requests after the limit; want 1, 2, 2 and none", created, waiting, lf.creates, lf.afterLimit)
	}
	for _, ns := range []string{"pay", "shop"} {
		if g := namespaceGroup(t, first, ns); !strings.Contains(g.Waiting, "the next run goes on") || g.Git != nil && g.Git.Pushed {
			t.Errorf("first run: %s waits %q, git %+v; want the rate limit and the next run named, nothing pushed", ns, g.Waiting, g.Git)
		}
	}
	// The branches pushed with blog's were put back: no pull request
	// shows a commit its description does not speak of.
	if heads := remoteBranches(t, remote); len(heads) != 2 || !slices.Contains(heads, "main") || !slices.Contains(heads, namespaceGroup(t, first, "blog").Git.Branch) {
		t.Errorf("first run left branches %v, want main and blog's", heads)
	}
	if first.Dashboard != nil || lf.dashboard(t) != "" {
		t.Errorf("first run: dashboard %+v written while the forge asked to wait", first.Dashboard)
	}

	// The next run, a new process, the forge answering again.
	lf.mu.Lock()
	lf.limited = func(int) (bool, int) { return false, 0 }
	sentBefore := lf.sent
	lf.mu.Unlock()
	cfg.Forge = client()
	second := shopsPlan(cpus)
	if err := writeBack(ctx, newRun(cfg), second, log); err != nil {
		t.Fatalf("second run: %v", err)
	}
	for _, ns := range namespaces {
		g := namespaceGroup(t, second, ns)
		want := plan.PRCreated
		if ns == "blog" {
			want = plan.PRUnchanged
		}
		if g.Waiting != "" || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != want {
			t.Errorf("second run: %s: git %+v, waiting %q; want its pull request %s", ns, g.Git, g.Waiting, want)
		}
	}
	if n := len(lf.openPulls()); n != 3 || lf.creates != 4 {
		t.Errorf("second run: %d pull requests open, %d creations sent in all; want 3 and 4", n, lf.creates)
	}
	// A handful of requests a group and the dashboard's: no loop.
	if n := lf.sent - sentBefore; n > 20 {
		t.Errorf("second run sent %d requests, want a handful a group", n)
	}
	dash := lf.dashboard(t)
	for _, ns := range namespaces {
		if !strings.Contains(dash, "| namespace/"+ns+" | [#") {
			t.Errorf("second run: the dashboard does not list %s's pull request:\n%s", ns, dash)
		}
	}
}
