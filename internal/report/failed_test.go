package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

func TestTableOfAFailedRun(t *testing.T) {
	tests := []struct {
		name    string
		rep     plan.Plan
		want    []string
		notWant []string
	}{
		{
			name:    "failed after the checkout: not pushed, and not up to date either",
			rep:     plan.Plan{Git: &plan.Git{Branch: "recommend-job/main"}, Failed: "rendering: writing the edited files: write a.yaml: no space left on device"},
			want:    []string{"failed: rendering: writing the edited files: write a.yaml: no space left on device"},
			notWant: []string{"up to date", "nothing to commit"},
		},
		{
			name:    "pushed, then the pull request failed",
			rep:     plan.Plan{Git: &plan.Git{Branch: "b", Pushed: true, Commit: "0123456789abcdef"}, Failed: "pull request: 502 bad gateway"},
			want:    []string{"pushed 0123456789ab to branch b", "failed: pull request: 502 bad gateway"},
			notWant: []string{"up to date"},
		},
		{
			name: "a run that did not fail says the branch is up to date",
			rep:  plan.Plan{Git: &plan.Git{Branch: "b"}},
			want: []string{"branch b is up to date: nothing to commit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, &tt.rep, FormatTable); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("table says %q:\n%s", w, b.String())
				}
			}
		})
	}
}
