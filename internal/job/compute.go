package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// SettingsReader is a UsageReader that can also read groups of workloads
// with other windows or memory peak intervals than its own, for
// ResourceRecommends whose extensions set them, in the queries of one read.
type SettingsReader interface {
	ReadEach(ctx context.Context, namespace string, groups map[usage.Settings][]usage.WorkloadRef) (map[usage.Settings]map[usage.WorkloadRef]usage.Usage, error)
}

// workloadKey is a workload's history read with one set of settings.
type workloadKey struct {
	ref      usage.WorkloadRef
	settings usage.Settings
}

// history is what readUsage found: the usage of each workload, and the
// error of each namespace whose history could not be read.
type history struct {
	usage  map[workloadKey]usage.Usage
	failed map[string]error
	// perItem says whether each item's history was read with its own
	// settings; a reader that cannot honour them reads all with its own.
	perItem bool
}

// settingsOf are the settings an item's history is read with; zero values
// are the reader's own.
func (h history) settingsOf(item collect.Item) usage.Settings {
	if !h.perItem {
		return usage.Settings{}
	}
	return usage.Settings{Window: item.Extensions.Window, PeakInterval: item.Extensions.PeakInterval}
}

// readUsage reads history per namespace, in one read whatever windows and
// peak intervals its items' extensions set, so that the number of queries
// grows with namespaces, not with workloads, containers or extensions. A
// namespace whose query fails is logged and its workloads are reported with
// that error; only when every namespace fails is the run abandoned, as
// nothing could be recommended.
func readUsage(ctx context.Context, items []collect.Item, reader UsageReader, log *slog.Logger) (history, error) {
	settingsReader, perItem := reader.(SettingsReader)
	h := history{usage: map[workloadKey]usage.Usage{}, failed: map[string]error{}, perItem: perItem}
	groups := map[string]map[usage.Settings][]usage.WorkloadRef{}
	for _, item := range items {
		if item.Invalid != nil || item.Workload == nil {
			continue
		}
		if groups[item.Namespace] == nil {
			groups[item.Namespace] = map[usage.Settings][]usage.WorkloadRef{}
		}
		s, ref := h.settingsOf(item), workloadRef(item)
		if !containsRef(groups[item.Namespace][s], ref) {
			groups[item.Namespace][s] = append(groups[item.Namespace][s], ref)
		}
	}
	namespaces := make([]string, 0, len(groups))
	for ns := range groups {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)

	var errs []error
	for _, ns := range namespaces {
		var (
			got map[usage.Settings]map[usage.WorkloadRef]usage.Usage
			err error
		)
		if perItem {
			got, err = settingsReader.ReadEach(ctx, ns, groups[ns])
		} else {
			var u map[usage.WorkloadRef]usage.Usage
			u, err = reader.Read(ctx, ns, groups[ns][usage.Settings{}])
			got = map[usage.Settings]map[usage.WorkloadRef]usage.Usage{{}: u}
		}
		if err != nil {
			log.ErrorContext(ctx, "cannot read usage history", "namespace", ns, "error", err)
			h.failed[ns] = err
			errs = append(errs, err)
			continue
		}
		for s, byRef := range got {
			for ref, u := range byRef {
				h.usage[workloadKey{ref: ref, settings: s}] = u
			}
		}
	}
	if len(errs) > 0 && len(errs) == len(namespaces) {
		// The failed namespaces still say why each workload has no history.
		return h, fmt.Errorf("%w: %w", ErrUsageUnavailable, errors.Join(errs...))
	}
	return h, nil
}

func containsRef(refs []usage.WorkloadRef, ref usage.WorkloadRef) bool {
	for _, r := range refs {
		if r == ref {
			return true
		}
	}
	return false
}

func workloadRef(item collect.Item) usage.WorkloadRef {
	return usage.WorkloadRef{Kind: item.Workload.Kind, Namespace: item.Namespace, Name: item.Workload.Name}
}

// algorithm is the run's algorithm settings with the item's extensions on
// top.
func algorithm(cfg Config, item collect.Item) recommend.Options {
	opts := cfg.Algorithm
	if p := item.Extensions.Percentile; p != 0 {
		opts.CPUPercentile, opts.MemoryPercentile = p, p
	}
	if p := item.Extensions.CPUPercentile; p != 0 {
		opts.CPUPercentile = p
	}
	if p := item.Extensions.MemoryPercentile; p != 0 {
		opts.MemoryPercentile = p
	}
	if hl := item.Extensions.HalfLife; hl != 0 {
		opts.HalfLife = hl
	}
	return opts.WithDefaults()
}

// recommendItem computes the item's recommendations and the render changes
// they call for: every value that is not held back, also those equal to
// the live value, because the repository may hold another value than the
// cluster and the renderer leaves equal values alone.
func recommendItem(item collect.Item, h history, cfg Config) (report.Entry, []render.Change) {
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
	unavailable := h.failed[item.Namespace]
	workloadUsage := h.usage[workloadKey{ref: workloadRef(item), settings: h.settingsOf(item)}]
	opts := algorithm(cfg, item)
	var changes []render.Change
	for _, policy := range item.Policies {
		current := item.Workload.Container(policy.ContainerName)
		rc := report.Container{Name: policy.ContainerName}
		requests, limits := map[string]string{}, map[string]string{}
		for _, rp := range policy.Resources {
			var res report.Resource
			var req, lim *resource.Quantity
			switch {
			case unavailable != nil:
				res = report.Resource{Resource: string(rp.Resource), Reason: report.ReasonHistoryUnavailable + unavailable.Error()}
			// An HPA's utilization is relative to the request: a limit-only
			// change does not touch what it sees.
			case item.HeldBack[rp.Resource] != "" && rp.ControlledValues != v1alpha1.ContainerControlledValuesLimitsOnly:
				res = report.Resource{Resource: string(rp.Resource), Reason: "held back: " + item.HeldBack[rp.Resource], HeldBack: true}
				if q, ok := current.Requests[rp.Resource]; ok {
					res.Current = q.String()
				}
			default:
				res, req, lim = recommendResource(rp, current, workloadUsage[policy.ContainerName][rp.Resource], opts)
			}
			if req != nil {
				requests[res.Resource] = req.String()
			}
			if lim != nil {
				limits[res.Resource] = lim.String()
			}
			rc.Resources = append(rc.Resources, res)
		}
		entry.Containers = append(entry.Containers, rc)
		if len(requests) > 0 || len(limits) > 0 {
			c := render.Change{
				Target:    renderTarget(item),
				Container: policy.ContainerName,
				Requests:  requests,
				Mode:      render.Mode(item.Annotations[render.AnnotationMode]),
				Path:      item.Annotations[render.AnnotationPath],
			}
			if len(limits) > 0 {
				c.Limits = limits
			}
			changes = append(changes, c)
		}
	}
	return entry, changes
}

// recommendResource recommends one resource of one container and returns
// the request and limit to write, nil for those that stay.
func recommendResource(rp collect.ResourcePolicy, current *collect.Container, h *usage.History, opts recommend.Options) (report.Resource, *resource.Quantity, *resource.Quantity) {
	res := report.Resource{Resource: string(rp.Resource)}
	in := recommend.Input{
		Resource:         rp.Resource,
		BufferPercent:    rp.BufferPercent,
		MinAllowed:       rp.MinAllowed,
		MaxAllowed:       rp.MaxAllowed,
		ControlledValues: rp.ControlledValues,
	}
	if current != nil {
		if q, ok := current.Requests[rp.Resource]; ok {
			in.Request = &q
			res.Current = q.String()
		}
		if q, ok := current.Limits[rp.Resource]; ok {
			in.Limit = &q
		}
	}
	if h != nil {
		in.Window, in.Now, in.OOMKilled, in.First, in.Last = h.Window, h.End, h.OOMKilled, h.First, h.Last
		in.Samples = make([]recommend.Sample, len(h.Values))
		for i, v := range h.Values {
			in.Samples[i] = recommend.Sample{Time: h.Time(i), Value: v}
		}
	}
	out, err := recommend.Compute(in, opts)
	if err != nil {
		res.Reason = err.Error()
		return res, nil, nil
	}
	res.Evidence = &out.Evidence
	if out.Value == nil {
		res.Reason = out.Reason
		return res, nil, nil
	}
	res.Recommended = out.Value.String()
	if rp.ControlledValues == v1alpha1.ContainerControlledValuesLimitsOnly {
		// The request stays: current and recommended are the limit's.
		res.Current, res.Recommended = "", ""
		if in.Limit != nil {
			res.Current = in.Limit.String()
		}
		switch {
		case out.Limit != nil:
			res.Recommended = out.Limit.String()
		case out.Evidence.HeldBack != "" && out.Evidence.Limit != "":
			// Held back: show what was recommended, though nothing is written.
			res.Recommended = out.Evidence.Limit
		}
	}
	switch {
	case out.Evidence.HeldBack != "":
		res.Reason = "held back: " + out.Evidence.HeldBack
		res.HeldBack = true
	case len(out.Evidence.Capped) > 0:
		res.Reason = "capped at " + strings.Join(out.Evidence.Capped, ", ")
	}
	if out.Request != nil {
		res.Changed = in.Request == nil || in.Request.Cmp(*out.Request) != 0
	}
	if out.Limit != nil && (in.Limit == nil || in.Limit.Cmp(*out.Limit) != 0) {
		res.Changed = true
	}
	if out.Limit != nil && rp.ControlledValues == v1alpha1.ContainerControlledValuesRequestsAndLimits {
		res.RecommendedLimit = out.Limit.String()
		if in.Limit != nil {
			res.CurrentLimit = in.Limit.String()
		}
	}
	return res, out.Request, out.Limit
}

// renderTarget is the object whose manifest holds the pod template: the
// workload itself, or the object it takes its template from (an Argo
// Rollout's workloadRef Deployment). Its labels and annotations let the
// renderer follow Argo CD's and Flux's tracking to the right file.
func renderTarget(item collect.Item) render.Target {
	ref := item.Workload.ObjectRef
	if src := item.Workload.Source; src != nil {
		ref = *src
	}
	return render.Target{
		APIVersion:  ref.APIVersion,
		Kind:        ref.Kind,
		Namespace:   ref.Namespace,
		Name:        ref.Name,
		Labels:      ref.Labels,
		Annotations: ref.Annotations,
	}
}
