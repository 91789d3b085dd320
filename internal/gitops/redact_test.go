package gitops

import (
	"encoding/base64"
	"testing"
)

// TestRedactorText shows what counts as a secret: tokens, passwords, and
// the user part of an http(s) URL that has no password (a token, as
// authFor takes it), but never an ssh or scp-like user name; and that a
// secret shorter than minSecretLength is taken out only where it stands
// alone.
func TestRedactorText(t *testing.T) {
	const long = "ghp_0123456789abcdefABCDEF"
	tests := []struct {
		name     string
		opts     Options
		in, want string
	}{
		{
			name: "ssh url user is not a secret",
			opts: Options{URL: "ssh://git@git.example.com/org/gitops.git"},
			in:   "listing branches of ssh://git@git.example.com/org/gitops.git: ssh: handshake failed; git said: gitops.git not found",
			want: "listing branches of ssh://git@git.example.com/org/gitops.git: ssh: handshake failed; git said: gitops.git not found",
		},
		{
			name: "scp-like user is not a secret",
			opts: Options{URL: "git@git.example.com:org/gitops.git"},
			in:   "cloning git@git.example.com:org/gitops.git branch main: git error",
			want: "cloning git@git.example.com:org/gitops.git branch main: git error",
		},
		{
			name: "https token in the user part",
			opts: Options{URL: "https://" + long + "@git.example.com/org/gitops.git"},
			in:   "cloning https://" + long + "@git.example.com/org/gitops.git: token " + long + " refused (" + long + "x)",
			want: "cloning https://REDACTED@git.example.com/org/gitops.git: token REDACTED refused (REDACTEDx)",
		},
		{
			name: "https user and password: the user name stays",
			opts: Options{URL: "https://bot:hunter2@git.example.com/r.git"},
			in:   "clone https://bot:hunter2@git.example.com/r.git: bot's password hunter2 is wrong; hunter22 is not it",
			want: "clone https://bot:REDACTED@git.example.com/r.git: bot's password REDACTED is wrong; hunter22 is not it",
		},
		{
			name: "a user part alone named git is a token, but gitops.git keeps its letters",
			opts: Options{URL: "https://git@git.example.com/org/gitops.git"},
			in:   "pushing to https://git@git.example.com/org/gitops.git: git-receive-pack: denied",
			want: "pushing to https://REDACTED@git.example.com/org/gitops.git: git-receive-pack: denied",
		},
		{
			name: "a one-letter token is taken out only where it stands alone",
			opts: Options{URL: "https://git.example.com/r.git", Token: "a"},
			in:   "authorization failed, your request header was: token a; a bad token, said gitea.example",
			want: "authorization failed, your request header was: token REDACTED; REDACTED bad token, said gitea.example",
		},
		{
			name: "a long token is taken out inside other text too",
			opts: Options{URL: "https://git.example.com/r.git", Token: long},
			in:   "Authorization: Bearer" + long + "\ntoken=" + long,
			want: "Authorization: BearerREDACTED\ntoken=REDACTED",
		},
		{
			name: "the basic-auth header of user and token",
			opts: Options{URL: "https://git.example.com/r.git", Username: "bot", Token: long},
			in:   "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bot:"+long)),
			want: "Authorization: Basic REDACTED",
		},
		{
			name: "the forge token, and a URL with credentials quoted from anywhere",
			opts: Options{URL: "https://git.example.com/r.git", Secrets: []string{long}},
			in:   "GET https://u:p@api.example.com/x: your token " + long,
			want: "GET https://u:REDACTED@api.example.com/x: your token REDACTED",
		},
		{
			name: "text without secrets is left alone",
			opts: Options{URL: "file:///srv/git/gitops.git", Token: "tok3n"},
			in:   "tok3nized: token tok3nX, file:///srv/git/gitops.git",
			want: "tok3nized: token tok3nX, file:///srv/git/gitops.git",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gitRedactor(tt.opts, parseGitURL(tt.opts.URL)).Text(tt.in); got != tt.want {
				t.Errorf("text(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}
