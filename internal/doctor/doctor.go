package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// Collector lists the ResourceRecommends in scope and their targets.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
}

// Config is what the checks use, each built as a run builds it.
type Config struct {
	// APIServer is the apiserver's address, shown as a heading.
	APIServer string
	// Version answers the apiserver's version: the check that it answers.
	Version discovery.ServerVersionInterfaceWithContext
	// Access reviews what the job's identity may do.
	Access authorizationclient.SelfSubjectAccessReviewInterface
	// WriteStatus adds the check that statuses may be written.
	WriteStatus bool
	// Collector is the run's.
	Collector Collector
	// PrometheusURL is the API's address, shown without credentials.
	PrometheusURL string
	// Prometheus is the API the run's reader queries; ReaderOptions are
	// the run's settings of that reader.
	Prometheus    usage.RangeQuerier
	ReaderOptions []usage.Option
	// Git is the repository as a run clones it; no URL skips the check.
	Git gitops.Options
	// PullRequests tells which of the job's pull requests were merged,
	// as a run asks its forge; nil when the job has none.
	PullRequests interface {
		Get(ctx context.Context, number int) (*forge.PullRequest, error)
	}
	// Verify are the thresholds a run watches its merged changes with; a
	// Period of verify.Off, as verify-period 0, watches nothing.
	Verify verify.Thresholds
	// Record is the job's record of what it pushed, which verification
	// trusts alone; nil when the job keeps none.
	Record interface {
		Load(ctx context.Context) ([]gitops.Pushed, error)
	}
	// Checkpoints are the shard's checkpoints of the folded history; nil
	// when the job keeps none.
	Checkpoints interface {
		Load(ctx context.Context) (*checkpoint.Checkpoint, error)
	}
	// Now is the time the merged changes are checked at; time.Now when
	// nil.
	Now func() time.Time
	// Log receives what the stages log; none when nil.
	Log *slog.Logger
}

// Run runs every check and writes what it finds to out. It returns nil
// when every check passed, else each failure, joined, so that the caller
// can tell an unreachable dependency from a refusal.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	d := &checks{out: out, log: cfg.Log}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.section("apiserver " + cfg.APIServer)
	items := d.cluster(ctx, cfg)

	d.section("prometheus " + redactedURL(cfg.PrometheusURL))
	d.history(ctx, cfg, items)

	if cfg.Checkpoints != nil {
		d.section("checkpoints")
		d.checkpoints(ctx, cfg, items)
	}

	d.section("repository " + redactedURL(cfg.Git.URL))
	d.repository(ctx, cfg.Git)

	if cfg.Git.URL != "" && cfg.Prometheus != nil {
		d.section("merged changes")
		d.merged(ctx, cfg, items)
	}
	return errors.Join(d.failures...)
}

// checks writes the outcome of each check.
type checks struct {
	out      io.Writer
	log      *slog.Logger
	failures []error
}

func (d *checks) section(title string) { fmt.Fprintf(d.out, "\n%s\n", title) }

func (d *checks) ok(format string, args ...any) {
	fmt.Fprintf(d.out, "  ok    %s\n", fmt.Sprintf(format, args...))
}

func (d *checks) info(format string, args ...any) {
	fmt.Fprintf(d.out, "        %s\n", fmt.Sprintf(format, args...))
}

func (d *checks) fail(what string, err error) {
	d.failures = append(d.failures, fmt.Errorf("%s: %w", what, err))
	fmt.Fprintf(d.out, "  FAIL  %s: %v\n", what, err)
}

// cluster checks the apiserver and the permissions a run needs, then
// collects and shows every ResourceRecommend's validation.
func (d *checks) cluster(ctx context.Context, cfg Config) []collect.Item {
	version, err := cfg.Version.ServerVersionWithContext(ctx)
	if err != nil {
		d.fail("reaching the apiserver", err)
		return nil
	}
	d.ok("reachable, Kubernetes %s", version.GitVersion)

	gvr := v1alpha1.GroupVersionResource()
	checks := []authorizationv1.ResourceAttributes{{Verb: "list", Group: gvr.Group, Resource: gvr.Resource}}
	if cfg.WriteStatus {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "patch", Group: gvr.Group, Resource: gvr.Resource, Subresource: "status"})
	}
	for _, attrs := range checks {
		d.access(ctx, cfg.Access, attrs)
	}

	items, err := cfg.Collector.Collect(ctx)
	if err != nil {
		d.fail("listing ResourceRecommends and their targets", err)
		return nil
	}
	invalid := 0
	for _, it := range items {
		if it.Invalid != nil {
			invalid++
		}
	}
	d.ok("%d ResourceRecommends in scope, %d invalid, targets listed", len(items), invalid)
	for _, it := range items {
		name := it.Namespace + "/" + it.Name
		if it.Invalid != nil {
			msg := it.Invalid.Code + ": " + it.Invalid.Message
			if it.Cause != nil {
				msg += " (" + it.Cause.Error() + ")"
			}
			d.info("%s  invalid: %s", name, msg)
			continue
		}
		var containers []string
		for _, p := range it.Policies {
			containers = append(containers, p.ContainerName)
		}
		line := fmt.Sprintf("%s  %s %s, containers %s", name, it.Target.Kind, it.Target.Name, strings.Join(containers, ", "))
		if w := it.Extensions.Window; w != 0 {
			line += ", window " + w.String()
		}
		if p := it.Extensions.PeakInterval; p != 0 {
			line += ", memory peak interval " + p.String()
		}
		d.info("%s", line)
		for _, res := range slices.Sorted(maps.Keys(it.HeldBack)) {
			d.info("%s  %s held back: %s", name, res, it.HeldBack[res])
		}
	}
	return items
}

func (d *checks) access(ctx context.Context, client authorizationclient.SelfSubjectAccessReviewInterface, attrs authorizationv1.ResourceAttributes) {
	what := attrs.Verb + " " + attrs.Resource
	if attrs.Subresource != "" {
		what += "/" + attrs.Subresource
	}
	if attrs.Group != "" {
		what += "." + attrs.Group
	}
	review, err := client.Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}},
		metav1.CreateOptions{})
	switch {
	case err != nil:
		d.fail("checking "+what, err)
	case !review.Status.Allowed:
		reason := ""
		if review.Status.Reason != "" {
			reason = ": " + review.Status.Reason
		}
		d.fail(what, errors.New("not allowed"+reason))
	default:
		d.ok("allowed: %s", what)
	}
}

// history reads the history of the valid items as a run does, and shows
// the PromQL sent, how many series answered each query, and what each
// container's recommendation would be computed from.
func (d *checks) history(ctx context.Context, cfg Config, items []collect.Item) {
	wants := recommend.Wants(items)
	if len(wants) == 0 {
		d.info("no valid ResourceRecommend: nothing to query")
		return
	}
	d.backend(ctx, cfg.Prometheus)
	rec, api := newRecorder(cfg.Prometheus)
	var mu sync.Mutex
	splits := map[string][]usage.Split{}
	opts := append(slices.Clone(cfg.ReaderOptions), usage.WithSplits(func(s usage.Split) {
		mu.Lock()
		splits[s.Namespace] = append(splits[s.Namespace], s)
		mu.Unlock()
	}))
	reader := namespaceTagger{usage.NewReader(api, opts...)}
	// Each namespace's failure is in h; the error only sums them up.
	h, _ := usage.ReadAll(ctx, reader, wants, d.log)
	warned := false

	byNamespace := map[string][]collect.Item{}
	for _, it := range items {
		if it.Invalid == nil && it.Workload != nil {
			byNamespace[it.Namespace] = append(byNamespace[it.Namespace], it)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		sent := rec.sent(ns)
		for _, q := range sent.queries {
			if q.step == 0 {
				d.info("namespace %s: %d series over %s <- %s", ns, q.series, q.span, q.query)
				continue
			}
			d.info("namespace %s: %d series over %s at %s <- %s", ns, q.series, q.span, q.step, q.query)
		}
		for _, s := range splits[ns] {
			d.info("namespace %s: the %s query was refused for its size (%s): read again in two pieces by %s, %d and %d", ns, s.Query, s.Limit, s.By, s.Pieces[0], s.Pieces[1])
		}
		if _, err := h.Of(recommend.WantOf(byNamespace[ns][0])); err != nil {
			var partial *usage.PartialError
			if !warned && errors.As(err, &partial) {
				warned = true
				d.info("first warning of the backend: %s", partial.Warning)
			}
			d.fail("reading the history of namespace "+ns, err)
			continue
		}
		switch sent.listings {
		case 0:
			d.ok("namespace %s: %d queries", ns, sent.calls)
		case 1:
			d.ok("namespace %s: %d queries and a series listing", ns, sent.calls-1)
		default:
			d.ok("namespace %s: %d queries and %d series listings", ns, sent.calls-sent.listings, sent.listings)
		}
		for _, it := range byNamespace[ns] {
			d.usage(it, h)
		}
	}
}

// backend shows what the API says it is, and its limits on a query's
// size; an API that does not say is no failure.
func (d *checks) backend(ctx context.Context, api usage.RangeQuerier) {
	describer, ok := api.(interface {
		Backend(ctx context.Context) (usage.Backend, error)
	})
	if !ok {
		return
	}
	b, err := describer.Backend(ctx)
	if err != nil {
		d.info("backend: not told (%v)", err)
		return
	}
	name := strings.TrimSpace(b.Name + " " + b.Version)
	if len(b.Limits) == 0 {
		d.ok("backend: %s", name)
		return
	}
	d.ok("backend: %s, limits %s", name, strings.Join(b.Limits, ", "))
}

// usage shows the samples of each container resource of it.
func (d *checks) usage(it collect.Item, h *usage.Histories) {
	name := it.Namespace + "/" + it.Name
	u, _ := h.Of(recommend.WantOf(it))
	if len(u) == 0 {
		d.fail(name, errors.New("no series matched its pods: check the pod names, the labels of the cAdvisor metrics and prometheus-label-filter"))
		return
	}
	for _, c := range slices.Sorted(maps.Keys(u)) {
		for _, res := range slices.Sorted(maps.Keys(u[c])) {
			hist := u[c][res]
			d.info("%s %s %s: %d samples over %s", name, c, res, len(hist.Values), hist.Span())
		}
	}
}

// repository clones the base branch as a run would and tells whether the
// push branch exists. Push access shows only when a run pushes.
func (d *checks) repository(ctx context.Context, git gitops.Options) {
	if git.URL == "" {
		d.info("no git-url set: a run stops before the repository")
		return
	}
	dir, err := os.MkdirTemp("", "recommend-job-doctor-")
	if err != nil {
		d.fail("creating a work directory", err)
		return
	}
	defer os.RemoveAll(dir)
	ws, err := gitops.Checkout(ctx, git, dir)
	if err != nil {
		d.fail("cloning", err)
		return
	}
	d.ok("cloned base branch %s at %s", git.BaseBranch, ws.BaseHead())
	if ws.PushBranchExists() {
		d.info("push branch %s exists: the next run rebuilds it on the base", ws.Branch())
	} else {
		d.info("push branch %s does not exist yet", ws.Branch())
	}
}

// redactedURL drops any user information from a URL before it is shown.
func redactedURL(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw, "@"); at > i {
			return raw[:i+3] + raw[at+1:]
		}
	}
	return raw
}
