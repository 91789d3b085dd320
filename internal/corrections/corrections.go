// Package corrections is what follows a regression of one of the job's
// merged changes: the correction of the regressed change takes the place
// of the container's recommendation and holds its other changes until it
// is merged, and a merged correction keeps the recommendations from going
// below it for Stay.
package corrections

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// Stay is how long a merged correction keeps a container's
// recommendations from going below it: as long as the merged changes are
// read back (verify.LookBack), longer than a window of history, whose OOM
// kills alone would keep them up only while they are in it.
const Stay = verify.LookBack

// Resource is the resource of the named container of it, nil when the
// item does not recommend it.
func Resource(it *plan.Item, container string, name corev1.ResourceName) *plan.Resource {
	for i := range it.Containers {
		if it.Containers[i].Name != container {
			continue
		}
		for j := range it.Containers[i].Resources {
			if r := &it.Containers[i].Resources[j]; r.Resource == name && !r.LimitsOnly {
				return r
			}
		}
	}
	return nil
}

// Unwatched applies to r the recorded change c that is no longer
// watched: a correction that still holds at now (verify.Holds, less than
// Stay after it was merged) keeps r at or above it.
func Unwatched(r *plan.Resource, c gitops.RecordedChange, now time.Time) {
	if verify.Holds(c, now) {
		keepAbove(r, c)
	}
}

// Watched applies to r, a resource of it, what watching the recorded
// change c found (w): a regression puts its correction in place of r's
// recommendation; a correction the cluster runs keeps r at or above it.
func Watched(it *plan.Item, c gitops.RecordedChange, r *plan.Resource, w plan.Watch) {
	switch {
	case w.State == plan.WatchRegressed && w.Correction != nil:
		correct(it, c, r, w)
	case c.Correction && w.State != plan.WatchPending && w.State != plan.WatchSuperseded:
		// A correction the cluster runs; one changed since by hand is the
		// person's call.
		keepAbove(r, c)
	}
}

// correct puts the correction of the regressed change c in place of r's
// recommendation, and holds the container's other recommendations until it
// is merged: the job never proposes the value that regressed, nor changes
// the container in other ways meanwhile.
func correct(it *plan.Item, c gitops.RecordedChange, r *plan.Resource, w plan.Watch) {
	for i := range it.Containers {
		if it.Containers[i].Name != c.Container {
			continue
		}
		for j := range it.Containers[i].Resources {
			other := &it.Containers[i].Resources[j]
			if other == r || other.Correction {
				continue
			}
			hold(other, fmt.Sprintf("held back: the correction of a regression of the %s request waits to be merged", c.Resource))
		}
	}
	v := *w.Correction
	r.Recommended, r.Request, r.Correction, r.HeldBack = &v, &v, true, false
	r.Changed = r.Current == nil || r.Current.Cmp(v) != 0
	r.Reason = fmt.Sprintf("correction of commit %s: %s", short(c.Commit), w.Regression)
	r.RecommendedLimit, r.Limit = nil, nil
	if r.LiveLimit != nil && r.LiveLimit.Cmp(v) < 0 {
		// A request above the limit is invalid: the limit goes up with it.
		r.Limit, r.RecommendedLimit, r.CurrentLimit = &v, &v, r.LiveLimit
	}
}

// keepAbove keeps r's recommendation from going below the merged
// correction c: the history alone would let it drop back to the value
// that regressed once the OOM kills have left the window.
func keepAbove(r *plan.Resource, c gitops.RecordedChange) {
	if r.Request == nil || r.Request.Cmp(c.To) >= 0 {
		return
	}
	hold(r, fmt.Sprintf("held back: the correction of commit %s set %s after a regression; recommendations stay at or above it for %d days",
		short(c.Commit), c.To.String(), int(Stay.Hours()/24)))
}

// hold keeps r's current value, saying why.
func hold(r *plan.Resource, why string) {
	if r.Request == nil && r.Limit == nil {
		return
	}
	r.Request, r.Limit, r.Changed, r.HeldBack, r.Reason = nil, nil, false, true, why
	r.RecommendedLimit, r.CurrentLimit = nil, nil
}

// short is a commit's hash as people quote it.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
