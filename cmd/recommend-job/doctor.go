package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// doctor checks what a run depends on and shows why a run would recommend
// nothing: whether the apiserver, Prometheus and the repository answer,
// whether the ServiceAccount may read what it must, each
// ResourceRecommend's validation, the PromQL a run sends with how many
// series answer, and the history each container would get. It changes
// nothing. It returns the exit code: 0 when every check passed.
func doctor(ctx context.Context, cfg *Config, out io.Writer, log *slog.Logger) int {
	d := &doctorRun{out: out}
	rec := &recordingQuerier{}
	w, err := wire(cfg, log, func(q usage.RangeQuerier) usage.RangeQuerier { rec.next = q; return rec })
	if err != nil {
		d.fail("configuration", err)
		return d.code()
	}

	d.section("apiserver " + w.rest.Host)
	items := d.checkCluster(ctx, cfg, w)

	d.section("prometheus " + redactedURL(cfg.PrometheusURL))
	d.checkHistory(ctx, w, items, rec)

	d.section("repository " + redactedURL(cfg.GitURL))
	d.checkRepository(ctx, w)
	return d.code()
}

type doctorRun struct {
	out      io.Writer
	failures int
	unreach  bool
}

func (d *doctorRun) section(title string) { fmt.Fprintf(d.out, "\n%s\n", title) }
func (d *doctorRun) ok(format string, args ...any) {
	fmt.Fprintf(d.out, "  ok    %s\n", fmt.Sprintf(format, args...))
}
func (d *doctorRun) info(format string, args ...any) {
	fmt.Fprintf(d.out, "        %s\n", fmt.Sprintf(format, args...))
}

func (d *doctorRun) fail(what string, err error) {
	d.failures++
	if exitCodeFor(err) == exitUnreachable {
		d.unreach = true
	}
	fmt.Fprintf(d.out, "  FAIL  %s: %v\n", what, err)
}

func (d *doctorRun) code() int {
	switch {
	case d.unreach:
		return exitUnreachable
	case d.failures > 0:
		return exitFailed
	default:
		return exitOK
	}
}

// checkCluster checks the apiserver and the permissions a run needs, then
// collects and shows every ResourceRecommend's validation.
func (d *doctorRun) checkCluster(ctx context.Context, cfg *Config, w *wiring) []collect.Item {
	client, err := kubernetes.NewForConfig(w.rest)
	if err != nil {
		d.fail("kubernetes client", err)
		return nil
	}
	version, err := client.Discovery().ServerVersion()
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
		d.checkAccess(ctx, client, attrs)
	}

	items, err := w.collector.Collect(ctx)
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
		switch {
		case it.Invalid != nil:
			msg := it.Invalid.Code + ": " + it.Invalid.Message
			if it.Cause != nil {
				msg += " (" + it.Cause.Error() + ")"
			}
			d.info("%s  invalid: %s", name, msg)
		default:
			var containers []string
			for _, p := range it.Policies {
				containers = append(containers, p.ContainerName)
			}
			d.info("%s  %s %s, containers %s", name, it.Target.Kind, it.Target.Name, strings.Join(containers, ", "))
			for res, why := range it.HeldBack {
				d.info("%s  %s held back: %s", name, res, why)
			}
		}
	}
	return items
}

func (d *doctorRun) checkAccess(ctx context.Context, client kubernetes.Interface, attrs authorizationv1.ResourceAttributes) {
	what := attrs.Verb + " " + attrs.Resource
	if attrs.Subresource != "" {
		what += "/" + attrs.Subresource
	}
	if attrs.Group != "" {
		what += "." + attrs.Group
	}
	review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}},
		metav1.CreateOptions{})
	switch {
	case err != nil:
		d.fail("checking "+what, err)
	case !review.Status.Allowed:
		d.fail(what, errors.New("not allowed"+reasonSuffix(review.Status.Reason)))
	default:
		d.ok("allowed: %s", what)
	}
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// checkHistory reads the history a run would read and shows the PromQL
// sent, how many series answered each query, and what each valid
// container resource would be computed from.
func (d *doctorRun) checkHistory(ctx context.Context, w *wiring, items []collect.Item, rec *recordingQuerier) {
	byNamespace := map[string][]usage.WorkloadRef{}
	names := map[usage.WorkloadRef]string{}
	for _, it := range items {
		if it.Invalid != nil || it.Workload == nil {
			continue
		}
		ref := usage.WorkloadRef{Kind: it.Workload.Kind, Namespace: it.Namespace, Name: it.Workload.Name}
		byNamespace[it.Namespace] = append(byNamespace[it.Namespace], ref)
		names[ref] = it.Namespace + "/" + it.Name
	}
	if len(byNamespace) == 0 {
		d.info("no valid ResourceRecommend: nothing to query")
		return
	}
	namespaces := make([]string, 0, len(byNamespace))
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		rec.queries = nil
		got, err := w.reader.Read(ctx, ns, byNamespace[ns])
		for _, q := range rec.queries {
			d.info("namespace %s: %d series <- %s", ns, q.series, q.query)
		}
		if err != nil {
			d.fail("reading the history of namespace "+ns, err)
			continue
		}
		d.ok("namespace %s: %d queries", ns, len(rec.queries))
		for _, ref := range byNamespace[ns] {
			u := got[ref]
			if len(u) == 0 {
				d.fail(names[ref], errors.New("no series matched its pods: check the pod names, the labels of the cAdvisor metrics and prometheus-label-filter"))
				continue
			}
			containers := make([]string, 0, len(u))
			for c := range u {
				containers = append(containers, c)
			}
			sort.Strings(containers)
			for _, c := range containers {
				for res, h := range u[c] {
					d.info("%s %s %s: %d samples over %s", names[ref], c, res, len(h.Values), h.Span())
				}
			}
		}
	}
}

// checkRepository clones the base branch as a run would and tells whether
// the push branch exists. Push access shows only when a run pushes.
func (d *doctorRun) checkRepository(ctx context.Context, w *wiring) {
	if w.job.Git.URL == "" {
		d.info("no git-url set: a run stops before the repository")
		return
	}
	dir, err := os.MkdirTemp("", "recommend-job-doctor-")
	if err != nil {
		d.fail("creating a work directory", err)
		return
	}
	defer os.RemoveAll(dir)
	ws, err := gitops.Checkout(ctx, w.job.Git, dir)
	if err != nil {
		d.fail("cloning", err)
		return
	}
	d.ok("cloned base branch %s at %s", w.job.Git.BaseBranch, ws.BaseHead())
	if ws.PushBranchExists() {
		d.info("push branch %s exists: the next run rebuilds it on the base", ws.Branch())
	} else {
		d.info("push branch %s does not exist yet", ws.Branch())
	}
}

// recordingQuerier passes range queries on and remembers each with the
// number of series that answered.
type recordingQuerier struct {
	next    usage.RangeQuerier
	queries []recordedQuery
}

type recordedQuery struct {
	query  string
	series int
}

func (r *recordingQuerier) QueryRange(ctx context.Context, query string, rng promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	v, warnings, infos, err := r.next.QueryRange(ctx, query, rng, opts...)
	n := 0
	if m, ok := v.(model.Matrix); ok {
		n = len(m)
	}
	r.queries = append(r.queries, recordedQuery{query: query, series: n})
	return v, warnings, infos, err
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
