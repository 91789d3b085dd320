package gitops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"
)

// GroupBy says how a run groups its changes into pull requests.
type GroupBy struct {
	// Kind is "none" (one pull request for the run), "namespace",
	// "application" (what deploys the target), "label" or "annotation"
	// (of the ResourceRecommend).
	Kind string
	// Key is the label or annotation whose value names the group.
	Key string
}

// ParseGroupBy reads the pr-group-by setting: none, namespace,
// application, label:<key> or annotation:<key>.
func ParseGroupBy(s string) (GroupBy, error) {
	kind, key, hasKey := strings.Cut(strings.TrimSpace(s), ":")
	switch {
	case (kind == "none" || kind == "namespace" || kind == "application") && !hasKey:
		return GroupBy{Kind: kind}, nil
	case (kind == "label" || kind == "annotation") && strings.TrimSpace(key) != "":
		return GroupBy{Kind: kind, Key: strings.TrimSpace(key)}, nil
	}
	return GroupBy{}, fmt.Errorf("%q: want none, namespace, application, label:<key> or annotation:<key>", s)
}

// String is the setting's form.
func (g GroupBy) String() string {
	if g.Key != "" {
		return g.Kind + ":" + g.Key
	}
	return g.Kind
}

// Grouped reports whether the run opens a pull request per group.
func (g GroupBy) Grouped() bool { return g.Kind != "" && g.Kind != "none" }

// GroupBranch is the branch of one pull request group: the push branch,
// the group's name made safe for a ref, a hash of the name, so that two
// groups never share a branch and a group keeps its branch from run to
// run, and a check of the push branch, so that the job tells its own group
// branches from those of a job whose push branch starts with its own
// (recommend-job/main-shard-1 and recommend-job/main-shard-10). A "/"
// would make the push branch a directory of refs, which a branch of that
// name forbids: the parts are joined with "-". The slug keeps letters,
// digits and single dots, so that no group name (a label value "a..b", an
// annotation "../x") makes a name git check-ref-format refuses.
func GroupBranch(pushBranch, group string) string {
	return defaultNaming(pushBranch).branch(group)
}

// groupNaming places a group's name in its branch: prefix, the name and
// its check, suffix. key is what the check covers besides the name.
type groupNaming struct{ prefix, suffix, key string }

// defaultNaming puts the group's name after the push branch and a "-".
func defaultNaming(pushBranch string) groupNaming {
	return groupNaming{prefix: pushBranch + "-", key: pushBranch}
}

// GroupBranch is the branch of one pull request group: GroupBranch of the
// push branch, or, when git-branch-template places {{.Group}}, the
// template with the group's name and check in its place.
func (o Options) GroupBranch(group string) string { return o.groupNaming().branch(group) }

// IsGroupBranch reports whether name is a branch o.GroupBranch made.
func (o Options) IsGroupBranch(name string) bool { return o.groupNaming().owns(name) }

// GroupHeadPrefix is what every branch o.GroupBranch makes starts with.
func (o Options) GroupHeadPrefix() string { return o.groupNaming().prefix }

func (o Options) groupNaming() groupNaming {
	n := defaultNaming(o.PushBranch)
	if o.GroupPrefix != "" || o.GroupSuffix != "" {
		n = groupNaming{prefix: o.GroupPrefix, suffix: o.GroupSuffix, key: o.GroupPrefix + "\x00" + o.GroupSuffix}
	}
	if o.Cluster != "" {
		// The slug says whose branch it is; the check, which covers the
		// whole identity, keeps apart two clusters whose slugs agree.
		n.prefix += clusterSlug(o.Cluster) + "-"
		n.key += "\x00cluster\x00" + o.Cluster
	}
	return n
}

// clusterSlug is the cluster's identity as a branch name holds it: its
// slug, or 8 hex digits of its hash when it has no letter or digit.
func clusterSlug(cluster string) string {
	if s := slug(cluster, maxClusterSlug); s != "" {
		return s
	}
	sum := sha256.Sum256([]byte(cluster))
	return hex.EncodeToString(sum[:4])
}

// maxClusterSlug bounds the cluster's part of a group's branch name.
const maxClusterSlug = 32

func (n groupNaming) branch(group string) string {
	sum := sha256.Sum256([]byte(group))
	name := hex.EncodeToString(sum[:4])
	if s := slug(group, maxGroupSlug); s != "" {
		name = s + "-" + name
	}
	return n.prefix + name + branchCheck(n.key, name) + n.suffix
}

// slug keeps the letters, digits and single dots of s, lower-case, each
// run of anything else one "-", about limit bytes at most, with no "-"
// or "." at either end.
func slug(s string, limit int) string {
	var b strings.Builder
	dash := false
	var last rune
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' && last != '.'
		last = r
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= limit {
			break
		}
	}
	return strings.Trim(b.String(), "-.")
}

// branchCheck is the check of a group branch: hex digits of a hash of the
// push branch and the rest of the name.
func branchCheck(pushBranch, name string) string {
	sum := sha256.Sum256([]byte(pushBranch + "\x00" + name))
	return hex.EncodeToString(sum[:branchCheckBytes])
}

// branchCheckBytes is the length of the check: another job's branch passes
// for one of this job's one time in 2^24.
const branchCheckBytes = 3

// maxGroupSlug bounds the readable part of a group's branch name.
const maxGroupSlug = 48

// GroupBranches lists the branches of the remote that opts.GroupBranch
// made: the branches of groups of this or an earlier run.
func GroupBranches(ctx context.Context, opts Options) ([]string, error) {
	a, err := accessOf(opts)
	if err != nil {
		return nil, err
	}
	cleanURL, auth := a.url, a.auth
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	listCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{cleanURL}})
	refs, err := remote.ListContext(listCtx, &git.ListOptions{Auth: auth})
	if err != nil {
		return nil, redactErr(fmt.Errorf("listing branches of %s: %w", cleanURL, err), opts)
	}
	var out []string
	for _, r := range refs {
		if name := r.Name().Short(); r.Name().IsBranch() && opts.IsGroupBranch(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// IsGroupBranch reports whether name is a GroupBranch of pushBranch: the
// push branch, "-", a slug and "-" (unless the slug is empty), 8 hex
// digits of the group, and the check of the push branch and what comes
// before it.
func IsGroupBranch(pushBranch, name string) bool {
	return defaultNaming(pushBranch).owns(name)
}

func (n groupNaming) owns(name string) bool {
	rest, ok := strings.CutPrefix(name, n.prefix)
	if !ok {
		return false
	}
	if rest, ok = strings.CutSuffix(rest, n.suffix); !ok {
		return false
	}
	count := 8 + 2*branchCheckBytes
	if len(rest) < count {
		return false
	}
	digits := rest[len(rest)-count:]
	if _, err := hex.DecodeString(digits); err != nil || strings.ToLower(digits) != digits {
		return false
	}
	if len(rest) > count && rest[len(rest)-count-1] != '-' {
		return false
	}
	named := rest[:len(rest)-2*branchCheckBytes]
	return rest[len(named):] == branchCheck(n.key, named)
}

// OnBranch is o pushing to branch, a group's, with what Prepare parsed
// of o: a group's checkout parses nothing again.
func (o Options) OnBranch(branch string) Options {
	o.PushBranch = branch
	return o
}
