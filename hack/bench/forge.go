package bench

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
)

// The forges the job can open its pull requests on in the benchmark.
const (
	// ForgeNone runs the job without a forge: branches, no pull request.
	ForgeNone = "none"
	// ForgeGitea holds the repository on a real Gitea, where the job
	// opens its pull requests.
	ForgeGitea = "gitea"
)

// giteaAPIPrefix is the path of Gitea's API; every other path of its
// server the job asks for is git's smart HTTP.
const giteaAPIPrefix = "/api/v1/"

// The classes of forge API endpoints the run's calls are counted by.
const (
	// ForgePulls are pull requests: listed, read, created, edited, their
	// reviewers asked or withdrawn.
	ForgePulls = "pulls"
	// ForgeIssues are issues and their comments and timelines, a pull
	// request's among them (who closed it), and the dashboard.
	ForgeIssues = "issues"
	// ForgeUsers are accounts: the job's own, users, organizations and a
	// repository's collaborators (who may write).
	ForgeUsers = "users"
	// ForgeOther is the rest: the server's version, labels, the
	// repository.
	ForgeOther = "other"
)

// ForgeCalls counts a run's requests to the forge's API.
type ForgeCalls struct {
	Total int `json:"total"`
	// ByMethod counts them by HTTP method, ByClass by endpoint class
	// (ForgePulls, ...), ByCall by both, e.g. "GET pulls".
	ByMethod map[string]int `json:"byMethod"`
	ByClass  map[string]int `json:"byClass"`
	ByCall   map[string]int `json:"byCall"`
	// Failed counts the answers of status 400 or above, some of which
	// the job expects (a 404 for what is not there).
	Failed int `json:"failed"`
	// Bytes are the bytes of the answers' bodies.
	Bytes int64 `json:"bytesReceived"`
}

// Forge is what a run asked of the forge and what came of it.
type Forge struct {
	// Kind is the forge, e.g. ForgeGitea.
	Kind  string     `json:"kind"`
	Calls ForgeCalls `json:"calls"`
	// GitRequests are the run's git smart-HTTP requests to the same
	// server, which are not forge calls.
	GitRequests int `json:"gitRequests"`
	// Groups are the run's pull request groups (one, the run's own
	// branch, when it does not group), WithChanges those with a value to
	// write.
	Groups      int `json:"groups"`
	WithChanges int `json:"groupsWithChanges"`
	// Opened counts the pull requests the run created, Synced every one
	// it synced (created, updated, unchanged or closed).
	Opened int `json:"opened"`
	Synced int `json:"synced"`
	// Waiting counts the groups a limit kept from their pull request this
	// run (pr-limit, pr-per-run, the forge's rate limit), WaitingFor them
	// by reason; Held those a person's closing of their last pull request
	// holds.
	Waiting    int            `json:"waiting"`
	WaitingFor map[string]int `json:"waitingFor,omitempty"`
	Held       int            `json:"held"`
	// PerGroup is the forge calls per group with changes, PerOpened per
	// pull request opened; zero when there is none.
	PerGroup  float64 `json:"callsPerGroup"`
	PerOpened float64 `json:"callsPerOpened"`
}

// forgeClass is the endpoint class of a path of the forge's API, the
// API's prefix cut off: repos/{owner}/{repo}/pulls/3 is ForgePulls.
func forgeClass(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "user", "users", "orgs":
		return ForgeUsers
	case "repos":
		if len(parts) < 4 {
			return ForgeOther
		}
		switch parts[3] {
		case "pulls":
			return ForgePulls
		case "issues":
			return ForgeIssues
		case "collaborators":
			return ForgeUsers
		}
	}
	return ForgeOther
}

// countForge counts the forge API requests reqs, whose paths start with
// prefix.
func countForge(reqs []Request, prefix string) ForgeCalls {
	c := ForgeCalls{ByMethod: map[string]int{}, ByClass: map[string]int{}, ByCall: map[string]int{}}
	for _, r := range reqs {
		class := forgeClass(strings.TrimPrefix(r.Path, prefix))
		c.Total++
		c.ByMethod[r.Method]++
		c.ByClass[class]++
		c.ByCall[r.Method+" "+class]++
		if r.Status >= 400 {
			c.Failed++
		}
		c.Bytes += r.Bytes
	}
	return c
}

// forgeFigures sums up a run on a forge of kind: its API requests, its
// git requests to the same server, and what its report says of the groups
// and their pull requests.
func forgeFigures(kind string, api []Request, gitRequests int, rep Report) *Forge {
	f := &Forge{Kind: kind, Calls: countForge(api, giteaAPIPrefix), GitRequests: gitRequests, WaitingFor: map[string]int{}}
	changed := map[string]bool{} // groups with a value to write
	for _, rr := range rep.ResourceRecommends {
		for _, c := range rr.Containers {
			for _, r := range c.Resources {
				if r.Changed {
					changed[rr.Group] = true
				}
			}
		}
	}
	f.Groups, f.WithChanges = len(rep.Groups), len(changed)
	if len(rep.Groups) == 0 && rep.Git != nil {
		// Without grouping, the run's own branch is its one group.
		f.Groups = 1
	}
	for _, g := range rep.Groups {
		if g.Waiting != "" {
			f.Waiting++
			f.WaitingFor[g.Waiting]++
		}
		if g.Held != "" {
			f.Held++
		}
	}
	if g := rep.Git; g != nil {
		prs := g.PullRequests
		if len(prs) == 0 && g.PullRequest != nil {
			prs = []ReportPullRequest{*g.PullRequest}
		}
		for _, pr := range prs {
			f.Synced++
			if pr.Action == plan.PRCreated {
				f.Opened++
			}
		}
	}
	if f.WithChanges > 0 {
		f.PerGroup = float64(f.Calls.Total) / float64(f.WithChanges)
	}
	if f.Opened > 0 {
		f.PerOpened = float64(f.Calls.Total) / float64(f.Opened)
	}
	return f
}

// summary is the forge's line below the table.
func (f *Forge) summary() string {
	c := f.Calls
	perGroup, perOpened := "-", "-"
	if f.PerGroup > 0 {
		perGroup = strconv.FormatFloat(f.PerGroup, 'f', 2, 64)
	}
	if f.PerOpened > 0 {
		perOpened = strconv.FormatFloat(f.PerOpened, 'f', 2, 64)
	}
	why := ""
	if len(f.WaitingFor) > 0 {
		why = " (" + formatCounts(f.WaitingFor, ": ", "; ") + ")"
	}
	return fmt.Sprintf("forge %s: %s API requests (%s received, %d answered 400 or above): %s; %s; %s. %s groups, %s with changes: %s pull requests opened (%s synced), %s waiting%s, %s held; %s forge requests per group with changes, %s per pull request opened; %s git requests to the same server, not counted as forge requests",
		f.Kind, formatCount(int64(c.Total)), formatBytes(c.Bytes), c.Failed, formatCounts(c.ByMethod, " ", ", "), formatCounts(c.ByClass, " ", ", "), formatCounts(c.ByCall, " ", ", "),
		formatCount(int64(f.Groups)), formatCount(int64(f.WithChanges)), formatCount(int64(f.Opened)), formatCount(int64(f.Synced)),
		formatCount(int64(f.Waiting)), why, formatCount(int64(f.Held)), perGroup, perOpened, formatCount(int64(f.GitRequests)))
}

// formatCounts writes counts by key, in the keys' order, each key and its
// count apart by sep, joined by join: "GET 3, POST 1" with " " and ", ".
func formatCounts(counts map[string]int, sep, join string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, k+sep+formatCount(int64(counts[k])))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, join)
}

// startGitea starts a Gitea in the bed's directory, which holds the
// fleet's repository in place of the git server.
func (e *env) startGitea(ctx context.Context) error {
	g, err := testbed.StartGitea(ctx, e.opts.RepoRoot, filepath.Join(e.opts.WorkDir, "bed", "gitea"))
	if err != nil {
		return err
	}
	e.gitea = g
	return nil
}

// createRepo creates the fleet's repository on the git server, or on
// Gitea with a forge, and sets the remote the job and the floor reach it
// at, through the proxy.
func (e *env) createRepo(ctx context.Context) error {
	files := e.fleet.RepositoryFiles()
	if e.gitea == nil {
		if _, err := e.bed.Git.CreateRepo(ctx, repoName, files); err != nil {
			return err
		}
		e.remote = GitRemote{Git: e.bed.Tools.Git, URL: e.git.URL + "/" + repoName + ".git", Username: e.bed.Git.Username, Password: e.bed.Git.Password()}
		return nil
	}
	clone, err := e.gitea.CreateRepo(ctx, repoName, files)
	if err != nil {
		return err
	}
	u, err := url.Parse(clone)
	if err != nil {
		return fmt.Errorf("gitea's clone url: %w", err)
	}
	e.forgeRepo = strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	// Gitea takes the token as git's password, as a user gives it.
	e.remote = GitRemote{Git: e.bed.Tools.Git, URL: e.git.URL + u.Path, Username: e.gitea.Username, Password: e.gitea.Token()}
	return nil
}

// forgeArgs are the job's forge flags, none without a forge, and the
// environment that holds its token, in no command line.
func (e *env) forgeArgs() (args, env []string) {
	if e.gitea == nil {
		return nil, nil
	}
	args = []string{"--forge", ForgeGitea, "--forge-api-url", e.git.URL, "--forge-repository", e.forgeRepo}
	return args, []string{"RECOMMEND_FORGE_TOKEN=" + e.gitea.Token()}
}
