package forge

import "testing"

// TestReviewersLine records whom the job asked in the body and asks only
// those it has not: a name that could end the comment is never written.
func TestReviewersLine(t *testing.T) {
	body := withReviewersLine("changes\n", []string{"@alice", "bob", "x -->evil", "@org/sre"})
	if want := "changes\n" + reviewersPrefix + "@alice bob @org/sre -->\n"; body != want {
		t.Fatalf("body %q, want %q", body, want)
	}
	asked := askedReviewers(body)
	if got := newReviewers([]string{"alice", "@carol", "@org/sre", "@carol"}, asked); len(got) != 1 || got[0] != "@carol" {
		t.Errorf("new reviewers %q, want @carol alone", got)
	}
	if withReviewersLine("changes\n", nil) != "changes\n" {
		t.Error("a line without reviewers")
	}
}
