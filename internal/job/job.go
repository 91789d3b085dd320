package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
)

// ErrUsageUnavailable is returned when no usage history could be read at all.
var ErrUsageUnavailable = errors.New("usage history unavailable")

// Collector lists the ResourceRecommends and their targets.
type Collector interface {
	Collect(ctx context.Context) ([]collect.Item, error)
}

// UsageReader reads the usage history of one namespace's workloads.
type UsageReader interface {
	Read(ctx context.Context, namespace string, workloads []collect.WorkloadRef) (map[collect.WorkloadRef]collect.Usage, error)
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
}

// Run performs one pass and returns its report. Invalid ResourceRecommends,
// missing history and targets that cannot be rendered are reported in it;
// an error means the pass could not be completed.
func Run(ctx context.Context, cfg Config, collector Collector, usage UsageReader, log *slog.Logger) (*report.Report, error) {
	items, err := collector.Collect(ctx)
	if err != nil {
		return nil, fmt.Errorf("collecting resource recommends: %w", err)
	}
	log.InfoContext(ctx, "collected resource recommends", "count", len(items))

	history, err := readUsage(ctx, items, usage, log)
	if err != nil {
		return nil, err
	}

	rep := &report.Report{DryRun: cfg.DryRun}
	var changes []render.Change
	owners := map[int]int{} // change index -> entry index
	for _, item := range items {
		entry, itemChanges := recommendItem(item, history)
		for _, c := range itemChanges {
			owners[len(changes)] = len(rep.ResourceRecommends)
			changes = append(changes, c)
		}
		rep.ResourceRecommends = append(rep.ResourceRecommends, entry)
	}

	if cfg.Git.URL == "" {
		if !cfg.DryRun {
			return nil, errors.New("no git url configured")
		}
		return rep, nil
	}
	if err := writeBack(ctx, cfg, changes, owners, rep, log); err != nil {
		return nil, err
	}
	return rep, nil
}

// readUsage reads history per namespace. A namespace whose query fails is
// logged and its workloads get no history; only when every namespace fails
// is the run abandoned, as nothing could be recommended.
func readUsage(ctx context.Context, items []collect.Item, usage UsageReader, log *slog.Logger) (map[collect.WorkloadRef]collect.Usage, error) {
	byNamespace := map[string][]collect.WorkloadRef{}
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

	history := map[collect.WorkloadRef]collect.Usage{}
	var errs []error
	for _, ns := range namespaces {
		got, err := usage.Read(ctx, ns, byNamespace[ns])
		if err != nil {
			log.ErrorContext(ctx, "cannot read usage history", "namespace", ns, "error", err)
			errs = append(errs, err)
			continue
		}
		for w, u := range got {
			history[w] = u
		}
	}
	if len(errs) > 0 && len(errs) == len(namespaces) {
		return nil, fmt.Errorf("%w: %w", ErrUsageUnavailable, errors.Join(errs...))
	}
	return history, nil
}

func workloadRef(item collect.Item) collect.WorkloadRef {
	return collect.WorkloadRef{Kind: item.Workload.Kind, Namespace: item.Namespace, Name: item.Workload.Name}
}

// recommendItem computes the item's recommendations and the render changes
// they call for.
func recommendItem(item collect.Item, history map[collect.WorkloadRef]collect.Usage) (report.Entry, []render.Change) {
	entry := report.Entry{
		Namespace: item.Namespace,
		Name:      item.Name,
		Target:    report.Target{APIVersion: item.Target.APIVersion, Kind: item.Target.Kind, Name: item.Target.Name},
		Valid:     item.Invalid == nil,
	}
	if item.Invalid != nil {
		entry.Error = &report.Error{Code: item.Invalid.Code, Message: item.Invalid.Message}
		return entry, nil
	}
	usage := history[workloadRef(item)]
	var changes []render.Change
	for _, policy := range item.Policies {
		current := item.Workload.Container(policy.ContainerName)
		rc := report.Container{Name: policy.ContainerName}
		requests := map[string]string{}
		for _, rp := range policy.Resources {
			res := recommendResource(rp, current, usage[policy.ContainerName][rp.Resource])
			if res.Changed {
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

// recommendResource recommends one request. With RequestsOnly the request
// never exceeds the container's limit, as VPA does: a request above the
// limit would make the pod template invalid.
func recommendResource(rp collect.ResourcePolicy, current *collect.Container, samples []float64) report.Resource {
	res := report.Resource{Resource: string(rp.Resource)}
	if q, ok := current.Requests[rp.Resource]; ok {
		res.Current = q.String()
	}
	rec, err := recommend.Compute(rp.Resource, samples, recommend.Policy{
		Percentile:    recommend.DefaultPercentile,
		BufferPercent: rp.BufferPercent,
	})
	if errors.Is(err, recommend.ErrNoSamples) {
		res.Reason = "insufficient data: no samples in the window"
		return res
	}
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
// a dry run, commits and pushes what changed.
func writeBack(ctx context.Context, cfg Config, changes []render.Change, owners map[int]int, rep *report.Report, log *slog.Logger) error {
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
	for i, r := range out.Results {
		entry := &rep.ResourceRecommends[owners[i]]
		if entry.Source == nil {
			entry.Source = &report.Source{}
		}
		if r.File != "" {
			entry.Source.File = r.File
		}
		entry.Source.Changed = entry.Source.Changed || r.Changed
		if r.Err != nil {
			entry.Source.Error = r.Err.Error()
			log.WarnContext(ctx, "cannot render change", "resourceRecommend", entry.Namespace+"/"+entry.Name, "container", r.Change.Container, "error", r.Err)
		}
	}
	rep.Git.Files = out.Files
	if cfg.DryRun || len(out.Files) == 0 {
		return nil
	}
	hash, committed, err := ws.Commit(out.Files, commitMessage(rep))
	if err != nil {
		return err
	}
	if !committed {
		return nil
	}
	if err := ws.Push(ctx); err != nil {
		return err
	}
	rep.Git.Commit, rep.Git.Pushed = hash, true
	log.InfoContext(ctx, "pushed", "branch", ws.Branch(), "commit", hash, "files", len(out.Files))
	return nil
}

// commitMessage lists every change that landed in a file.
func commitMessage(rep *report.Report) string {
	var b strings.Builder
	b.WriteString("Right-size resource requests\n\n")
	for _, e := range rep.ResourceRecommends {
		if e.Source == nil || !e.Source.Changed {
			continue
		}
		fmt.Fprintf(&b, "%s/%s (%s %s, %s):\n", e.Namespace, e.Name, e.Target.Kind, e.Target.Name, e.Source.File)
		for _, c := range e.Containers {
			var parts []string
			for _, r := range c.Resources {
				if r.Changed {
					parts = append(parts, fmt.Sprintf("%s %s -> %s", r.Resource, orNone(r.Current), r.Recommended))
				}
			}
			if len(parts) > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", c.Name, strings.Join(parts, ", "))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
