package gitops

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckoutRefusesTipTheRecordDoesNotKnow pushes a commit of the job's
// identity on the push branch, then checks out again with a record that
// holds it, one that holds another commit, one that holds it for another
// branch, and none: only the record that holds that commit on that
// branch lets the run go on, and the refusal names the branch and the
// commit.
func TestCheckoutRefusesTipTheRecordDoesNotKnow(t *testing.T) {
	ctx := t.Context()
	url := newRemote(t, map[string]string{"apps/web.yaml": "cpu: 1\n"})
	opts := testOptions(url)
	ws, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pushed, _ := writeAndCommit(t, ws, map[string]string{"apps/web.yaml": "cpu: 2\n"}, "Right-size web")
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		known   func(branch, commit string) bool
		refused bool
	}{
		{"no record: the identity alone", nil, false},
		{"the record holds the tip", func(b, c string) bool { return b == opts.PushBranch && c == pushed }, false},
		{"the record holds another commit", func(b, c string) bool { return c == strings.Repeat("0", 40) }, true},
		{"the record holds the tip on another branch", func(b, c string) bool { return b == "recommend-job/other" && c == pushed }, true},
		{"an empty record", func(string, string) bool { return false }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			var asked []string
			if tt.known != nil {
				o.Known = func(b, c string) bool {
					asked = append(asked, b+" "+c)
					return tt.known(b, c)
				}
			}
			_, err := Checkout(ctx, o, t.TempDir())
			if got := errors.Is(err, ErrForeignCommit); got != tt.refused {
				t.Fatalf("Checkout() error = %v, refused %v; want refused %v", err, got, tt.refused)
			}
			if tt.known != nil && (len(asked) != 1 || asked[0] != opts.PushBranch+" "+pushed) {
				t.Errorf("the record was asked %q, want once for %s at %s", asked, opts.PushBranch, pushed)
			}
			if tt.refused {
				msg := err.Error()
				if !strings.Contains(msg, opts.PushBranch) || !strings.Contains(msg, pushed[:12]) || !strings.Contains(msg, "record does not hold") {
					t.Errorf("refusal %q does not name the branch, the commit and why", msg)
				}
			}
		})
	}
}
