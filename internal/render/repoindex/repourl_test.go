package repoindex

import "testing"

// TestNormalRepoURL checks that the forms of one git repository's URL
// reduce to one, and that another repository's does not.
func TestNormalRepoURL(t *testing.T) {
	const want = "git.example.com/org/fleet"
	for _, u := range []string{
		"https://git.example.com/org/fleet.git",
		"https://token:x@Git.Example.com/org/fleet/",
		"ssh://git@git.example.com:22/org/fleet.git",
		"git@git.example.com:org/fleet.git",
		" https://git.example.com/org/fleet ",
	} {
		if got := NormalRepoURL(u); got != want {
			t.Errorf("NormalRepoURL(%q) = %q, want %q", u, got, want)
		}
	}
	if got := NormalRepoURL("https://git.example.com/org/other.git"); got == want {
		t.Errorf("NormalRepoURL of another repository = %q, the same as fleet's", got)
	}
}

// TestRedactURL checks that a URL's credentials are dropped and the rest
// kept.
func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:secret@git.example.com/org/fleet.git", "https://git.example.com/org/fleet.git"},
		{"https://git.example.com/org/fleet.git", "https://git.example.com/org/fleet.git"},
		{"git@git.example.com:org/fleet.git", "git@git.example.com:org/fleet.git"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
