package bench

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestForgeClass(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"version", ForgeOther},
		{"user", ForgeUsers},
		{"users/testbed/tokens", ForgeUsers},
		{"orgs/testbed", ForgeUsers},
		{"repos/testbed/bench", ForgeOther},
		{"repos/testbed/bench/labels", ForgeOther},
		{"repos/testbed/bench/pulls", ForgePulls},
		{"repos/testbed/bench/pulls/7", ForgePulls},
		{"repos/testbed/bench/pulls/7/requested_reviewers", ForgePulls},
		{"repos/testbed/bench/issues", ForgeIssues},
		{"repos/testbed/bench/issues/7/timeline", ForgeIssues},
		{"repos/testbed/bench/collaborators/ana/permission", ForgeUsers},
		{"/repos/testbed/bench/pulls/", ForgePulls},
		{"", ForgeOther},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := forgeClass(tc.path); got != tc.want {
				t.Errorf("forgeClass(%q) = %s, want %s", tc.path, got, tc.want)
			}
		})
	}
}

// forgeReport is a grouped run's report: three groups with changes, of
// which one opened its pull request, one updated its own and one waits,
// and a fourth without changes.
const forgeReport = `{
  "resourceRecommends": [
    {"namespace": "a", "name": "w", "group": "namespace/a", "containers": [{"resources": [{"resource": "cpu", "changed": true}]}]},
    {"namespace": "b", "name": "w", "group": "namespace/b", "containers": [{"resources": [{"resource": "cpu", "changed": false}, {"resource": "memory", "changed": true}]}]},
    {"namespace": "c", "name": "w", "group": "namespace/c", "containers": [{"resources": [{"resource": "cpu", "changed": true}]}]},
    {"namespace": "d", "name": "w", "group": "namespace/d", "containers": [{"resources": [{"resource": "cpu", "changed": false}]}]}
  ],
  "git": {"branch": "", "pushed": true, "pullRequests": [{"number": 1, "action": "created"}, {"number": 2, "action": "updated"}]},
  "groups": [
    {"name": "namespace/a"}, {"name": "namespace/b"},
    {"name": "namespace/c", "waiting": "pr-per-run 10 reached"},
    {"name": "namespace/d"}
  ]
}`

func TestForgeFigures(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	req := func(method, path string, status int) Request {
		return Request{Server: ServerForge, Method: method, Path: path, Status: status, Start: t0, End: t0, Bytes: 100}
	}
	api := []Request{
		req("GET", "/api/v1/version", 200),
		req("GET", "/api/v1/repos/testbed/bench/pulls", 200),
		req("GET", "/api/v1/user", 200),
		req("GET", "/api/v1/repos/testbed/bench/pulls", 200),
		req("POST", "/api/v1/repos/testbed/bench/pulls", 201),
		req("PATCH", "/api/v1/repos/testbed/bench/pulls/2", 200),
		req("GET", "/api/v1/repos/testbed/bench/collaborators/ana/permission", 404),
		req("GET", "/api/v1/repos/testbed/bench/issues/2/timeline", 200),
		req("GET", "/api/v1/user", 200),
	}
	var rep Report
	if err := json.Unmarshal([]byte(forgeReport), &rep); err != nil {
		t.Fatal(err)
	}
	f := forgeFigures(ForgeGitea, api, 5, rep)
	c := f.Calls
	if c.Total != 9 || c.Failed != 1 || c.Bytes != 900 {
		t.Errorf("calls: %d, %d failed, %d bytes; want 9, 1 failed, 900 bytes", c.Total, c.Failed, c.Bytes)
	}
	for _, tc := range []struct {
		name      string
		got, want map[string]int
	}{
		{"by method", c.ByMethod, map[string]int{"GET": 7, "POST": 1, "PATCH": 1}},
		{"by class", c.ByClass, map[string]int{ForgeOther: 1, ForgePulls: 4, ForgeUsers: 3, ForgeIssues: 1}},
		{"by call", c.ByCall, map[string]int{"GET other": 1, "GET pulls": 2, "POST pulls": 1, "PATCH pulls": 1, "GET users": 3, "GET issues": 1}},
		{"waiting for", f.WaitingFor, map[string]int{"pr-per-run 10 reached": 1}},
	} {
		if !maps.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if f.Groups != 4 || f.WithChanges != 3 || f.Opened != 1 || f.Synced != 2 || f.Waiting != 1 || f.Held != 0 || f.GitRequests != 5 {
		t.Errorf("figures %+v; want 4 groups, 3 with changes, 1 opened, 2 synced, 1 waiting, none held, 5 git requests", f)
	}
	if f.PerGroup != 3 || f.PerOpened != 9 {
		t.Errorf("per group %g, per opened %g; want 3 and 9", f.PerGroup, f.PerOpened)
	}
	line := f.summary()
	for _, want := range []string{"forge gitea: 9 API requests", "GET 7, PATCH 1, POST 1", "issues 1, other 1, pulls 4, users 3",
		"1 pull requests opened (2 synced), 1 waiting (pr-per-run 10 reached: 1)", "3.00 forge requests per group with changes, 9.00 per pull request opened"} {
		if !strings.Contains(line, want) {
			t.Errorf("summary lacks %q:\n%s", want, line)
		}
	}
}

// TestForgeFiguresOneBranch reads a run without groups: its own branch
// is its one group, its pull request its one.
func TestForgeFiguresOneBranch(t *testing.T) {
	var rep Report
	body := `{"resourceRecommends": [{"containers": [{"resources": [{"changed": true}]}]}],
		"git": {"branch": "recommend-job", "pushed": true, "pullRequest": {"number": 1, "action": "created"}}}`
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	f := forgeFigures(ForgeGitea, []Request{{Method: "GET", Path: "/api/v1/version"}, {Method: "POST", Path: "/api/v1/repos/o/r/pulls"}}, 3, rep)
	if f.Groups != 1 || f.WithChanges != 1 || f.Opened != 1 || f.PerGroup != 2 || f.PerOpened != 2 {
		t.Errorf("figures %+v; want one group with changes, its pull request opened, 2 calls each", f)
	}
	if f := forgeFigures(ForgeGitea, nil, 0, Report{}); f.PerGroup != 0 || f.PerOpened != 0 || !strings.Contains(f.summary(), "- forge requests per group") {
		t.Errorf("a run that reached nothing: %+v, %s", f, f.summary())
	}
}

// TestForgeProxy sends a forge's API call and a git request through one
// proxy: each is recorded for its server.
func TestForgeProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	defer upstream.Close()
	rec := &Recorder{}
	p, err := StartForgeProxy(upstream.URL, giteaAPIPrefix, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	from := time.Now()
	for _, path := range []string{"/api/v1/version", "/testbed/bench.git/info/refs?service=git-upload-pack", "/api/v1/repos/testbed/bench/pulls"} {
		resp, err := http.Get(p.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	to := time.Now().Add(time.Second)
	// The proxy records a request once its answer is sent, which the
	// client may have read before.
	var forge, git []string
	for deadline := time.Now().Add(5 * time.Second); len(forge)+len(git) < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		forge, git = nil, nil
		for _, r := range rec.Requests(ServerForge, from, to) {
			forge = append(forge, r.Path)
		}
		for _, r := range rec.Requests(ServerGit, from, to) {
			git = append(git, r.Path)
		}
	}
	if strings.Join(forge, " ") != "/api/v1/version /api/v1/repos/testbed/bench/pulls" || strings.Join(git, " ") != "/testbed/bench.git/info/refs" {
		t.Errorf("recorded forge %q and git %q; want the API's two and git's one", forge, git)
	}
}

// TestStageRowsForge attributes forge calls to the stages they started
// in, beside git's requests, which alone cut render out of git.
func TestStageRowsForge(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	logged := []StageLog{{Name: "history", End: at(1000), Took: time.Second}, {Name: "git", End: at(2000), Took: time.Second}}
	git := []Request{
		{Method: "GET", Path: "/testbed/bench.git/info/refs", Query: "service=git-upload-pack", Start: at(1010), End: at(1020), Bytes: 10},
		{Method: "POST", Path: "/testbed/bench.git/git-upload-pack", Start: at(1050), End: at(1100), Bytes: 1000},
		{Method: "GET", Path: "/testbed/bench.git/info/refs", Query: "service=git-receive-pack", Start: at(1820), End: at(1830), Bytes: 10},
		{Method: "POST", Path: "/testbed/bench.git/git-receive-pack", Start: at(1840), End: at(1900), Bytes: 10},
	}
	forge := []Request{
		{Method: "GET", Path: "/api/v1/repos/testbed/bench/pulls", Start: at(1005), End: at(1008), Bytes: 1},
		{Method: "GET", Path: "/api/v1/user", Start: at(1300), End: at(1310), Bytes: 2},
		{Method: "GET", Path: "/api/v1/repos/testbed/bench/pulls", Start: at(1320), End: at(1330), Bytes: 4},
		{Method: "POST", Path: "/api/v1/repos/testbed/bench/pulls", Start: at(1950), End: at(1990), Bytes: 8},
	}
	stages := Timeline(at(0), at(2000), logged, git)
	rows, total := stageRows(stages, &JobRun{Start: at(0), End: at(2000)}, nil, nil, git, forge, nil)
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Name] = r
	}
	render, gitRow := got[StageRender], got[StageGit]
	if time.Duration(render.Wall) != 720*time.Millisecond || render.ForgeRequests != 2 || render.Bytes != 6 || !strings.Contains(render.Note, "forge calls") {
		t.Errorf("render = %+v; want 720ms, the two forge calls made in it, their 6 bytes, and a note that says so", render)
	}
	if gitRow.ForgeRequests != 2 || gitRow.Bytes != 1039 {
		t.Errorf("git = %+v; want the forge calls before the clone and after the push, 2, and 1,039 bytes", gitRow)
	}
	if total.ForgeRequests != 4 {
		t.Errorf("total = %+v; want 4 forge requests", total)
	}
}

// TestForgeColumn shows the forge's requests in the table only when the
// run had a forge.
func TestForgeColumn(t *testing.T) {
	r := &Result{N: 10, Total: Row{Name: "total", ForgeRequests: 7}}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "forge") {
		t.Errorf("without a forge, the table speaks of one:\n%s", b.String())
	}
	r.Forge = &Forge{Kind: ForgeGitea}
	b.Reset()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| apiserver requests | forge requests | PromQL queries |", "| total (VmHWM) | - | 0 | 7 | 0 |", "forge gitea: 0 API requests"} {
		if !strings.Contains(out, want) {
			t.Errorf("with a forge, the markdown lacks %q:\n%s", want, out)
		}
	}
}
