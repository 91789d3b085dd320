//go:build integration

package job

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/testbed"
)

// fetchCounter counts the fetches and the pushes (git-upload-pack and
// git-receive-pack requests that send objects) in a git server's request
// log.
type fetchCounter struct {
	mu              sync.Mutex
	fetches, pushes int
}

func (c *fetchCounter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !strings.Contains(line, "POST "):
		case strings.HasSuffix(line, "/git-upload-pack"):
			c.fetches++
		case strings.HasSuffix(line, "/git-receive-pack"):
			c.pushes++
		}
	}
	return len(b), nil
}

// take returns the fetches counted since the last take, and forgets the
// pushes.
func (c *fetchCounter) take() int {
	n, _ := c.takeBoth()
	return n
}

// takeBoth returns the fetches and the pushes counted since the last
// take.
func (c *fetchCounter) takeBoth() (fetches, pushes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fetches, pushes = c.fetches, c.pushes
	c.fetches, c.pushes = 0, 0
	return fetches, pushes
}

// TestGroupsShareOneClone writes three groups, two of whose Deployments
// share a file: the run fetches the repository once and pushes once, and
// each group's branch holds its own edit only; the next run reads the branches' tips
// in one more fetch, not one each, and pushes nothing.
func TestGroupsShareOneClone(t *testing.T) {
	ctx := t.Context()
	counter := &fetchCounter{}
	srv := startGitServer(t, testbed.GitLog(counter))
	in := func(ns string) string { return strings.Replace(webDeployment, "namespace: shop", "namespace: "+ns, 1) }
	url, err := srv.CreateRepo(ctx, "org/fleet", map[string]string{
		"clusters/shared.yaml":   in("blog") + "---\n" + in("shop"),
		"clusters/news/web.yaml": in("news"),
	})
	if err != nil {
		t.Fatal(err)
	}
	counter.take()
	cfg := Config{Path: "clusters", GroupBy: gitops.GroupBy{Kind: "namespace"}, Git: gitops.Options{
		URL: url, BaseBranch: "main", PushBranch: "recommend-job", Username: "bot", Token: gitToken,
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com",
	}}
	cpus := map[string]string{"blog": "390m", "news": "300m", "shop": "250m"}
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))

	p := shopsPlan(cpus)
	if err := writeBack(ctx, newRun(cfg), p, log); err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	if fetches, pushes := counter.takeBoth(); fetches != 1 || pushes != 1 {
		t.Errorf("first run fetched %d times and pushed %d, want one clone and one push for its 3 groups", fetches, pushes)
	}
	reader := &fixture{url: url, auth: &githttp.BasicAuth{Username: "bot", Password: gitToken}}
	for _, g := range p.Groups {
		if g.Git == nil || !g.Git.Pushed {
			t.Fatalf("group %s: git %+v, want pushed", g.Name, g.Git)
		}
		ns := strings.TrimPrefix(g.Name, "namespace/")
		shared, _ := reader.branchFile(t, g.Git.Branch, "clusters/shared.yaml")
		news, _ := reader.branchFile(t, g.Git.Branch, "clusters/news/web.yaml")
		for _, other := range []string{"blog", "news", "shop"} {
			want := "500m"
			if other == ns {
				want = cpus[ns]
			}
			got := strings.Contains(news, "cpu: "+want)
			if other != "news" {
				got = strings.Contains(shared, "namespace: "+other+"\n") && docOf(shared, other, "cpu: "+want)
			}
			if !got {
				t.Errorf("branch of %s: %s's cpu is not %s:\n%s\n---\n%s", ns, other, want, shared, news)
			}
		}
	}

	counter.take() // the reads above
	again := shopsPlan(cpus)
	if err := writeBack(ctx, newRun(cfg), again, log); err != nil {
		t.Fatalf("second writeBack() error = %v", err)
	}
	if again.Git == nil || again.Git.Pushed {
		t.Errorf("second run git = %+v, want nothing pushed", again.Git)
	}
	if n := counter.take(); n != 2 {
		t.Errorf("second run fetched %d times, want one clone and one fetch of the 3 branches' tips", n)
	}
}

// docOf reports whether the document of multi-document yaml in namespace
// ns holds want.
func docOf(yaml, ns, want string) bool {
	for _, doc := range strings.Split(yaml, "\n---\n") {
		if strings.Contains(doc, "namespace: "+ns+"\n") {
			return strings.Contains(doc, want)
		}
	}
	return false
}

// TestGroupsStartAfreshWhenTheBaseMoves moves main under the push of the
// groups' branches: every group renders again on one fresh clone, and
// every branch is on the moved main.
func TestGroupsStartAfreshWhenTheBaseMoves(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.GroupBy = gitops.GroupBy{Kind: "namespace"}
	f.pushAs(t, "alice", "main", "clusters/prod/blog.yaml", strings.Replace(webDeployment, "namespace: shop", "namespace: blog", 1))
	p := shopsPlan(map[string]string{"blog": "390m", "shop": "250m"})
	r := newRun(cfg)
	pushed := 0
	var moved string
	r.beforePush = func(attempt int) {
		if pushed++; pushed == 1 {
			moved = f.pushAs(t, "alice", "main", "README.md", "fleet, now with docs\n").String()
		}
	}
	if err := writeBack(t.Context(), r, p, f.log); err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	if moved == "" {
		t.Fatal("main never moved")
	}
	attempts := 0
	for _, g := range p.Groups {
		if g.Git == nil || !g.Git.Pushed {
			t.Fatalf("group %s: git %+v, want pushed", g.Name, g.Git)
		}
		attempts += g.Git.Attempts
		readme, tip := f.branchFile(t, g.Git.Branch, "README.md")
		if readme != "fleet, now with docs\n" || len(tip.ParentHashes) != 1 || tip.ParentHashes[0].String() != moved {
			t.Errorf("group %s: README %q on parents %v, want main's new one at %s", g.Name, readme, tip.ParentHashes, moved)
		}
	}
	// Each group's second attempt is on the fresh clone.
	if attempts != 4 {
		t.Errorf("%d attempts in all, want 4", attempts)
	}
}

// TestGroupsOneBranchMovesUnderThePush has another run of the job push to
// one group's branch while this run's groups wait for their push: the
// other group lands in the one push, and the moved one alone renders
// again on a fresh clone and replaces the other run's commit.
func TestGroupsOneBranchMovesUnderThePush(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.GroupBy = gitops.GroupBy{Kind: "namespace"}
	f.pushAs(t, "alice", "main", "clusters/prod/blog.yaml", strings.Replace(webDeployment, "namespace: shop", "namespace: blog", 1))
	r := newRun(cfg)
	rounds := 0
	r.beforePush = func(attempt int) {
		if rounds++; rounds == 1 {
			other := shopsPlan(map[string]string{"shop": "300m"})
			if err := writeBack(t.Context(), newRun(cfg), other, f.log); err != nil || !other.Git.Pushed {
				t.Fatalf("the other run: git %+v, error %v", other.Git, err)
			}
		}
	}
	p := shopsPlan(map[string]string{"blog": "390m", "shop": "250m"})
	if err := writeBack(t.Context(), r, p, f.log); err != nil {
		t.Fatalf("writeBack() error = %v", err)
	}
	for _, g := range p.Groups {
		ns, want := strings.TrimPrefix(g.Name, "namespace/"), map[string]int{"blog": 1, "shop": 2}
		if g.Git == nil || !g.Git.Pushed || g.Git.Attempts != want[ns] {
			t.Fatalf("group %s: git %+v, want pushed in attempt %d", g.Name, g.Git, want[ns])
		}
		file := map[string]string{"blog": "clusters/prod/blog.yaml", "shop": "clusters/prod/web.yaml"}[ns]
		got, tip := f.branchFile(t, g.Git.Branch, file)
		if cpu := map[string]string{"blog": "390m", "shop": "250m"}[ns]; !strings.Contains(got, "cpu: "+cpu) || tip.Hash.String() != g.Git.Commit {
			t.Errorf("group %s: branch at %s holds\n%s\nwant cpu %s at %s", ns, tip.Hash, got, cpu, g.Git.Commit)
		}
	}
	if rounds != 2 {
		t.Errorf("%d pushes, want 2: both groups, then the moved one", rounds)
	}
}
