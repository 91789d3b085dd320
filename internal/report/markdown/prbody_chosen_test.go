package markdown

import (
	"strings"
	"testing"
)

// TestPullRequestBodySaysWhySourceWasChosen checks that a workload's
// section says which source was chosen among several, and why.
func TestPullRequestBodySaysWhySourceWasChosen(t *testing.T) {
	p := bodyReport()
	p.Items[0].Source.Chosen = "chosen among overlays/a, overlays/b as the one whose build has the live pod template " +
		"(overlays/a: container app image nginx:1.27, live nginx:1.26; overlays/b: as live)"
	body := PullRequestBody(p)
	if want := "The source was " + mdText(p.Items[0].Source.Chosen) + "."; !strings.Contains(body, want) {
		t.Errorf("body does not say %q:\n%s", want, body)
	}
	if strings.Count(body, "The source was chosen") != 1 {
		t.Errorf("body says more than once, or never, why a source was chosen:\n%s", body)
	}
}
