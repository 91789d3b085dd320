package job

import (
	"context"
	"log/slog"
	"time"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/cost"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// scaledTargets are the targets of the valid items that an HPA scales,
// with their windows (zero: the reader's): their replicas are averaged
// over the window instead of read from the object.
func scaledTargets(items []collect.Item) map[usage.WorkloadRef]time.Duration {
	scaled := map[usage.WorkloadRef]time.Duration{}
	for _, item := range items {
		if item.Invalid == nil && item.Workload != nil && item.Scaler != nil {
			w := recommend.WantOf(item)
			scaled[w.Ref] = max(scaled[w.Ref], w.Settings.Window)
		}
	}
	return scaled
}

// withReplicas starts the cost of it, the plan of item, with its
// replicas: the average kube-state-metrics gave in h for a target an HPA
// scales, else the HPA's current count, else the object's own.
func withReplicas(it *plan.Item, item collect.Item, h *usage.Histories) {
	if item.Workload == nil {
		return
	}
	in := cost.Replicas{Spec: item.Workload.Replicas}
	if item.Scaler != nil {
		in.Scaled, in.HPACurrent = true, item.Scaler.CurrentReplicas
		if avg, ok := h.AverageReplicas(recommend.WantOf(item).Ref); ok {
			in.Average, in.HasAverage, in.Window = avg.Average, true, avg.Window
		}
	}
	count, source := in.Count()
	it.Cost = &plan.Cost{Replicas: count, ReplicasSource: source}
}

// withCost fills in the cost of it's final requests at its replicas and
// prices: the run's, or those its annotations set. A bad annotation is
// said in the cost and logged, and the run's prices are used.
func withCost(ctx context.Context, it *plan.Item, run plan.Prices, log *slog.Logger) {
	if it.Cost == nil {
		return
	}
	prices, problem := cost.PricesFor(it.Annotations, run)
	if problem != "" {
		log.WarnContext(ctx, "ignoring a price annotation", "resourceRecommend", it.Key(), "problem", problem)
	}
	c := cost.Of(it, it.Cost.Replicas, it.Cost.ReplicasSource, prices)
	c.PriceError = problem
	it.Cost = c
}
