//go:build integration

package job

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// shopsPlan is a run's plan over the web Deployments of three
// namespaces, with app's CPU request set to cpus[namespace].
func shopsPlan(cpus map[string]string) *plan.Plan {
	p := &plan.Plan{}
	for _, ns := range slices.Sorted(maps.Keys(cpus)) {
		it := webPlan(cpus[ns]).Items[0]
		it.Namespace, it.Object.Namespace = ns, ns
		p.Items = append(p.Items, it)
	}
	return p
}

// groupsBed is a fleet repository on a real Gitea with a web Deployment
// per namespace, and a grouped run's configuration for it.
type groupsBed struct {
	srv    *testbed.Gitea
	url    string
	sdk    *gitea.Client
	cfg    Config
	reader *fixture
}

func newGroupsBed(t *testing.T, namespaces []string, extra map[string]string) *groupsBed {
	t.Helper()
	ctx := t.Context()
	srv := testbedtest.Gitea(t)
	files := map[string]string{}
	for _, ns := range namespaces {
		files["clusters/"+ns+"/web.yaml"] = strings.Replace(webDeployment, "namespace: shop", "namespace: "+ns, 1)
	}
	maps.Copy(files, extra)
	url, err := srv.CreateRepo(ctx, "fleet", files)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := gitea.NewClient(srv.APIURL(), gitea.SetToken(srv.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Path: "clusters", GroupBy: gitops.GroupBy{Kind: "namespace"}, Git: gitops.Options{
		URL: url, BaseBranch: "main", PushBranch: "recommend-job",
		Username: srv.Username, Token: srv.Token(),
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com",
	}}
	cfg.Forge = newForge(t, forge.Options{Kind: forge.KindGitea, APIURL: srv.APIURL(), Token: srv.Token()}, cfg.Git)
	reader := &fixture{url: url, auth: &githttp.BasicAuth{Username: srv.Username, Password: srv.Password()}}
	return &groupsBed{srv: srv, url: url, sdk: sdk, cfg: cfg, reader: reader}
}

// openPRs returns the open pull requests by head branch.
func (b *groupsBed) openPRs(t *testing.T) map[string]*gitea.PullRequest {
	t.Helper()
	prs, _, err := b.sdk.ListRepoPullRequests(b.srv.Username, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	byHead := map[string]*gitea.PullRequest{}
	for _, pr := range prs {
		byHead[pr.Head.Ref] = pr
	}
	return byHead
}

// namespaceGroup is p's group of namespace ns.
func namespaceGroup(t *testing.T, p *plan.Plan, ns string) plan.Group {
	t.Helper()
	for _, g := range p.Groups {
		if g.Name == "namespace/"+ns {
			return g
		}
	}
	t.Fatalf("no group %s in %+v", ns, p.Groups)
	return plan.Group{}
}

// groupBranch is the branch of the group of namespace ns.
func groupBranch(ns string) string { return gitops.GroupBranch("recommend-job", "namespace/"+ns) }

// TestWriteBackGiteaGroups runs the write-back grouped by namespace
// against a real Gitea: three groups open three pull requests, each on
// its own branch and listing only its own change; when one group's change
// is gone, only its pull request is closed, and the others stay as they
// are.
func TestWriteBackGiteaGroups(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"blog", "pay", "shop"}, nil)
	cfg, reader := b.cfg, b.reader
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	openPRs := func() map[string]*gitea.PullRequest { return b.openPRs(t) }
	branch := groupBranch

	cpus := map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"}
	first := shopsPlan(cpus)
	if err := writeBack(ctx, newRun(cfg), first, log); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if len(first.Groups) != 3 {
		t.Fatalf("first run: %d groups, want three", len(first.Groups))
	}
	// The run-wide git sums the groups up, for a script that reads
	// git.pushed whatever the grouping.
	if g := first.Git; g == nil || !g.Pushed || g.Branch != "" || len(g.Branches) != 3 || len(g.PullRequests) != 3 || len(g.Files) != 3 {
		t.Fatalf("first run: git %+v; want pushed, no branch of its own, the three groups' branches, pull requests and files", first.Git)
	}
	for _, ns := range []string{"blog", "pay", "shop"} {
		if !slices.Contains(first.Git.Branches, branch(ns)) {
			t.Errorf("first run: git.branches %v lacks %s", first.Git.Branches, branch(ns))
		}
	}
	prs := openPRs()
	if len(prs) != 3 {
		t.Fatalf("%d pull requests open, want 3: %v", len(prs), prs)
	}
	numbers := map[string]int64{}
	for _, g := range first.Groups {
		ns := strings.TrimPrefix(g.Name, "namespace/")
		pr := prs[branch(ns)]
		if pr == nil || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated || int64(g.Git.PullRequest.Number) != pr.Index {
			t.Fatalf("group %s: git %+v; open pull request %v on %s", g.Name, g.Git, pr, branch(ns))
		}
		numbers[ns] = pr.Index
		if !strings.HasSuffix(pr.Title, "for "+g.Name) {
			t.Errorf("group %s: title %q does not name the group", g.Name, pr.Title)
		}
		// The body lists the group's own workload, and no other.
		for _, other := range []string{"blog", "pay", "shop"} {
			if has := strings.Contains(pr.Body, other+"/web-rec"); has != (other == ns) {
				t.Errorf("group %s: body mentions %s/web-rec: %v\n%s", g.Name, other, has, pr.Body)
			}
		}
		if got, _ := reader.branchFile(t, branch(ns), "clusters/"+ns+"/web.yaml"); !strings.Contains(got, "cpu: "+cpus[ns]) {
			t.Errorf("group %s: its branch holds\n%s", g.Name, got)
		}
	}
	for _, it := range first.Items {
		if it.Group != "namespace/"+it.Namespace {
			t.Errorf("item %s: group %q", it.Key(), it.Group)
		}
	}

	// blog's recommendation now equals main's value: its group has nothing
	// left to change.
	second := shopsPlan(map[string]string{"blog": "500m", "pay": "350m", "shop": "390m"})
	if err := writeBack(ctx, newRun(cfg), second, log); err != nil {
		t.Fatalf("second run: %v", err)
	}
	prs = openPRs()
	if len(prs) != 2 || prs[branch("blog")] != nil {
		t.Fatalf("after the second run %d pull requests are open (%v), want pay's and shop's", len(prs), prs)
	}
	// Nothing was pushed this time, whatever each group's pull request did.
	if g := second.Git; g == nil || g.Pushed || len(g.PullRequests) != 3 {
		t.Errorf("second run: git %+v; want nothing pushed and the three pull requests", second.Git)
	}
	for _, g := range second.Groups {
		ns := strings.TrimPrefix(g.Name, "namespace/")
		want := plan.PRUnchanged
		if ns == "blog" {
			want = plan.PRClosed
		}
		if g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != want || int64(g.Git.PullRequest.Number) != numbers[ns] {
			t.Errorf("second run, group %s: git %+v, want #%d %s", g.Name, g.Git, numbers[ns], want)
		}
	}

	// A person commits on shop's branch: that group is left alone and
	// says why; the others go on.
	reader.pushAs(t, "alice", branch("shop"), "clusters/shop/web.yaml", strings.Replace(webDeployment, "500m", "450m", 1))
	stopped := shopsPlan(map[string]string{"blog": "500m", "pay": "340m", "shop": "390m"})
	err := writeBack(ctx, newRun(cfg), stopped, log)
	if !errors.Is(err, gitops.ErrForeignCommit) {
		t.Fatalf("run after a person's commit: %v, want ErrForeignCommit", err)
	}
	for _, g := range stopped.Groups {
		switch g.Name {
		case "namespace/shop":
			if g.Git == nil || g.Git.Stopped == "" {
				t.Errorf("shop: %+v, want it stopped", g.Git)
			}
		case "namespace/pay":
			if g.Git == nil || !g.Git.Pushed || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRUpdated {
				t.Errorf("pay: %+v, want its new value pushed and its pull request updated", g.Git)
			}
		}
	}
	if got, _ := reader.branchFile(t, branch("shop"), "clusters/shop/web.yaml"); !strings.Contains(got, "450m") {
		t.Errorf("shop's branch lost the person's commit:\n%s", got)
	}

	// pay's ResourceRecommend is gone: no item of the run is in its group
	// any more, and its pull request is closed too; shop's stays, stopped.
	third := shopsPlan(map[string]string{"shop": "390m"})
	if err := writeBack(ctx, newRun(cfg), third, log); !errors.Is(err, gitops.ErrForeignCommit) {
		t.Fatalf("third run: %v, want shop's branch still stopped", err)
	}
	if prs := openPRs(); len(prs) != 1 || prs[branch("shop")] == nil {
		t.Fatalf("after the third run %d pull requests are open (%v), want shop's alone", len(prs), prs)
	}
}

// TestWriteBackGiteaOwners opens grouped pull requests on a real Gitea
// whose reviewers come from the repository's CODEOWNERS for the files
// each changes, and from the ResourceRecommend's annotation.
func TestWriteBackGiteaOwners(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"pay", "shop"}, map[string]string{".github/CODEOWNERS": "* @platform-lead\n/clusters/pay/ @pay-lead\n"})
	sdk, srv, cfg := b.sdk, b.srv, b.cfg
	for _, name := range []string{"platform-lead", "pay-lead", "shop-oncall"} {
		if _, _, err := sdk.AdminCreateUser(gitea.CreateUserOption{Username: name, Email: name + "@example.com",
			Password: "pw-" + name + name, MustChangePassword: gitea.OptionalBool(false)}); err != nil {
			t.Fatal(err)
		}
	}
	p := shopsPlan(map[string]string{"pay": "350m", "shop": "390m"})
	for i := range p.Items {
		if p.Items[i].Namespace == "shop" {
			p.Items[i].Annotations = map[string]string{AnnotationReviewers: "@shop-oncall"}
		}
	}
	if err := writeBack(ctx, newRun(cfg), p, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"namespace/pay": {"pay-lead"}, "namespace/shop": {"platform-lead", "shop-oncall"}}
	for _, g := range p.Groups {
		if g.Git == nil || g.Git.PullRequest == nil {
			t.Fatalf("group %s: no pull request: %+v", g.Name, g.Git)
		}
		pr, _, err := sdk.GetPullRequest(srv.Username, "fleet", int64(g.Git.PullRequest.Number))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range pr.RequestedReviewers {
			got = append(got, u.UserName)
		}
		slices.Sort(got)
		if !slices.Equal(got, want[g.Name]) {
			t.Errorf("group %s: reviewers %q, want %q", g.Name, got, want[g.Name])
		}
	}
}

// TestWriteBackGiteaWithdrawsReviewers opens a group's pull request on a
// real Gitea, asking the owner CODEOWNERS gives its file; a person then
// hands the file to another owner on main. The next run asks the new
// owner and withdraws the job's request from the one who left, in that
// one run, as it asks a new owner in one run; a run that could not read
// the namespaces leaves the requests as they are.
func TestWriteBackGiteaWithdrawsReviewers(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"shop"}, map[string]string{".github/CODEOWNERS": "* @ana\n"})
	for _, name := range []string{"ana", "ben", "cyd"} {
		if _, _, err := b.sdk.AdminCreateUser(gitea.CreateUserOption{Username: name, Email: name + "@example.com",
			Password: "pw-" + name + name, MustChangePassword: gitea.OptionalBool(false)}); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	run := func(cpu string, namespacesRead bool) *gitea.PullRequest {
		t.Helper()
		p := shopsPlan(map[string]string{"shop": cpu})
		if namespacesRead {
			p.Items[0].NamespaceLabels = map[string]string{"kubernetes.io/metadata.name": "shop"}
		}
		if err := writeBack(ctx, newRun(b.cfg), p, log); err != nil {
			t.Fatal(err)
		}
		pr := b.openPRs(t)[groupBranch("shop")]
		if pr == nil {
			t.Fatal("no pull request for shop")
		}
		return pr
	}
	reviewers := func(pr *gitea.PullRequest) []string {
		t.Helper()
		got, _, err := b.sdk.GetPullRequest(b.srv.Username, "fleet", pr.Index)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range got.RequestedReviewers {
			names = append(names, u.UserName)
		}
		slices.Sort(names)
		return names
	}
	if got := reviewers(run("390m", true)); !slices.Equal(got, []string{"ana"}) {
		t.Fatalf("first run: reviewers %q, want ana", got)
	}
	b.reader.pushAs(t, "someone", "main", ".github/CODEOWNERS", "* @ben\n")
	pr := run("380m", true)
	if got := reviewers(pr); !slices.Equal(got, []string{"ben"}) {
		t.Errorf("after ana left CODEOWNERS: reviewers %q, want ben alone", got)
	}
	if !strings.Contains(pr.Body, "<!-- recommend-job: reviewers @ben -->") {
		t.Errorf("the body does not record ben alone as asked:\n%s", pr.Body)
	}
	// Without the namespaces, whose annotations name reviewers too, no
	// request is withdrawn: ben stays asked though cyd owns the file now.
	b.reader.pushAs(t, "someone", "main", ".github/CODEOWNERS", "* @cyd\n")
	if got := reviewers(run("370m", false)); !slices.Equal(got, []string{"ben", "cyd"}) {
		t.Errorf("a run without the namespaces: reviewers %q, want ben kept and cyd asked", got)
	}
}
