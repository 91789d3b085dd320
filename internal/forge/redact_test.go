package forge

import (
	"testing"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

func TestForgeRedactorText(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		gitURL   string
		in, want string
	}{
		{
			name:   "token and API URL password",
			opts:   Options{APIURL: "https://bot:s3cr3t-pass@gitea.example.com", Token: "b674f00d5eed"},
			gitURL: "ssh://git@gitea.example.com/org/gitops.git",
			in:     "gitea: your request header was: token b674f00d5eed (s3cr3t-pass) for ssh://git@gitea.example.com/org/gitops.git",
			want:   "gitea: your request header was: token REDACTED (REDACTED) for ssh://git@gitea.example.com/org/gitops.git",
		},
		{
			name:   "token in the git URL",
			opts:   Options{Token: "f0rge-token"},
			gitURL: "https://gl-t0ken-123@gitlab.example.com/org/gitops.git",
			in:     "gitlab: project of https://gl-t0ken-123@gitlab.example.com: header gl-t0ken-123",
			want:   "gitlab: project of https://REDACTED@gitlab.example.com: header REDACTED",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forgeRedactor(tt.opts, gitops.Options{URL: tt.gitURL}.URLToken()).Text(tt.in); got != tt.want {
				t.Errorf("text(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}
