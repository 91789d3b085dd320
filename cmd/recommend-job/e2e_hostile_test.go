//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// apiManifest is the repository's file for the web-api Deployment, whose
// pods webHistory holds next to web's.
const apiManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-api
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web-api
  template:
    metadata:
      labels:
        app: web-api
    spec:
      containers:
      - name: app
        image: api:1.0
        resources:
          requests:
            cpu: "1"
            memory: 1Gi
`

// teamRecommend is a ResourceRecommend of the Deployment name, labelled
// team: team.
func teamRecommend(name, team string) string {
	return strings.Replace(strings.ReplaceAll(webRecommend, "name: web\n", "name: "+name+"\n"),
		"  namespace: shop\n", "  namespace: shop\n  labels:\n    team: \""+team+"\"\n", 1)
}

// hostileBed is the test bed, a Gitea holding the shop repository with
// extra files, and the cluster's web and web-api ResourceRecommends of the
// teams given, for a run grouped by team.
type hostileBed struct {
	forge *testbed.Gitea
	url   string
	sdk   *gitea.Client
	args  []string
}

func newHostileBed(t *testing.T, ctx context.Context, webTeam, apiTeam string, extra map[string]string) *hostileBed {
	t.Helper()
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(time.Now().Truncate(time.Minute))})
	forge := testbedtest.Gitea(t)
	objs := shopObjects(t, true)
	cluster := [][]byte{objs[0], []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"),
		[]byte(teamRecommend("web", webTeam)), []byte(teamRecommend("web-api", apiTeam)), objs[2], []byte(apiManifest)}
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), cluster...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	files := map[string]string{"clusters/prod/web.yaml": webManifest, "clusters/prod/web-api.yaml": apiManifest}
	for name, content := range extra {
		files[name] = content
	}
	url, err := forge.CreateRepo(ctx, "gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return &hostileBed{forge: forge, url: url, sdk: sdk, args: giteaRunArgs(t, bed, forge, url, "--pr-group-by", "label:team")}
}

// run runs the job and returns its exit code and report.
func (b *hostileBed) run(t *testing.T, ctx context.Context) (int, *plan.Plan, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, b.args, &stdout, &stderr)
	rep := &plan.Plan{}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil && code == exitOK {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}
	return code, rep, stderr.String()
}

// openPRs are the open pull requests by head branch.
func (b *hostileBed) openPRs(t *testing.T) map[string]*gitea.PullRequest {
	t.Helper()
	prs, _, err := b.sdk.ListRepoPullRequests(b.forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*gitea.PullRequest{}
	for _, pr := range prs {
		out[pr.Head.Ref] = pr
	}
	return out
}

// group is the report's group named name.
func group(t *testing.T, rep *plan.Plan, name string) plan.Group {
	t.Helper()
	for _, g := range rep.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in the report: %+v", name, rep.Groups)
	return plan.Group{}
}

// TestEndToEndHostilePath runs the job, grouped by team, on a repository
// that holds a file whose name has a newline, which git allows and no
// checkout through go-git's worktree takes: each group's changes are
// pushed and its pull request opened, each group's git.skipped lists the
// file and why, and each pushed branch holds the file as the base has it.
func TestEndToEndHostilePath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const hostile = "clusters/prod/notes\n.yaml"
	b := newHostileBed(t, ctx, "storefront", "payments", map[string]string{hostile: "# a tenant's note\n"})

	code, rep, logs := b.run(t, ctx)
	if code != exitOK {
		t.Fatalf("run() = %d, want %d; stderr:\n%s", code, exitOK, logs)
	}
	prs := b.openPRs(t)
	auth := &githttp.BasicAuth{Username: b.forge.Username, Password: b.forge.Password()}
	base := entryAt(t, b.url, auth, "main", hostile)
	for _, name := range []string{"team=storefront", "team=payments"} {
		g := group(t, rep, name)
		if g.Git == nil || !g.Git.Pushed || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
			t.Errorf("%s: git = %+v, want a push and a pull request created", name, g.Git)
			continue
		}
		if prs[g.Git.Branch] == nil {
			t.Errorf("%s: no open pull request from %s", name, g.Git.Branch)
		}
		want := plan.SkippedFile{File: hostile, Reason: "not checked out: the name holds a control character"}
		if len(g.Git.Skipped) != 1 || g.Git.Skipped[0] != want {
			t.Errorf("%s: git.skipped = %q, want %q", name, g.Git.Skipped, want)
		}
		if got := entryAt(t, b.url, auth, g.Git.Branch, hostile); got != base {
			t.Errorf("%s: %q on %s = %v, want the base's %v", name, hostile, g.Git.Branch, got, base)
		}
	}
	if len(prs) != 2 {
		t.Errorf("%d pull requests open, want 2", len(prs))
	}
}

// TestEndToEndGroupNameNotARef runs the job grouped by a team label whose
// value, a..b, is a valid label value and no valid part of a ref: its
// group gets a branch git takes and a pull request that names it, as the
// other group does, and a second run finds the same branch and pull
// request.
func TestEndToEndGroupNameNotARef(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := newHostileBed(t, ctx, "a..b", "payments", nil)

	code, rep, logs := b.run(t, ctx)
	if code != exitOK {
		t.Fatalf("run() = %d, want %d; stderr:\n%s", code, exitOK, logs)
	}
	prs := b.openPRs(t)
	branches := map[string]string{}
	for _, name := range []string{"team=a..b", "team=payments"} {
		g := group(t, rep, name)
		if g.Git == nil || !g.Git.Pushed || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated {
			t.Errorf("%s: git = %+v, want a push and a pull request created", name, g.Git)
			continue
		}
		branches[name] = g.Git.Branch
		if out, err := exec.Command("git", "check-ref-format", "--branch", g.Git.Branch).CombinedOutput(); err != nil {
			t.Errorf("%s: git check-ref-format --branch %s: %v: %s", name, g.Git.Branch, err, out)
		}
		pr := prs[g.Git.Branch]
		if pr == nil {
			t.Errorf("%s: no open pull request from %s", name, g.Git.Branch)
			continue
		}
		if !strings.HasSuffix(pr.Title, " for "+name) || !strings.Contains(pr.Body, "\nGroup: `"+name+"`\n") {
			t.Errorf("%s: pull request %q does not name its group whole:\n%s", name, pr.Title, pr.Body)
		}
	}
	if len(prs) != 2 {
		t.Errorf("%d pull requests open, want 2", len(prs))
	}

	// The branch is the name's, run after run.
	code, again, logs := b.run(t, ctx)
	if code != exitOK {
		t.Fatalf("second run() = %d, want %d; stderr:\n%s", code, exitOK, logs)
	}
	// Its pull request is the same one: unchanged, or updated when the
	// second run's window crossed a step of the CPU history and the
	// evidence moved with it.
	for name, branch := range branches {
		g := group(t, again, name)
		if g.Git == nil || g.Git.Branch != branch || g.Git.PullRequest == nil ||
			g.Git.PullRequest.Action != plan.PRUnchanged && g.Git.PullRequest.Action != plan.PRUpdated {
			t.Errorf("%s: second run git = %+v, want %s and its pull request kept", name, g.Git, branch)
		}
	}
	if n := len(b.openPRs(t)); n != 2 {
		t.Errorf("%d pull requests open after the second run, want 2", n)
	}
}

// entryAt is the tree entry at name (slash-separated) on branch, read from
// the trees themselves: go-git's lookup by path refuses a hostile name.
func entryAt(t *testing.T, url string, auth *githttp.BasicAuth, branch, name string) object.TreeEntry {
	t.Helper()
	repo, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: url, Auth: auth,
		ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true, NoCheckout: true})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(name, "/")
	for i, part := range parts {
		var found *object.TreeEntry
		for _, e := range tree.Entries {
			if e.Name == part {
				found = &e
				break
			}
		}
		if found == nil {
			t.Fatalf("%q not on %s", name, branch)
		}
		if i == len(parts)-1 {
			return *found
		}
		if tree, err = repo.TreeObject(found.Hash); err != nil {
			t.Fatal(err)
		}
	}
	return object.TreeEntry{}
}
