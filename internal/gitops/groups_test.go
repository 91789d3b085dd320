package gitops

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestGroupBranch checks group branches: stable, distinct for distinct
// groups, valid as refs whatever the group's name, and recognised as the
// job's own.
func TestGroupBranch(t *testing.T) {
	groups := []string{"argocd/shop-production", "argocd/Shop Production", "flux/apps/web", "team:payments", "", "ÄÖÜ", strings.Repeat("x", 300),
		// A label value git takes for no ref, annotations a tenant chose.
		"team=a..b", "team=a.-b", "team=a.b", "team=a...b", "x=../x", "x=.lock", "x=a.lock", "x=@{u}", "x=@", "x=" + strings.Repeat(".", 60),
		"x=" + strings.Repeat("a.", 30), "x=a\nb", "x=a\x00b", "x=~^:?*[\\ \t"}
	seen := map[string]string{}
	for _, g := range groups {
		b := GroupBranch("recommend-job", g)
		if again := GroupBranch("recommend-job", g); again != b {
			t.Errorf("%q: %s, then %s", g, b, again)
		}
		if other, dup := seen[b]; dup {
			t.Errorf("%q and %q share the branch %s", g, other, b)
		}
		seen[b] = g
		if err := validRefName(b); err != nil {
			t.Errorf("%q: branch %q: %v", g, b, err)
		}
		if err := plumbing.NewBranchReferenceName(b).Validate(); err != nil {
			t.Errorf("%q: branch %q: go-git: %v", g, b, err)
		}
		if len(b) > len("recommend-job-")+maxGroupSlug+9+2*branchCheckBytes {
			t.Errorf("%q: branch %q is too long", g, b)
		}
		if !IsGroupBranch("recommend-job", b) {
			t.Errorf("%q: %s is not recognised as a group branch", g, b)
		}
	}
	if got := GroupBranch("recommend-job", "argocd/shop-production"); !strings.HasPrefix(got, "recommend-job-argocd-shop-production-") {
		t.Errorf("branch %s does not read as its group", got)
	}
	for _, name := range []string{"recommend-job", "recommend-job-x", "recommend-job-shop-ABCDEF12", "other-shop-1a2b3c4d", "recommend-jobx-1a2b3c4d",
		"recommend-job-shop-1a2b3c4d", "recommend-job-shop-1a2b3c4d000000"} {
		if IsGroupBranch("recommend-job", name) {
			t.Errorf("%s is taken for a group branch", name)
		}
	}
	// The branches of a job whose push branch starts with this one's are
	// not its own: shard 1 leaves shard 10's alone, and the other way round.
	for _, g := range groups {
		for _, push := range [][2]string{{"recommend-job/main-shard-1", "recommend-job/main-shard-10"}, {"recommend-job/prod", "recommend-job/prod-eu"}} {
			if b := GroupBranch(push[1], g); IsGroupBranch(push[0], b) {
				t.Errorf("%q: %s of %s is taken for a group branch of %s", g, b, push[1], push[0])
			}
			if b := GroupBranch(push[0], g); IsGroupBranch(push[1], b) {
				t.Errorf("%q: %s of %s is taken for a group branch of %s", g, b, push[0], push[1])
			}
		}
	}
}

// validRefName applies git's rules for a branch name that matter here.
func validRefName(name string) error {
	switch {
	case name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, "/"):
		return errBadRef
	case strings.Contains(name, "..") || strings.ContainsAny(name, " ~^:?*[\\") || strings.Contains(name, "@{"):
		return errBadRef
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return errBadRef
		}
	}
	return nil
}

var errBadRef = errors.New("not a valid branch name")

// TestOptionsGroupBranchInATemplate checks group branches a template
// places: between its text, distinct, valid as refs, and told apart from
// those of the default naming of the same push branch.
func TestOptionsGroupBranchInATemplate(t *testing.T) {
	placed := Options{PushBranch: "rj/main", GroupPrefix: "rj/", GroupSuffix: "/main"}
	plain := Options{PushBranch: "rj/main"}
	seen := map[string]string{}
	for _, g := range []string{"namespace/shop", "namespace/Shop", "team=a..b", "", strings.Repeat("x", 300)} {
		b := placed.GroupBranch(g)
		if other, dup := seen[b]; dup {
			t.Errorf("%q and %q share the branch %s", g, other, b)
		}
		seen[b] = g
		if !strings.HasPrefix(b, "rj/") || !strings.HasSuffix(b, "/main") || plumbing.NewBranchReferenceName(b).Validate() != nil {
			t.Errorf("%q: branch %q, want a valid one between rj/ and /main", g, b)
		}
		if !placed.IsGroupBranch(b) || plain.IsGroupBranch(b) || placed.IsGroupBranch(plain.GroupBranch(g)) {
			t.Errorf("%q: %s is not told apart from %s", g, b, plain.GroupBranch(g))
		}
	}
	if got := placed.GroupHeadPrefix(); got != "rj/" {
		t.Errorf("GroupHeadPrefix() = %q, want rj/", got)
	}
	if got := plain.GroupHeadPrefix(); got != "rj/main-" {
		t.Errorf("GroupHeadPrefix() = %q, want rj/main-", got)
	}
}

// TestGroupBranchOfCluster checks that a cluster's identity keeps its
// group branches apart from another cluster's and from those of a job
// that names none: each reads as its cluster, is a valid ref whatever the
// identity, and is taken for a group branch only by its own cluster.
func TestGroupBranchOfCluster(t *testing.T) {
	clusters := []string{"", "clusters/staging", "clusters/production", "Clusters/Staging", "clusters-staging", "日本", "中国", "x..y", strings.Repeat("c", 100)}
	templated := Options{PushBranch: "recommend-job/main", GroupPrefix: "recommend-job/main-pr/"}
	for _, base := range []Options{{PushBranch: "recommend-job/main"}, templated} {
		seen := map[string]string{}
		for _, c := range clusters {
			o := base
			o.Cluster = c
			b := o.GroupBranch("namespace/shop")
			if other, dup := seen[b]; dup {
				t.Errorf("clusters %q and %q share the branch %s", c, other, b)
			}
			seen[b] = c
			if err := validRefName(b); err != nil {
				t.Errorf("cluster %q: branch %q: %v", c, b, err)
			}
			if !o.IsGroupBranch(b) || !strings.HasPrefix(b, o.GroupHeadPrefix()) {
				t.Errorf("cluster %q: %s is not recognised as its own", c, b)
			}
			for _, other := range clusters {
				if oo := base; other != c {
					oo.Cluster = other
					if oo.IsGroupBranch(b) {
						t.Errorf("%s of cluster %q is taken for a group branch of cluster %q", b, c, other)
					}
				}
			}
		}
	}
	o := Options{PushBranch: "recommend-job/main", Cluster: "clusters/staging"}
	if got := o.GroupBranch("namespace/shop"); !strings.HasPrefix(got, "recommend-job/main-clusters-staging-namespace-shop-") {
		t.Errorf("branch %s does not read as its cluster and group", got)
	}
	if got, want := (Options{PushBranch: "recommend-job/main"}).GroupBranch("namespace/shop"), GroupBranch("recommend-job/main", "namespace/shop"); got != want {
		t.Errorf("without a cluster the branch is %s, want %s as before", got, want)
	}
}
