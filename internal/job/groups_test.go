package job

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestGroupOf checks which pull request group an item's changes go to.
func TestGroupOf(t *testing.T) {
	item := func(labels, annotations map[string]string, object plan.Object) *plan.Item {
		return &plan.Item{Namespace: "shop", Name: "web", Labels: labels, Annotations: annotations, Object: object}
	}
	argo := plan.Object{Namespace: "shop", Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop-prod:apps/Deployment:shop/web"}}
	helm := plan.Object{Namespace: "shop", Labels: map[string]string{
		"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "flux-apps", "app.kubernetes.io/instance": "web",
	}}
	// Installed by Helm without helm-controller's labels: the chart's
	// instance label is the release's, not an Argo CD application's.
	helmOnly := plan.Object{Namespace: "shop", Labels: map[string]string{"app.kubernetes.io/instance": "shop-web"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "shop-web", "meta.helm.sh/release-namespace": "shop"}}
	flux := plan.Object{Namespace: "shop", Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}
	tests := []struct {
		by   string
		it   *plan.Item
		want string
	}{
		{"namespace", item(nil, nil, argo), "namespace/shop"},
		{"application", item(nil, nil, argo), "argocd/shop-prod"},
		{"application", item(nil, nil, helm), "helmrelease/flux-apps/web"},
		{"application", item(nil, nil, helmOnly), "helm/shop/shop-web"},
		{"application", item(nil, nil, flux), "kustomization/flux-system/apps"},
		{"application", item(nil, nil, plan.Object{Namespace: "shop"}), "namespace/shop"},
		{"label:team", item(map[string]string{"team": "payments"}, nil, argo), "team=payments"},
		{"label:team", item(nil, map[string]string{"team": "payments"}, argo), "namespace/shop"},
		{"annotation:owner", item(nil, map[string]string{"owner": "@org/pay"}, argo), "owner=@org/pay"},
	}
	for _, tt := range tests {
		by, err := gitops.ParseGroupBy(tt.by)
		if err != nil {
			t.Fatal(err)
		}
		if got := groupOf(by, tt.it); got != tt.want {
			t.Errorf("%s: group %q, want %q", tt.by, got, tt.want)
		}
	}
	for _, bad := range []string{"", "app", "label:", "label", "namespace:x", "annotation: "} {
		if _, err := gitops.ParseGroupBy(bad); err == nil {
			t.Errorf("ParseGroupBy(%q) accepted", bad)
		}
	}
}

// TestGroupItems checks that groups come in name order, each with its
// items in plan order.
func TestGroupItems(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "a"}, {Namespace: "blog", Name: "b"}, {Namespace: "shop", Name: "c"}}}
	got := groupItems(p, gitops.GroupBy{Kind: "namespace"})
	want := []group{{name: "namespace/blog", items: []int{1}}, {name: "namespace/shop", items: []int{0, 2}}}
	if !slices.EqualFunc(got, want, func(x, y group) bool { return x.name == y.name && slices.Equal(x.items, y.items) }) {
		t.Errorf("groups %+v, want %+v", got, want)
	}
}

// TestSumGroups checks that the run-wide git sums up the groups: a
// script reading git.pushed is right whatever the grouping.
func TestSumGroups(t *testing.T) {
	pr := func(n int, action string) *plan.PullRequest {
		return &plan.PullRequest{Number: n, Action: action, Body: "body"}
	}
	tests := []struct {
		name string
		p    plan.Plan
		want *plan.Git
	}{
		{name: "no branch reached", p: plan.Plan{Groups: []plan.Group{{Name: "a", Held: "closed"}}}},
		{
			name: "groups only",
			p: plan.Plan{Groups: []plan.Group{
				{Name: "a", Git: &plan.Git{Branch: "rj-a", Commit: "c1", Pushed: true, Files: []string{"b.yaml"}, Attempts: 1, PullRequest: pr(1, plan.PRCreated)}},
				{Name: "b", Git: &plan.Git{Branch: "rj-b", Files: []string{"a.yaml", "b.yaml"}, Attempts: 2, PullRequest: pr(2, plan.PRUnchanged)}},
				{Name: "c", Waiting: "pr-limit 2 reached"},
			}},
			want: &plan.Git{Pushed: true, Files: []string{"a.yaml", "b.yaml"}, Attempts: 2, Branches: []string{"rj-a"},
				PullRequests: []plan.PullRequest{{Number: 1, Action: plan.PRCreated}, {Number: 2, Action: plan.PRUnchanged}}},
		},
		{
			name: "the run's own branch and a regression's group",
			p: plan.Plan{
				Git:    &plan.Git{Branch: "rj", Files: []string{"own.yaml"}, Attempts: 1},
				Groups: []plan.Group{{Name: "regression", Git: &plan.Git{Branch: "rj-r", Commit: "c2", Pushed: true, Files: []string{"r.yaml"}, PullRequest: pr(3, plan.PRCreated)}}},
			},
			want: &plan.Git{Branch: "rj", Pushed: true, Files: []string{"own.yaml"}, Attempts: 1, Branches: []string{"rj-r"},
				PullRequests: []plan.PullRequest{{Number: 3, Action: plan.PRCreated}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sumGroups(&tt.p)
			if diff := cmp.Diff(tt.want, tt.p.Git); diff != "" {
				t.Errorf("git (-want +got):\n%s", diff)
			}
		})
	}
}
