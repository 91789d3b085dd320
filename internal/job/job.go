package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// ErrUsageUnavailable is returned when no usage history could be read at all.
var ErrUsageUnavailable = errors.New("usage history unavailable")

// Collector lists the ResourceRecommends and their targets.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
}

// UsageReader reads the usage history of one namespace's workloads.
type UsageReader interface {
	Read(ctx context.Context, namespace string, workloads []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error)
}

// Config is what a run needs beyond its clients.
type Config struct {
	// Git is the repository; an empty URL on a dry run skips git entirely.
	Git gitops.Options
	// Path is the subtree of the repository that holds the manifests.
	Path string
	// DryRun renders and reports but does not commit or push.
	DryRun bool
	// WorkDir is where the repository is cloned; a temporary directory when empty.
	WorkDir string
	// MinSpan is the least time the samples of a resource must cover for a
	// recommendation; DefaultMinSpan when zero.
	MinSpan time.Duration
}

// DefaultMinSpan is katalyst's: a day of history before any recommendation.
const DefaultMinSpan = 24 * time.Hour

// Run performs one pass and returns its report. Invalid ResourceRecommends,
// missing history and targets that cannot be rendered are reported in it.
// An error means the pass could not be completed; the report returned with
// it, if any, holds what was computed before, and nothing was pushed.
func Run(ctx context.Context, cfg Config, collector Collector, reader UsageReader, log *slog.Logger) (*report.Report, error) {
	if cfg.MinSpan == 0 {
		cfg.MinSpan = DefaultMinSpan
	}
	items, err := collector.Collect(ctx)
	if err != nil {
		return nil, fmt.Errorf("collecting resource recommends: %w", err)
	}
	log.InfoContext(ctx, "collected resource recommends", "count", len(items))

	history, err := readUsage(ctx, items, reader, log)
	if err != nil {
		return nil, err
	}

	rep := &report.Report{DryRun: cfg.DryRun, ResourceRecommends: []report.Entry{}}
	var changes []render.Change
	var owners []int // entry index of each change
	for _, item := range items {
		entry, itemChanges := recommendItem(item, history, cfg.MinSpan)
		for _, c := range itemChanges {
			owners = append(owners, len(rep.ResourceRecommends))
			changes = append(changes, c)
		}
		rep.ResourceRecommends = append(rep.ResourceRecommends, entry)
	}

	if cfg.Git.URL == "" {
		if !cfg.DryRun {
			return rep, errors.New("no git url configured")
		}
		return rep, nil
	}
	return rep, writeBack(ctx, cfg, changes, owners, rep, log)
}

// history is what readUsage found: the usage of each workload, and the
// error of each namespace whose history could not be read.
type history struct {
	usage  map[usage.WorkloadRef]usage.Usage
	failed map[string]error
}

// readUsage reads history per namespace. A namespace whose query fails is
// logged and its workloads are reported with that error; only when every
// namespace fails is the run abandoned, as nothing could be recommended.
func readUsage(ctx context.Context, items []collect.Item, reader UsageReader, log *slog.Logger) (history, error) {
	byNamespace := map[string][]usage.WorkloadRef{}
	for _, item := range items {
		if item.Invalid != nil || item.Workload == nil {
			continue
		}
		byNamespace[item.Namespace] = append(byNamespace[item.Namespace], workloadRef(item))
	}
	namespaces := make([]string, 0, len(byNamespace))
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)

	h := history{usage: map[usage.WorkloadRef]usage.Usage{}, failed: map[string]error{}}
	var errs []error
	for _, ns := range namespaces {
		got, err := reader.Read(ctx, ns, byNamespace[ns])
		if err != nil {
			log.ErrorContext(ctx, "cannot read usage history", "namespace", ns, "error", err)
			h.failed[ns] = err
			errs = append(errs, err)
			continue
		}
		for w, u := range got {
			h.usage[w] = u
		}
	}
	if len(errs) > 0 && len(errs) == len(namespaces) {
		return history{}, fmt.Errorf("%w: %w", ErrUsageUnavailable, errors.Join(errs...))
	}
	return h, nil
}

func workloadRef(item collect.Item) usage.WorkloadRef {
	return usage.WorkloadRef{Kind: item.Workload.Kind, Namespace: item.Namespace, Name: item.Workload.Name}
}

// recommendItem computes the item's recommendations and the render changes
// they call for: every recommended value, also those equal to the live
// request, because the repository may hold another value than the cluster
// and the renderer leaves equal values alone.
func recommendItem(item collect.Item, h history, minSpan time.Duration) (report.Entry, []render.Change) {
	entry := report.Entry{
		Namespace: item.Namespace,
		Name:      item.Name,
		Target:    report.Target{APIVersion: item.Target.APIVersion, Kind: item.Target.Kind, Name: item.Target.Name},
		Valid:     item.Invalid == nil,
	}
	if item.Invalid != nil {
		entry.Error = &report.Error{Code: item.Invalid.Code, Message: item.Invalid.Message}
		if item.Cause != nil {
			entry.Error.Cause = item.Cause.Error()
		}
		return entry, nil
	}
	workloadUsage := h.usage[workloadRef(item)]
	unavailable := h.failed[item.Namespace]
	var changes []render.Change
	for _, policy := range item.Policies {
		current := item.Workload.Container(policy.ContainerName)
		rc := report.Container{Name: policy.ContainerName}
		requests := map[string]string{}
		for _, rp := range policy.Resources {
			var res report.Resource
			if unavailable != nil {
				res = report.Resource{Resource: string(rp.Resource), Reason: "usage history unavailable: " + unavailable.Error()}
			} else {
				res = recommendResource(rp, current, workloadUsage[policy.ContainerName][rp.Resource], minSpan)
			}
			if res.Recommended != "" {
				requests[res.Resource] = res.Recommended
			}
			rc.Resources = append(rc.Resources, res)
		}
		entry.Containers = append(entry.Containers, rc)
		if len(requests) > 0 {
			changes = append(changes, render.Change{
				Target: render.Target{
					APIVersion: item.Workload.APIVersion,
					Kind:       item.Workload.Kind,
					Namespace:  item.Namespace,
					Name:       item.Workload.Name,
				},
				Container: policy.ContainerName,
				Requests:  requests,
			})
		}
	}
	return entry, changes
}

// recommendResource recommends one request from at least minSpan of
// history. With RequestsOnly the request never exceeds the container's
// limit, as VPA does: a request above the limit would make the pod
// template invalid.
func recommendResource(rp collect.ResourcePolicy, current *collect.Container, h *usage.History, minSpan time.Duration) report.Resource {
	res := report.Resource{Resource: string(rp.Resource)}
	if q, ok := current.Requests[rp.Resource]; ok {
		res.Current = q.String()
	}
	if h == nil || len(h.Values) == 0 {
		res.Reason = "insufficient data: no samples in the window"
		return res
	}
	if h.Span() < minSpan {
		res.Reason = fmt.Sprintf("insufficient data: %d samples over %s, need %s", len(h.Values), h.Span(), minSpan)
		return res
	}
	rec, err := recommend.Compute(rp.Resource, h.Values, recommend.Policy{
		Percentile:    recommend.DefaultPercentile,
		BufferPercent: rp.BufferPercent,
	})
	if err != nil {
		res.Reason = err.Error()
		return res
	}
	res.Evidence = &rec.Evidence
	value := rec.Value
	if limit, ok := current.Limits[rp.Resource]; ok && value.Cmp(limit) > 0 {
		value = limit
		res.Reason = "capped at the limit " + limit.String()
	}
	res.Recommended = value.String()
	cur, ok := current.Requests[rp.Resource]
	res.Changed = !ok || cur.Cmp(value) != 0
	return res
}

// writeBack clones the repository, renders the changes and, unless this is
// a dry run, commits and pushes what changed. When the push branch already
// holds exactly this result, nothing is pushed.
func writeBack(ctx context.Context, cfg Config, changes []render.Change, owners []int, rep *report.Report, log *slog.Logger) error {
	dir := cfg.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "recommend-job-")
		if err != nil {
			return fmt.Errorf("creating work directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	ws, err := gitops.Checkout(ctx, cfg.Git, dir)
	if err != nil {
		return fmt.Errorf("checking out the repository: %w", err)
	}
	rep.Git = &report.Git{Branch: ws.Branch()}
	if len(changes) == 0 {
		log.InfoContext(ctx, "no changes to render")
		return nil
	}
	out, err := render.Apply(ctx, ws.Dir(), cfg.Path, changes)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	var landed []landedChange
	for i, r := range out.Results {
		entry := &rep.ResourceRecommends[owners[i]]
		if entry.Source == nil {
			entry.Source = &report.Source{}
		}
		if r.File != "" {
			entry.Source.File = r.File
		}
		entry.Source.Changed = entry.Source.Changed || r.Changed
		if r.Changed {
			landed = append(landed, landedChange{Result: r, entry: entry})
		}
		if r.Err != nil {
			entry.Source.Error = r.Err.Error()
			log.WarnContext(ctx, "cannot render change", "resourceRecommend", entry.Namespace+"/"+entry.Name, "container", r.Change.Container, "error", r.Err)
		}
	}
	rep.Git.Files = out.Files
	if cfg.DryRun || len(out.Files) == 0 {
		return nil
	}
	hash, committed, err := ws.Commit(out.Files, commitMessage(landed))
	if err != nil || !committed {
		return err
	}
	upToDate, err := ws.UpToDate(ctx)
	if err != nil {
		return err
	}
	if upToDate {
		log.InfoContext(ctx, "push branch already up to date", "branch", ws.Branch())
		return nil
	}
	if err := ws.Push(ctx); err != nil {
		return err
	}
	rep.Git.Commit, rep.Git.Pushed = hash, true
	log.InfoContext(ctx, "pushed", "branch", ws.Branch(), "commit", hash, "files", len(out.Files))
	return nil
}

// landedChange is a change that altered a file, with its report entry.
type landedChange struct {
	render.Result
	entry *report.Entry
}

// commitMessage lists the changes that landed in a file, per workload, with
// the cluster's current value of each.
func commitMessage(landed []landedChange) string {
	var b strings.Builder
	b.WriteString("Right-size resource requests\n")
	var last *report.Entry
	for _, l := range landed {
		if l.entry != last {
			t := l.Change.Target
			fmt.Fprintf(&b, "\n%s/%s: %s %s (%s)\n", l.entry.Namespace, l.entry.Name, t.Kind, t.Name, l.File)
			last = l.entry
		}
		var parts []string
		for _, c := range l.entry.Containers {
			if c.Name != l.Change.Container {
				continue
			}
			for _, r := range c.Resources {
				if r.Recommended != "" && r.Recommended == l.Change.Requests[r.Resource] {
					parts = append(parts, fmt.Sprintf("%s %s -> %s", r.Resource, orNone(r.Current), r.Recommended))
				}
			}
		}
		fmt.Fprintf(&b, "  %s: %s\n", l.Change.Container, strings.Join(parts, ", "))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
