package recommend

import (
	"strings"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// WantOf is the history a valid item needs: its workload's, read with the
// window and memory peak interval its extensions set.
func WantOf(item collect.Item) usage.Want {
	return usage.Want{
		Ref:      usage.WorkloadRef{Kind: item.Workload.Kind, Namespace: item.Namespace, Name: item.Workload.Name},
		Settings: usage.Settings{Window: item.Extensions.Window, PeakInterval: item.Extensions.PeakInterval},
	}
}

// Wants are the histories of the valid items, in order.
func Wants(items []collect.Item) []usage.Want {
	var wants []usage.Want
	for _, item := range items {
		if item.Invalid == nil && item.Workload != nil {
			wants = append(wants, WantOf(item))
		}
	}
	return wants
}

// FoldFor returns the fold that takes the CPU samples of the item's
// containers as they are read (see usage.FoldFunc), decayed with the
// item's half-life from the start of the window of h, and counted per
// period (PeriodOf) as a checkpoint's slots count them.
func FoldFor(run Options, item collect.Item, h *usage.History) *Fold {
	opts := OptionsFor(run, item.Extensions)
	f := NewFold(corev1.ResourceCPU, opts.HalfLife, h.End.Add(-h.Window))
	length := PeriodOf(h.Window)
	f.periods = newPeriods(corev1.ResourceCPU, length, AnchorOf(h.End, length))
	return f
}

// OptionsFor are the run's algorithm settings with the item's extensions
// on top.
func OptionsFor(run Options, ext collect.Extensions) Options {
	opts := run
	if p := ext.Percentile; p != 0 {
		opts.CPUPercentile, opts.MemoryPercentile = p, p
	}
	if p := ext.CPUPercentile; p != 0 {
		opts.CPUPercentile = p
	}
	if p := ext.MemoryPercentile; p != 0 {
		opts.MemoryPercentile = p
	}
	if hl := ext.HalfLife; hl != 0 {
		opts.HalfLife = hl
	}
	return opts.WithDefaults()
}

// ForItem makes the plan of one collected ResourceRecommend: an invalid
// one with its code, a valid one with a recommendation per container and
// resource from its workload's history u, or the reason there is none.
// unavailable is why the history could not be read, if it could not.
func ForItem(item collect.Item, u usage.Usage, unavailable error, run Options) plan.Item {
	out := plan.Item{
		Namespace:   item.Namespace,
		Name:        item.Name,
		Target:      plan.Target{APIVersion: item.Target.APIVersion, Kind: item.Target.Kind, Name: item.Target.Name},
		Valid:       item.Invalid == nil,
		Labels:      item.Labels,
		Annotations: item.Annotations,

		NamespaceLabels:      item.NamespaceLabels,
		NamespaceAnnotations: item.NamespaceAnnotations,
	}
	if item.Invalid != nil {
		out.Error = &plan.Error{Code: item.Invalid.Code, Message: item.Invalid.Message}
		if item.Cause != nil {
			out.Error.Cause = item.Cause.Error()
		}
		return out
	}
	out.Object = objectOf(item.Workload)
	opts := OptionsFor(run, item.Extensions)
	for _, policy := range item.Policies {
		current := item.Workload.Container(policy.ContainerName)
		c := plan.Container{Name: policy.ContainerName}
		// Series another job wrote under the container's labels would
		// decide its values: none is taken from them.
		refused := u.Refusal(policy.ContainerName)
		for _, rp := range policy.Resources {
			var r plan.Resource
			switch {
			case unavailable != nil:
				r = plan.Resource{Resource: rp.Resource, Reason: plan.ReasonHistoryUnavailable + unavailable.Error()}
			case refused != nil:
				in := inputOf(rp, current, nil)
				r = plan.Resource{Resource: rp.Resource, Current: in.Request, LiveLimit: in.Limit, Reason: refused.Error()}
			// An HPA's utilization is relative to the request: a limit-only
			// change does not touch what it sees.
			case item.HeldBack[rp.Resource] != "" && rp.ControlledValues != v1alpha1.ContainerControlledValuesLimitsOnly:
				r = heldForAutoscaler(rp, current, u[policy.ContainerName][rp.Resource], item.HeldBack[rp.Resource], opts)
			default:
				r = resourceOf(rp, current, u[policy.ContainerName][rp.Resource], opts)
			}
			c.Resources = append(c.Resources, r)
		}
		out.Containers = append(out.Containers, c)
	}
	out.Autoscalers = autoscalersOf(item)
	return out
}

// heldForAutoscaler is a resource whose request stays because an
// autoscaler scales on it (why says which): no value, but the current
// request and limit and what the history shows, so that a reviewer sees
// what the autoscaler works with.
func heldForAutoscaler(rp collect.ResourcePolicy, current *collect.Container, h *usage.History, why string, opts Options) plan.Resource {
	in := inputOf(rp, current, h)
	r := plan.Resource{Resource: rp.Resource, Current: in.Request, LiveLimit: in.Limit, Reason: "held back: " + why, HeldBack: true}
	if h == nil {
		return r
	}
	if ev, err := Observe(in, opts); err == nil {
		ev.HPA = why
		withPoints(&ev, rp.Resource, h)
		r.Evidence = &ev
	}
	return r
}

// withPoints adds the usage of each period of h's window to ev.
func withPoints(ev *plan.Evidence, res corev1.ResourceName, h *usage.History) {
	var length time.Duration
	if ev.Usage, length = pointsOf(res, h); ev.Usage != nil {
		ev.UsagePeriod = UsagePeriodName(length)
	}
}

// inputOf is the input of Compute for one resource of one container: its
// policy, its current values and its history.
func inputOf(rp collect.ResourcePolicy, current *collect.Container, h *usage.History) Input {
	in := Input{
		Resource:         rp.Resource,
		BufferPercent:    rp.BufferPercent,
		MinAllowed:       rp.MinAllowed,
		MaxAllowed:       rp.MaxAllowed,
		ControlledValues: rp.ControlledValues,
	}
	if current != nil {
		if q, ok := current.Requests[rp.Resource]; ok {
			in.Request = &q
		}
		if q, ok := current.Limits[rp.Resource]; ok {
			in.Limit = &q
		}
	}
	if h != nil {
		in.Window, in.Now, in.OOMKilled, in.OOMKills = h.Window, h.End, h.OOMKilled, len(h.OOMKills)
		in.StartupPeak = h.StartupPeak()
		// Every CPU resource of a namespace says the same: the evidence
		// of each keeps one copy, not its own until the report.
		in.Resolution = unique.Make(h.Resolution.String()).Value()
		if f, ok := h.Fold.(*Fold); ok {
			in.Fold = f
		} else {
			in.First, in.Last = h.First, h.Last
			in.Samples = make([]Sample, len(h.Values))
			for i, v := range h.Values {
				in.Samples[i] = Sample{Time: h.Time(i), Value: v}
			}
		}
	}
	return in
}

// resourceOf recommends one resource of one container.
func resourceOf(rp collect.ResourcePolicy, current *collect.Container, h *usage.History, opts Options) plan.Resource {
	r := plan.Resource{Resource: rp.Resource, LimitsOnly: rp.ControlledValues == v1alpha1.ContainerControlledValuesLimitsOnly}
	in := inputOf(rp, current, h)
	r.Current, r.LiveLimit = in.Request, in.Limit
	if r.LimitsOnly {
		r.Current = in.Limit
	}
	out, err := Compute(in, opts)
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	// The evidence alone outlives the call: pointing into out would keep
	// all of out, twice its size, for every resource until the report.
	ev := out.Evidence
	r.Evidence = &ev
	withPoints(r.Evidence, rp.Resource, h)
	if out.Value == nil {
		r.Reason = out.Reason
		return r
	}
	r.Recommended = out.Value
	if r.LimitsOnly {
		// The request stays: what is shown is the limit, also when it is
		// held back and nothing is written.
		r.Recommended = out.LimitValue
	}
	switch {
	case out.Evidence.HeldBack != "":
		r.Reason = "held back: " + out.Evidence.HeldBack
		r.HeldBack = true
	case len(out.Evidence.Capped) > 0:
		r.Reason = "capped at " + strings.Join(out.Evidence.Capped, ", ")
	}
	r.Request, r.Limit = out.Request, out.Limit
	if out.Request != nil {
		r.Changed = in.Request == nil || in.Request.Cmp(*out.Request) != 0
	}
	if out.Limit != nil && (in.Limit == nil || in.Limit.Cmp(*out.Limit) != 0) {
		r.Changed = true
	}
	if out.Limit != nil && rp.ControlledValues == v1alpha1.ContainerControlledValuesRequestsAndLimits {
		r.RecommendedLimit, r.CurrentLimit = out.Limit, in.Limit
	}
	return r
}

// objectOf is the object whose manifest holds the pod template: the
// workload itself, or the object it takes its template from (an Argo
// Rollout's workloadRef Deployment). Its labels and annotations lead the
// renderer through Argo CD's and Flux's tracking to the right file.
func objectOf(w *collect.Workload) plan.Object {
	ref := w.ObjectRef
	if w.Source != nil {
		ref = *w.Source
	}
	return plan.Object{
		APIVersion:  ref.APIVersion,
		Kind:        ref.Kind,
		Namespace:   ref.Namespace,
		Name:        ref.Name,
		Labels:      ref.Labels,
		Annotations: ref.Annotations,
		PodPrint:    string(ref.PodPrint),
	}
}

// autoscalersOf is the plan of the HPAs that item's requests co-tune with:
// their targets now, and the live requests of every container of the pod.
func autoscalersOf(item collect.Item) []plan.Autoscaler {
	var out []plan.Autoscaler
	for _, a := range item.Autoscalers {
		pa := plan.Autoscaler{
			Name: a.Name,
			Object: plan.Object{APIVersion: a.APIVersion, Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Labels: a.Labels, Annotations: a.Annotations},
		}
		for _, u := range a.Utilization {
			t := plan.UtilizationTarget{Index: u.Index, Resource: u.Resource, Container: u.Container, From: u.Percent, To: u.Percent,
				Live: map[string]resource.Quantity{}}
			for _, c := range item.Workload.Containers {
				t.Containers = append(t.Containers, c.Name)
				if q, ok := c.Requests[u.Resource]; ok {
					t.Live[c.Name] = q
				}
			}
			pa.Targets = append(pa.Targets, t)
		}
		out = append(out, pa)
	}
	return out
}
