package recommend

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// The bounds of an adjusted utilisation target, in percent: below, the
// HPA would scale out at a trickle of usage; above, only when pods are
// already short of what they asked for.
const (
	MinUtilization = 10
	MaxUtilization = 100
)

// Autoscale works out the utilisation targets of the item's HPAs for the
// requests it now holds, corrections included, so that each HPA scales at
// the usage per pod it scales at now: to = round(from x old request / new
// request), of the pod's summed requests for a Resource metric and of the
// container's for a ContainerResource one. A resource whose target would
// leave [MinUtilization, MaxUtilization], or is undefined (a container of
// the pod without a request), is held back in every container instead,
// unless it corrects a regression. Call it once the requests are final.
func Autoscale(it *plan.Item) {
	held := map[corev1.ResourceName]string{}
	for _, a := range it.Autoscalers {
		for _, t := range a.Targets {
			if _, done := held[t.Resource]; done {
				continue
			}
			from, to, err := requestsOf(it, &t)
			switch {
			case err != nil:
				held[t.Resource] = fmt.Sprintf("HorizontalPodAutoscaler %s targets %d%% %s utilization, %v", a.Name, t.From, t.Resource, err)
			case corrects(it, t.Resource):
			default:
				if pct := scaled(t.From, from, to); pct < MinUtilization || pct > MaxUtilization {
					held[t.Resource] = fmt.Sprintf("HorizontalPodAutoscaler %s targets %d%% %s utilization; with %s in place of %s per %s it would need %d%%, outside %d-%d%%",
						a.Name, t.From, t.Resource, to.String(), from.String(), subject(t), pct, MinUtilization, MaxUtilization)
				}
			}
		}
	}
	for res, why := range held {
		holdResource(it, res, why)
	}
	retarget(it)
}

// HoldAutoscaled keeps the live request of res in every container of it,
// saying why, and the targets of its HPAs on res as they are: for when
// the HPA cannot be adjusted where it is defined (a chart renders it).
func HoldAutoscaled(it *plan.Item, res corev1.ResourceName, why string) {
	holdResource(it, res, why)
	retarget(it)
}

// retarget works out each HPA target of it for the requests it holds.
func retarget(it *plan.Item) {
	for i := range it.Autoscalers {
		for j := range it.Autoscalers[i].Targets {
			t := &it.Autoscalers[i].Targets[j]
			from, to, err := requestsOf(it, t)
			if err != nil {
				t.To, t.RequestFrom, t.RequestTo = t.From, nil, nil
				continue
			}
			t.RequestFrom, t.RequestTo = &from, &to
			t.To = scaled(t.From, from, to)
		}
	}
}

// subject names what a target's utilisation is of.
func subject(t plan.UtilizationTarget) string {
	if t.Container != "" {
		return "container " + t.Container
	}
	return "pod"
}

// scaled is pct x from / to, rounded; pct when the requests are equal.
func scaled(pct int32, from, to resource.Quantity) int32 {
	if from.Cmp(to) == 0 || to.IsZero() {
		return pct
	}
	return int32(math.Round(float64(pct) * from.AsApproximateFloat64() / to.AsApproximateFloat64()))
}

// requestsOf is the request t's utilisation is of, live and with the item's
// values: the container's, or the sum over the pod's containers.
func requestsOf(it *plan.Item, t *plan.UtilizationTarget) (from, to resource.Quantity, err error) {
	names := t.Containers
	if t.Container != "" {
		names = []string{t.Container}
	}
	for _, name := range names {
		live, ok := t.Live[name]
		if !ok {
			return from, to, fmt.Errorf("which is undefined: container %s has no %s request", name, t.Resource)
		}
		from.Add(live)
		if r := planned(it, name, t.Resource); r != nil && r.Request != nil {
			to.Add(*r.Request)
		} else {
			to.Add(live)
		}
	}
	return from, to, nil
}

// planned is the plan of resource res of container name, or nil.
func planned(it *plan.Item, name string, res corev1.ResourceName) *plan.Resource {
	for i := range it.Containers {
		if it.Containers[i].Name != name {
			continue
		}
		for j := range it.Containers[i].Resources {
			if r := &it.Containers[i].Resources[j]; r.Resource == res {
				return r
			}
		}
	}
	return nil
}

// corrects reports whether a request of res in it undoes a regression.
func corrects(it *plan.Item, res corev1.ResourceName) bool {
	return slices.ContainsFunc(it.Containers, func(c plan.Container) bool {
		return slices.ContainsFunc(c.Resources, func(r plan.Resource) bool { return r.Resource == res && r.Correction && r.Request != nil })
	})
}

// holdResource keeps the live request and limit of res in every container
// of it, saying why.
func holdResource(it *plan.Item, res corev1.ResourceName, why string) {
	for i := range it.Containers {
		for j := range it.Containers[i].Resources {
			r := &it.Containers[i].Resources[j]
			if r.Resource != res || r.LimitsOnly {
				continue
			}
			r.Request, r.Limit, r.RecommendedLimit, r.CurrentLimit = nil, nil, nil, nil
			r.Changed, r.HeldBack, r.Reason = false, true, "held back: "+why
			if r.Evidence != nil {
				r.Evidence.HPA = why
			}
		}
	}
}
