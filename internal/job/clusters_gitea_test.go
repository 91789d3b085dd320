//go:build integration

package job

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestWriteBackGiteaTwoClusters runs the jobs of two clusters over one
// repository on a real Gitea, two rounds each: the same application in
// the same namespace, each cluster with its own git-path, record and
// identity (as git-path gives it), its own CPU value. Each cluster's
// change goes to a branch and a pull request of its own, which holds its
// path's file changed and the other's as the base has it; the second
// round moves no branch; each cluster's dashboard lists its own pull
// request and not the other's. A third job that names no cluster, with
// the same git identity, finds the group branch of a fourth job of its
// own kind, which its record does not hold, and leaves it alone.
func TestWriteBackGiteaTwoClusters(t *testing.T) {
	ctx := t.Context()
	files := map[string]string{}
	for _, c := range []string{"staging", "production"} {
		files[c+"/shop/web.yaml"] = webDeployment
	}
	b := newGroupsBed(t, nil, files)
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	type cluster struct {
		name, cpu string
		cfg       Config
		rec       *memoryRecord
	}
	clusters := []*cluster{{name: "staging", cpu: "300m"}, {name: "production", cpu: "390m"}}
	for _, c := range clusters {
		c.rec = &memoryRecord{}
		c.cfg = b.cfg
		c.cfg.Path, c.cfg.Git.Cluster, c.cfg.Record = c.name, c.name, c.rec
		c.cfg.PullRequests = PullRequestPolicy{Dashboard: true}
	}
	branchOf := func(c *cluster) string { return c.cfg.Git.GroupBranch("namespace/shop") }
	if branchOf(clusters[0]) == branchOf(clusters[1]) {
		t.Fatalf("both clusters' group is on %s", branchOf(clusters[0]))
	}
	tips := map[string]string{}
	for round := 1; round <= 2; round++ {
		for _, c := range clusters {
			r := newRun(c.cfg)
			p := shopsPlan(map[string]string{"shop": c.cpu})
			if err := writeBack(ctx, r, p, log); err != nil {
				t.Fatalf("round %d, %s: %v", round, c.name, err)
			}
			if err := saveRecord(ctx, r, log); err != nil {
				t.Fatal(err)
			}
			g := namespaceGroup(t, p, "shop")
			if g.Git == nil || g.Git.Branch != branchOf(c) || g.Git.Pushed != (round == 1) {
				t.Errorf("round %d, %s: git %+v, want %s pushed in the first round alone", round, c.name, g.Git, branchOf(c))
			}
			for _, other := range clusters {
				content, commit := testbedtest.BranchFile(t, b.url, b.reader.auth, branchOf(c), other.name+"/shop/web.yaml")
				if changed := !strings.Contains(content, "cpu: 500m"); changed != (other == c) || (other == c && !strings.Contains(content, "cpu: "+c.cpu)) {
					t.Errorf("round %d: %s's branch holds %s's file:\n%s\nwant only its own changed, to %s", round, c.name, other.name, content, c.cpu)
				}
				if round == 1 {
					tips[c.name] = commit.Hash.String()
				} else if commit.Hash.String() != tips[c.name] {
					t.Errorf("round 2 moved %s's branch from %s to %s", c.name, tips[c.name], commit.Hash)
				}
			}
		}
	}
	prs := b.openPRs(t)
	if len(prs) != 2 {
		t.Fatalf("%d pull requests open, want one a cluster: %v", len(prs), prs)
	}
	issues, _, err := b.sdk.ListRepoIssues(b.srv.Username, "fleet", gitea.ListIssueOption{State: gitea.StateOpen, Type: gitea.IssueTypeIssue})
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 2 {
		t.Fatalf("%d dashboards, want one a cluster", len(issues))
	}
	for _, c := range clusters {
		pr := prs[branchOf(c)]
		if pr == nil || !strings.Contains(pr.Title, "in "+c.name+" on main for namespace/shop") {
			t.Fatalf("%s: pull request %v, want one titled for its path and group", c.name, pr)
		}
		var dash *gitea.Issue
		for _, is := range issues {
			if strings.Contains(is.Title, "for "+c.name+" on main") {
				dash = is
			}
		}
		if dash == nil {
			t.Fatalf("%s: no dashboard among %d issues", c.name, len(issues))
		}
		for _, other := range clusters {
			link := fmt.Sprintf("[#%d](", prs[branchOf(other)].Index)
			if has := strings.Contains(dash.Body, link); has != (other == c) {
				t.Errorf("%s's dashboard lists %s's pull request: %t, want %t:\n%s", c.name, other.name, has, other == c, dash.Body)
			}
		}
	}

	// Two jobs that name no cluster share a branch: the second refuses
	// the first's commit, which its record does not hold.
	first, second := b.cfg, b.cfg
	first.Path, first.Record = "staging", &memoryRecord{}
	second.Path, second.Record = "production", &memoryRecord{}
	if err := writeBack(ctx, newRun(first), shopsPlan(map[string]string{"shop": "300m"}), log); err != nil {
		t.Fatal(err)
	}
	shared := gitops.GroupBranch("recommend-job", "namespace/shop")
	_, before := testbedtest.BranchFile(t, b.url, b.reader.auth, shared, "staging/shop/web.yaml")
	p := shopsPlan(map[string]string{"shop": "390m"})
	err = writeBack(ctx, newRun(second), p, log)
	if !errors.Is(err, gitops.ErrForeignCommit) {
		t.Fatalf("the second job on a branch its record does not hold: %v, want it refused", err)
	}
	g := namespaceGroup(t, p, "shop")
	if g.Git == nil || !strings.Contains(g.Git.Stopped, shared) || !strings.Contains(g.Git.Stopped, before.Hash.String()[:12]) || !strings.Contains(g.Git.Stopped, "record does not hold") {
		t.Errorf("stopped %+v, want the branch, the commit and why named", g.Git)
	}
	if _, after := testbedtest.BranchFile(t, b.url, b.reader.auth, shared, "staging/shop/web.yaml"); after.Hash != before.Hash {
		t.Errorf("the refused job moved %s from %s to %s", shared, before.Hash, after.Hash)
	}
	if g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Action != plan.PRUnchanged {
		t.Errorf("the refused job touched the pull request: %+v", g.Git.PullRequest)
	}
}
