package markdown

import (
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestPullRequestBodySaysHowFilesWereEdited checks that a reviewer is told
// when a file was not edited by splicing the values into it: when the
// lines of the edited subtree were re-serialised, or a patch was written
// whole.
func TestPullRequestBodySaysHowFilesWereEdited(t *testing.T) {
	for _, tc := range []struct {
		method, want string
	}{
		{plan.MethodSplice, "in `apps/web.yaml`\n"},
		{plan.MethodSubtree, "in `apps/web.yaml` (the values could not be spliced in: the lines of the edited subtree were re-serialised, every other line is unchanged)\n"},
		{plan.MethodNewFile, "in `apps/web.yaml` (a new patch file)\n"},
	} {
		p := bodyReport()
		p.Items[0].Source.Method = tc.method
		if got := PullRequestBody(p); !strings.Contains(got, "### shop/web-rec: Deployment web "+tc.want) {
			t.Errorf("method %s: the body does not say %q:\n%s", tc.method, tc.want, got)
		}
	}
}
