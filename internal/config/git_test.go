package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
)

func TestCompleteGitDerivesThePushBranch(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "recommend-job/main"},
		{"explicit push branch", []string{"--git-push-branch=bot/resources"}, "bot/resources"},
		{"template with the path", []string{"--git-branch=prod", "--git-path=./clusters/eu/", "--git-branch-template=rightsize/{{.Base}}/{{.Path}}"}, "rightsize/prod/clusters/eu"},
		{"direct push", []string{"--git-direct-push"}, "main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/r.git"}, tt.args...)
			cfg, err := Parse(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GitPushBranch != tt.want {
				t.Errorf("push branch = %q, want %q", cfg.GitPushBranch, tt.want)
			}
		})
	}
}

func TestCompleteGitErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "forge-token")
	if err := os.WriteFile(tokenFile, []byte("ftok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ssh without known_hosts", []string{"--git-url=git@github.com:org/fleet.git", "--git-ssh-key-file=/keys/id"}, "git-known-hosts-file: required for an ssh git-url"},
		{"ssh url without key", []string{"--git-url=ssh://git@host/org/fleet.git", "--git-known-hosts-file=/keys/kh"}, "git-ssh-key-file: required"},
		{"bad branch template", []string{"--git-branch-template={{.Nope}}"}, "git-branch-template:"},
		{"template making a bad branch", []string{"--git-branch-template=a..b"}, `git-branch-template: "a..b" is not a valid branch name`},
		{"bad commit template", []string{"--git-commit-template={{range}}"}, "git-commit-template:"},
		{"unknown forge", []string{"--forge=bitbucket"}, `forge: must be github, gitlab, gitea or none, got "bitbucket"`},
		{"gitea without api url", []string{"--forge=gitea", "--forge-token-file=" + tokenFile}, "forge-api-url: required for forge gitea"},
		{"forge without token", []string{"--forge=github"}, "forge-token: required for forge github"},
		{"signing format", []string{"--git-signing-format=x509"}, "git-signing-format: must be openpgp or ssh"},
		{"direct push to another branch", []string{"--git-direct-push", "--git-push-branch=other"}, "git-push-branch: must be empty or git-branch"},
		{"group twice", []string{"--git-branch-template=rj/{{.Base}}{{with .Group}}-{{.}}-{{.}}{{end}}"}, "git-branch-template: {{.Group}} may appear once"},
		{"group through a function", []string{"--git-branch-template=rj/{{.Base}}{{with .Group}}-{{len .}}{{end}}"}, "git-branch-template: {{.Group}} must be written as it is"},
		{"group under the push branch", []string{"--git-branch-template=rj/{{.Base}}/{{.Group}}"}, `git-branch-template: a group's branch "rj/main/namespace-shop-`},
		{"group making a bad branch", []string{"--git-branch-template=rj/{{.Base}}{{with .Group}}..{{.}}{{end}}"}, "git-branch-template: a group's branch: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/r.git"}, tt.args...)
			_, err := Parse(args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "ftok-123") {
				t.Errorf("error %q holds the forge token", err)
			}
		})
	}
}

func TestCompleteGitForgeToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "forge-token")
	if err := os.WriteFile(tokenFile, []byte("ftok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/org/fleet.git", "--forge=gitlab"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"from its file, trimmed", []string{"--forge-token-file=" + tokenFile, "--git-token=gtok"}, "ftok-123"},
		{"the git token when unset", []string{"--git-token=gtok"}, "gtok"},
		{"its own over the file", []string{"--forge-token=own", "--forge-token-file=" + tokenFile}, "own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(append(base, tt.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ForgeToken != tt.want {
				t.Errorf("forge token = %q, want %q", cfg.ForgeToken, tt.want)
			}
		})
	}
}

func TestSSHURLsAreAccepted(t *testing.T) {
	key, knownHosts := sshKeyFiles(t)
	for _, url := range []string{"git@github.com:org/fleet.git", "ssh://git@host:2222/org/fleet.git"} {
		_, err := Parse([]string{"--prometheus-url=http://prom.example:9090", "--git-url=" + url,
			"--git-ssh-key-file=" + key, "--git-known-hosts-file=" + knownHosts}, io.Discard)
		if err != nil {
			t.Errorf("git-url %s: Parse() error = %v", url, err)
		}
	}
}

// TestGitURLAndBranches checks the repository address against go-git's
// parser and the branches against git's rules for reference names.
func TestGitURLAndBranches(t *testing.T) {
	key, knownHosts := sshKeyFiles(t)
	tests := []struct {
		name string
		args []string
		want string // "" when valid
	}{
		{"https", []string{"--git-url=https://git.example/org/fleet.git"}, ""},
		{"file", []string{"--git-url=file:///srv/fleet.git"}, ""},
		{"scp-like", []string{"--git-url=git@github.com:org/fleet.git", "--git-ssh-key-file=" + key, "--git-known-hosts-file=" + knownHosts}, ""},
		{"branch with a slash", []string{"--git-branch=release/v2"}, ""},
		{"a bare path", []string{"--git-url=/srv/fleet.git"}, "git-url: scheme must be one of file, http, https, ssh, or user@host:path"},
		{"another scheme", []string{"--git-url=ftp://git.example/fleet.git"}, "git-url: scheme must be one of"},
		{"no host", []string{"--git-url=https:///fleet.git"}, "git-url: no host"},
		{"scp-like with a port", []string{"--git-url=git@host:2222:org/fleet.git", "--git-ssh-key-file=/k", "--git-known-hosts-file=/kh"},
			"git-url: user@host:path takes no port; use ssh://host:port/path"},
		{"credentials never quoted", []string{"--git-url=https://user:s3cr3t tok@git.example/fleet.git"}, "git-url: not a valid URL"},
		{"base branch", []string{"--git-branch=feature..x"}, `git-branch: "feature..x" is not a valid branch name`},
		{"base branch ending in .lock", []string{"--git-branch=main.lock"}, `git-branch: "main.lock" is not a valid branch name`},
		{"push branch", []string{"--git-push-branch=bot/@{x}"}, `git-push-branch: "bot/@{x}" is not a valid branch name`},
		{"push branch with a leading dash", []string{"--git-push-branch=-bot"}, `git-push-branch: "-bot" is not a valid branch name`},
		{"template with a space", []string{"--git-branch-template=rj {{.Base}}"}, `git-branch-template: "rj main" is not a valid branch name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/r.git"}, tt.args...)
			_, err := Parse(args, io.Discard)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse() error = %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse() error = %v, want one containing %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "s3cr3t"):
				t.Errorf("error %q quotes the credential", err)
			}
		})
	}
}

func TestForgeTimeoutReachesTheForge(t *testing.T) {
	base := []string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/org/fleet.git", "--forge=gitea",
		"--forge-api-url=https://git.example", "--forge-token=ftok"}
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, forge.DefaultTimeout},
		{[]string{"--forge-timeout=5s"}, 5 * time.Second},
	} {
		cfg, err := Parse(append(base, tt.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ForgeOptions().Timeout; got != tt.want {
			t.Errorf("%v: the forge's timeout = %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestCompleteGitGroupInTheTemplate checks where {{.Group}} puts a group's
// branch, and that a template without it keeps the branches of today.
func TestCompleteGitGroupInTheTemplate(t *testing.T) {
	tests := []struct {
		name               string
		template           string
		wantPush, wantLead string
	}{
		{"default", "", "recommend-job/main", "recommend-job/main-namespace-shop-"},
		{"no group", "rj/{{.Base}}", "rj/main", "rj/main-namespace-shop-"},
		{"group after a slash", "rj/{{.Base}}{{with .Group}}-pr/{{.}}{{end}}", "rj/main", "rj/main-pr/namespace-shop-"},
		{"group in the middle", "rj/{{.Group}}{{if .Group}}/{{end}}{{.Base}}", "rj/main", "rj/namespace-shop-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/r.git", "--pr-group-by=namespace"}
			if tt.template != "" {
				args = append(args, "--git-branch-template="+tt.template)
			}
			cfg, err := Parse(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			opts := cfg.GitOptions()
			shop, pay := opts.GroupBranch("namespace/shop"), opts.GroupBranch("namespace/pay")
			if opts.PushBranch != tt.wantPush || !strings.HasPrefix(shop, tt.wantLead) || shop == pay {
				t.Errorf("push branch %q, groups' %q and %q; want %q, one starting %q, two apart", opts.PushBranch, shop, pay, tt.wantPush, tt.wantLead)
			}
			if !opts.IsGroupBranch(shop) || opts.IsGroupBranch(opts.PushBranch) {
				t.Errorf("IsGroupBranch(%q) = %t, IsGroupBranch(%q) = %t; want the group's alone", shop, opts.IsGroupBranch(shop), opts.PushBranch, opts.IsGroupBranch(opts.PushBranch))
			}
			if tt.template == "" && shop != gitops.GroupBranch("recommend-job/main", "namespace/shop") {
				t.Errorf("the default's group branch %q is not GroupBranch's", shop)
			}
		})
	}
}

// TestClusterIdentity checks the cluster's identity in the group
// branches: the cluster setting, else git-path and argocd-cluster-name;
// none for a job over the whole repository that names no Argo CD cluster,
// whose branches keep their names.
func TestClusterIdentity(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the root, no Argo CD cluster", nil, ""},
		{"the root spelt ./", []string{"--git-path=./"}, ""},
		{"a path", []string{"--git-path=clusters/staging/"}, "clusters/staging"},
		{"a path and an Argo CD cluster", []string{"--git-path=clusters/staging", "--argocd-cluster-name=staging-eu"}, "clusters/staging/staging-eu"},
		{"an Argo CD cluster at the root", []string{"--argocd-cluster-name=prod"}, "prod"},
		{"set", []string{"--git-path=clusters/staging", "--cluster=eu-1"}, "eu-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--prometheus-url=http://prom.example:9090", "--git-url=https://git.example/r.git", "--pr-group-by=namespace"}, tt.args...)
			cfg, err := Parse(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			opts := cfg.GitOptions()
			if opts.Cluster != tt.want {
				t.Errorf("cluster %q, want %q", opts.Cluster, tt.want)
			}
			legacy := gitops.GroupBranch("recommend-job/main", "namespace/shop")
			if got := opts.GroupBranch("namespace/shop"); (got == legacy) != (tt.want == "") {
				t.Errorf("group branch %q; the branch without a cluster is %q", got, legacy)
			}
		})
	}
}
