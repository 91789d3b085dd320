package forge

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCodeowners checks the owners of files under GitHub's and GitLab's
// CODEOWNERS rules: the last matching line wins, patterns anchor with a
// slash, directories own what is under them, and GitLab's sections add
// up with their default owners.
func TestCodeowners(t *testing.T) {
	const github = `# Owners of the fleet.
*                     @platform
*.md                  @docs
/apps/                @apps-team
apps/shop/            @org/shop @alice   # the shop
docs/*                @docs-writers
**/values-production.yaml @org/sre
/clusters/prod        @org/sre
apps/legacy/
config\ files/app.yaml @bob
`
	const gitlab = `[Platform]
* @platform

^[Shop][2] @org/shop
apps/shop/
apps/shop/chart/ @carol

[Docs]
*.md @docs
`
	tests := []struct {
		name, file string
		text       string
		want       []string
	}{
		{"a catch-all", "README.txt", github, []string{"@platform"}},
		{"the last matching line wins", "apps/shop/deploy.yaml", github, []string{"@org/shop", "@alice"}},
		{"an anchored directory", "apps/web/deploy.yaml", github, []string{"@apps-team"}},
		{"an extension at any depth", "notes/team/README.md", github, []string{"@docs"}},
		{"a later directory wins over an extension", "apps/web/README.md", github, []string{"@apps-team"}},
		{"a star stays at its depth", "docs/guide.txt", github, []string{"@docs-writers"}},
		{"below a star's depth", "docs/build/guide.txt", github, []string{"@platform"}},
		{"a double star at any depth", "apps/shop/envs/values-production.yaml", github, []string{"@org/sre"}},
		{"an anchored path owns what is under it", "clusters/prod/apps.yaml", github, []string{"@org/sre"}},
		{"not a prefix of a longer name", "clusters/production/apps.yaml", github, []string{"@platform"}},
		{"a line with no owners leaves the files unowned", "apps/legacy/deploy.yaml", github, nil},
		{"an escaped space", "config files/app.yaml", github, []string{"@bob"}},
		{"a section's default owners", "apps/shop/deploy.yaml", gitlab, []string{"@platform", "@org/shop"}},
		{"a rule of a section overrides its defaults", "apps/shop/chart/values.yaml", gitlab, []string{"@platform", "@carol"}},
		{"sections add up", "apps/shop/README.md", gitlab, []string{"@platform", "@org/shop", "@docs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseCodeowners([]byte(tt.text)).Owners(tt.file)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Owners(%q) = %q, want %q", tt.file, got, tt.want)
			}
		})
	}
	owners := ParseCodeowners([]byte(github)).OwnersOf([]string{"apps/shop/a.yaml", "apps/web/b.yaml", "apps/shop/c.yaml"})
	if want := []string{"@org/shop", "@alice", "@apps-team"}; !slices.Equal(owners, want) {
		t.Errorf("OwnersOf = %q, want %q", owners, want)
	}
}

// TestReadCodeowners reads the first CODEOWNERS file forges look for, and
// none when there is none.
func TestReadCodeowners(t *testing.T) {
	dir := t.TempDir()
	if c, name, err := ReadCodeowners(dir); c != nil || name != "" || err != nil {
		t.Fatalf("empty checkout: %v, %q, %v", c, name, err)
	}
	for _, f := range []struct{ name, text string }{{"CODEOWNERS", "* @root\n"}, {".github/CODEOWNERS", "* @github\n"}} {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, name, err := ReadCodeowners(dir)
	if err != nil || name != ".github/CODEOWNERS" || !slices.Equal(c.Owners("x"), []string{"@github"}) {
		t.Errorf("ReadCodeowners = %v, %q, %v; want .github/CODEOWNERS first", c, name, err)
	}
	if got := Reviewers([]string{"@a", "b@example.com", "@org/t", "@a", "@"}); !slices.Equal(got, []string{"@a", "@org/t"}) {
		t.Errorf("Reviewers = %q", got)
	}
}
