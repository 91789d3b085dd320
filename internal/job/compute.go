package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
	"github.com/recommend-job/recommend-job/internal/usage"
)

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
