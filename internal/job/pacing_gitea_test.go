//go:build integration

package job

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestWriteBackGiteaPacesAFleet runs a first and a second run over 250
// namespace groups on a real Gitea with the default pacing (pr-per-run
// 10, pr-limit 20): the first run opens the 10 groups that save the most
// and the dashboard lists the others as waiting, with why; the second
// brings those 10 up to date, pushing nothing, and opens the next 10,
// the rest waiting on pr-limit. Only the groups that could open a pull
// request ask the forge for their last closed one.
func TestWriteBackGiteaPacesAFleet(t *testing.T) {
	const groups, perRun, limit = 250, 10, 20
	namespaces := make([]string, groups)
	cpus := map[string]string{}
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("ns%03d", i)
		cpus[namespaces[i]] = fmt.Sprintf("%dm", 100+i) // ns000 saves the most
	}
	b := newGroupsBed(t, namespaces, nil)
	cfg := b.cfg
	cfg.PullRequests = PullRequestPolicy{PerRun: perRun, Limit: limit, Dashboard: true, ClosedHold: 30 * 24 * time.Hour}
	counted := &lastClosedCounter{Forge: cfg.Forge}
	cfg.Forge = counted
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	dashboard := func() string {
		t.Helper()
		issues, _, err := b.sdk.ListRepoIssues(b.srv.Username, "fleet", gitea.ListIssueOption{State: gitea.StateOpen, Type: gitea.IssueTypeIssue})
		if err != nil || len(issues) != 1 {
			t.Fatalf("%d dashboards, %v; want one", len(issues), err)
		}
		return issues[0].Body
	}
	// count tells the groups of p apart: created, brought up to date
	// without a push, waiting (by why).
	count := func(p *plan.Plan) (created []string, unchanged int, waiting map[string]int) {
		waiting = map[string]int{}
		for _, g := range p.Groups {
			switch {
			case g.Waiting != "":
				waiting[g.Waiting]++
			case g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Action == plan.PRCreated:
				created = append(created, strings.TrimPrefix(g.Name, "namespace/"))
			case g.Git != nil && !g.Git.Pushed && g.Git.PullRequest != nil && g.Git.PullRequest.Action == plan.PRUnchanged:
				unchanged++
			default:
				t.Errorf("group %s: git %+v, held %q", g.Name, g.Git, g.Held)
			}
		}
		return created, unchanged, waiting
	}

	first := shopsPlan(cpus)
	if err := writeBack(t.Context(), newRun(cfg), first, log); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if n := counted.calls.Swap(0); n != perRun {
		t.Errorf("first run asked for %d groups' last closed pull request, want the %d that could open one", n, perRun)
	}
	created, unchanged, waiting := count(first)
	if want := namespaces[:perRun]; strings.Join(created, ",") != strings.Join(want, ",") || unchanged != 0 || waiting["pr-per-run 10 reached"] != groups-perRun {
		t.Fatalf("first run: created %v, %d unchanged, waiting %v; want %v created and the other %d waiting on pr-per-run", created, unchanged, waiting, want, groups-perRun)
	}
	if n := len(b.openPRs(t)); n != perRun {
		t.Errorf("first run: %d pull requests open on Gitea, want %d", n, perRun)
	}
	body := dashboard()
	// The dashboard shows 200 rows a section, and how many more.
	if rows := strings.Count(body, "| pr-per-run 10 reached |"); rows != 200 || !strings.Contains(body, "and 40 more.") || !strings.Contains(body, "| namespace/ns010 | 0.39 | pr-per-run 10 reached |") {
		t.Errorf("first run: the dashboard lists %d groups waiting on pr-per-run, want 200 and 40 more, ns010 among them:\n%s", rows, body)
	}
	for _, ns := range namespaces[:perRun] {
		if !strings.Contains(body, "| namespace/"+ns+" | [#") {
			t.Errorf("first run: the dashboard does not list %s's pull request", ns)
		}
	}

	second := shopsPlan(cpus)
	if err := writeBack(t.Context(), newRun(cfg), second, log); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := counted.calls.Swap(0); n != limit-perRun {
		t.Errorf("second run asked for %d groups' last closed pull request, want the %d that could open one", n, limit-perRun)
	}
	created, unchanged, waiting = count(second)
	if want := namespaces[perRun:limit]; strings.Join(created, ",") != strings.Join(want, ",") || unchanged != perRun || waiting["pr-limit 20 reached"] != groups-limit {
		t.Fatalf("second run: created %v, %d unchanged, waiting %v; want %v created, the first %d unchanged, the other %d waiting on pr-limit", created, unchanged, waiting, want, perRun, groups-limit)
	}
	if n := len(b.openPRs(t)); n != limit {
		t.Errorf("second run: %d pull requests open on Gitea, want %d", n, limit)
	}
	if body := dashboard(); strings.Count(body, "| pr-limit 20 reached |") != 200 || strings.Contains(body, "pr-per-run") {
		t.Errorf("second run: the dashboard does not list the groups waiting on pr-limit alone:\n%s", body)
	}
}

// lastClosedCounter counts the calls of LastClosed.
type lastClosedCounter struct {
	forge.Forge
	calls atomic.Int32
}

func (c *lastClosedCounter) LastClosed(ctx context.Context, head, base, author string) (*forge.PullRequest, error) {
	c.calls.Add(1)
	return c.Forge.LastClosed(ctx, head, base, author)
}
