package config

import (
	"io"
	"strings"
	"testing"
)

func TestShardsGetTheirOwnBranch(t *testing.T) {
	base := []string{"--prometheus-url=http://p", "--git-url=https://git.example/r.git"}
	tests := []struct {
		name       string
		args       []string
		wantBranch string
		wantErr    string
	}{
		{name: "one shard", args: nil, wantBranch: "recommend-job/main"},
		{name: "default template gets the shard", args: []string{"--shard-count=3", "--shard-index=2"}, wantBranch: "recommend-job/main-shard-2"},
		{name: "own template with the shard", args: []string{"--shard-count=2", "--shard-index=1", "--git-branch-template=rj/{{.Base}}/{{.Shard}}"}, wantBranch: "rj/main/1"},
		{name: "own template without the shard", args: []string{"--shard-count=2", "--git-branch-template=rj/{{.Base}}"}, wantErr: "git-branch-template: must use {{.Shard}}"},
		{name: "fixed push branch", args: []string{"--shard-count=2", "--git-push-branch=rj"}, wantErr: "git-push-branch: cannot be fixed"},
		{name: "direct push", args: []string{"--shard-count=2", "--git-direct-push"}, wantErr: "git-direct-push: cannot be used with shard-count above 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(append(append([]string(nil), base...), tt.args...), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if cfg.GitPushBranch != tt.wantBranch {
				t.Errorf("push branch = %q, want %q", cfg.GitPushBranch, tt.wantBranch)
			}
		})
	}
}

func TestConfigFileWithUnknownKeyIsRefused(t *testing.T) {
	_, err := Parse([]string{"--config=testdata/typo.yaml"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "unknown keys git-token-fle") {
		t.Errorf("Parse(typo) error = %v, want the unknown key named", err)
	}
}

func TestForgeTokenFromGitURL(t *testing.T) {
	cfg, err := Parse([]string{"--prometheus-url=http://p", "--git-url=https://s3cret@github.com/org/repo.git", "--forge=github"}, io.Discard)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if cfg.ForgeToken != "s3cret" {
		t.Errorf("forge token = %q, want the token of git-url", cfg.ForgeToken)
	}
}
