package config

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/report/markdown"
)

// completeGit fills and checks the git and pull request settings.
func (c *Config) completeGit() []error {
	var errs []error
	var endpoint *transport.Endpoint
	if c.GitURL == "" && !c.DryRun {
		errs = append(errs, errors.New("git-url: required unless dry-run is set"))
	} else if c.GitURL != "" {
		var err error
		if endpoint, err = gitEndpoint(c.GitURL); err != nil {
			errs = append(errs, fmt.Errorf("git-url: %w", err))
		}
	}
	sharded := c.ShardCount > 1
	if c.GitDirectPush {
		if c.GitPushBranch != "" && c.GitPushBranch != c.GitBranch {
			errs = append(errs, fmt.Errorf("git-push-branch: must be empty or git-branch with git-direct-push, got %q", c.GitPushBranch))
		}
		if sharded {
			// Each shard rebuilds the branch with its own changes only.
			errs = append(errs, errors.New("git-direct-push: cannot be used with shard-count above 1: the shards would overwrite each other's changes"))
		}
		c.GitPushBranch = c.GitBranch
	}
	if sharded && c.GitPushBranch != "" && !c.GitDirectPush {
		errs = append(errs, errors.New("git-push-branch: cannot be fixed with shard-count above 1; use git-branch-template with {{.Shard}}"))
	}
	switch {
	case c.GitBranch == "":
		errs = append(errs, errors.New("git-branch: must not be empty"))
	case checkBranch(c.GitBranch) != nil:
		errs = append(errs, fmt.Errorf("git-branch: %w", checkBranch(c.GitBranch)))
	case c.GitPushBranch != "":
		if err := checkBranch(c.GitPushBranch); err != nil {
			errs = append(errs, fmt.Errorf("git-push-branch: %w", err))
		}
	default:
		tmpl := c.GitBranchTemplate
		branch, err := c.pushBranch(tmpl, c.ShardIndex, "")
		if err == nil {
			err = checkBranch(branch)
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("git-branch-template: %w", err))
		case sharded && !c.shardedTemplate(tmpl):
			errs = append(errs, errors.New("git-branch-template: must use {{.Shard}} with shard-count above 1, or the shards would overwrite each other's changes"))
		default:
			c.GitPushBranch = branch
			if c.groupPrefix, c.groupSuffix, err = c.groupSlot(tmpl, branch); err != nil {
				errs = append(errs, fmt.Errorf("git-branch-template: %w", err))
			}
		}
	}
	if endpoint != nil && endpoint.Protocol == "ssh" {
		if c.GitSSHKeyFile == "" {
			errs = append(errs, errors.New("git-ssh-key-file: required for an ssh git-url"))
		}
		if c.GitKnownHostsFile == "" {
			errs = append(errs, errors.New("git-known-hosts-file: required for an ssh git-url; host keys are never trusted unchecked"))
		}
	}
	var err error
	if c.Parsed.CommitTemplate, err = markdown.ParseCommitTemplate(c.GitCommitTemplate); err != nil {
		errs = append(errs, fmt.Errorf("git-commit-template: %w", err))
	}
	switch c.GitSigningFormat {
	case gitops.SigningOpenPGP, gitops.SigningSSH:
	default:
		errs = append(errs, fmt.Errorf("git-signing-format: must be openpgp or ssh, got %q", c.GitSigningFormat))
	}
	return append(errs, c.completeForge()...)
}

// completeForge fills and checks the pull request settings.
func (c *Config) completeForge() []error {
	var errs []error
	switch c.Forge {
	case forge.KindNone, forge.KindGitHub, forge.KindGitLab, forge.KindGitea:
	default:
		errs = append(errs, fmt.Errorf("forge: must be github, gitlab, gitea or none, got %q", c.Forge))
	}
	var err error
	if c.ForgeToken, err = secret(c.ForgeToken, c.ForgeTokenFile); err != nil {
		errs = append(errs, fmt.Errorf("forge-token-file: %w", err))
	}
	if c.ForgeToken == "" {
		c.ForgeToken = c.GitToken
	}
	if c.ForgeToken == "" {
		// A token may come inside git-url, as GitHub documents.
		c.ForgeToken = gitops.Options{URL: c.GitURL}.URLToken()
	}
	if c.Forge != forge.KindNone && c.Forge != "" && !c.GitDirectPush {
		if c.ForgeToken == "" {
			errs = append(errs, fmt.Errorf("forge-token: required for forge %s", c.Forge))
		}
		if c.Forge == forge.KindGitea && c.ForgeAPIURL == "" {
			errs = append(errs, errors.New("forge-api-url: required for forge gitea"))
		}
		if c.ForgeAPIURL != "" {
			if err := checkURL(c.ForgeAPIURL, "http", "https"); err != nil {
				errs = append(errs, fmt.Errorf("forge-api-url: %w", err))
			}
		}
	}
	return errs
}

// gitSchemes are the transports a run reaches a repository with.
var gitSchemes = []string{"file", "http", "https", "ssh"}

// gitEndpoint parses a repository address as go-git does: an absolute
// file://, http(s):// or ssh:// URL, or git's scp-like user@host:path. A
// bare local path is refused, as the scp-like form with a port is (the
// job reaches it on port 22; ssh:// takes a port). Errors never quote
// raw, which may hold credentials.
func gitEndpoint(raw string) (*transport.Endpoint, error) {
	e, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, errors.New("not a valid URL") // its message quotes raw
	}
	hasScheme := strings.Contains(raw, "://")
	switch {
	case !slices.Contains(gitSchemes, e.Protocol) || (e.Protocol == "file" && !hasScheme):
		return nil, fmt.Errorf("scheme must be one of %s, or user@host:path", strings.Join(gitSchemes, ", "))
	case e.Protocol != "file" && e.Host == "":
		return nil, errors.New("no host")
	case !hasScheme:
		// scp-like: what follows the host is the path, unless a port
		// came first.
		if !strings.HasSuffix(raw, e.Host+":"+e.Path) {
			return nil, errors.New("user@host:path takes no port; use ssh://host:port/path")
		}
	}
	return e, nil
}

// checkBranch refuses a name git would refuse for a branch
// (git-check-ref-format), quoting it.
func checkBranch(name string) error {
	if plumbing.NewBranchReferenceName(name).Validate() != nil {
		return fmt.Errorf("%q is not a valid branch name", name)
	}
	return nil
}

// groupMark stands for {{.Group}} while groupSlot looks for it: no branch
// name holds a NUL.
const groupMark = "\x00group\x00"

// groupSlot returns the text around {{.Group}} in the branch template, which
// push, the template without a group, the ungrouped runs' branch, is not:
// empty when the template has no {{.Group}}. A group's branch puts its name
// and its hash between them (gitops.Options.GroupBranch), so that two
// groups never share a branch whatever their names' slugs.
func (c *Config) groupSlot(tmpl, push string) (prefix, suffix string, err error) {
	marked, err := c.pushBranch(tmpl, c.ShardIndex, groupMark)
	if err != nil {
		return "", "", err
	}
	switch strings.Count(marked, groupMark) {
	case 0:
		if other, err := c.pushBranch(tmpl, c.ShardIndex, "group"); err != nil || other != push {
			return "", "", errors.New("{{.Group}} must be written as it is, not through a function")
		}
		return "", "", nil
	case 1:
	default:
		return "", "", errors.New("{{.Group}} may appear once")
	}
	prefix, suffix, _ = strings.Cut(marked, groupMark)
	example := gitops.Options{PushBranch: push, GroupPrefix: prefix, GroupSuffix: suffix}.GroupBranch("namespace/shop")
	switch {
	case checkBranch(example) != nil:
		return "", "", fmt.Errorf("a group's branch: %w", checkBranch(example))
	case strings.HasPrefix(example, push+"/"):
		// git keeps refs as files: a branch cannot be a directory too.
		return "", "", fmt.Errorf("a group's branch %q would be under the branch %q, which git refuses", example, push)
	}
	return prefix, suffix, nil
}

// pushBranch renders the branch template for a shard and a group's slot
// ("" for the push branch).
func (c *Config) pushBranch(tmpl string, shard int, group string) (string, error) {
	t, err := template.New("branch").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	data := struct {
		Base, Path string
		Shard      int
		Sharded    bool
		Group      string
	}{c.GitBranch, strings.Trim(path.Clean("/"+c.GitPath), "/"), shard, c.ShardCount > 1, group}
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "/"), nil
}

// shardedTemplate reports whether tmpl gives every shard its own branch.
func (c *Config) shardedTemplate(tmpl string) bool {
	a, errA := c.pushBranch(tmpl, 0, "")
	b, errB := c.pushBranch(tmpl, 1, "")
	return errA == nil && errB == nil && a != b
}
