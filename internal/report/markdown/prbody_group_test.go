package markdown

import (
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestPullRequestBodyNamesTheGroup checks that a group's pull request
// names its group whole, as the branch cannot, and as inert text.
func TestPullRequestBodyNamesTheGroup(t *testing.T) {
	items := func(groups ...string) *plan.Plan {
		p := &plan.Plan{}
		for _, g := range groups {
			p.Items = append(p.Items, plan.Item{Namespace: "shop", Name: "web", Valid: true, Group: g})
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		plan       *plan.Plan
		want, lack []string
	}{
		{name: "not a ref", plan: items("team=a..b", "team=a..b"), want: []string{"\nGroup: `team=a..b`\n"}},
		{name: "a path", plan: items("x=../x"), want: []string{"\nGroup: `x=../x`\n"}},
		{name: "markup", plan: items("x=@admins <!-- x --> [a](https://e.example)\nline"),
			want: []string{"\nGroup: x=@\u2060admins &lt;\\!-- x --&gt; \\[a\\]\\(https:\u2060//e.example\\) line\n"},
			lack: []string{"@admins", "<!-- x", "\nline"}},
		{name: "long", plan: items(strings.Repeat("x", 1000)), want: []string{"Group: " + strings.Repeat("x", maxBodyGroup) + "…\n"}},
		{name: "no group", plan: items(""), lack: []string{"Group:"}},
		{name: "two groups", plan: items("a", "b"), lack: []string{"Group:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := PullRequestBody(tc.plan)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(body, l) {
					t.Errorf("body holds %q:\n%s", l, body)
				}
			}
		})
	}
}
