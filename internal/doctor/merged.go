package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// watchQueryOrder is the order in which the queries behind a regression
// are shown: what the cluster ran, then what got worse.
var watchQueryOrder = []string{"requests", "oom", "restarts", "throttled", "periods", "memory"}

// merged checks the job's merged changes as a run does: it reads them
// through verify.ReadMerged, as far back as a run, the newest of each
// container's request, reads what the containers of those still watched
// did before and after, and shows each change's state: a regression with
// why, the observations, the correction and the PromQL behind them; a
// correction past the watch that still holds the recommendations up. A
// change that regressed is a finding, not a failed check.
func (d *checks) merged(ctx context.Context, cfg Config, items []collect.Item) {
	if !cfg.Verify.Enabled() {
		d.info("verify-period 0: merged changes are not verified")
		return
	}
	th := cfg.Verify.WithDefaults()
	now := time.Now()
	if cfg.Now != nil {
		now = cfg.Now()
	}
	if cfg.Record == nil {
		d.info("no record of the job's pushes is kept (record-namespace): merged changes are not verified")
		return
	}
	m, err := verify.ReadMerged(ctx, cfg.Record, cfg.Git, cfg.PullRequests, th, now)
	if err != nil {
		d.fail("merged changes", err)
		return
	}
	for _, err := range m.Read.Unresolved {
		d.fail("telling whether a pull request of the job's was merged", err)
	}
	days := int(now.Sub(m.Since).Hours() / 24)
	latest := m.Latest
	if len(latest) == 0 {
		d.ok("no merged changes of the job in the last %d days (%d %s in its record)", days, len(m.Pushed), plural(len(m.Pushed), "commit", "commits"))
		return
	}
	d.ok("%d merged %s of the job in the last %d days", len(latest), plural(len(latest), "change", "changes"), days)

	byKey := map[string]collect.Item{}
	for _, it := range items {
		if it.Invalid == nil && it.Workload != nil {
			byKey[it.Namespace+"/"+it.Name] = it
		}
	}
	refOf := func(it collect.Item) usage.WorkloadRef {
		return usage.WorkloadRef{Kind: it.Target.Kind, Namespace: it.Namespace, Name: it.Target.Name}
	}
	workloads := map[string][]usage.WorkloadRef{}
	since := map[string]time.Time{} // per namespace, the oldest change
	for _, c := range latest {
		it, ok := byKey[c.Item]
		if !ok || !m.Watched(c) {
			continue
		}
		if s, ok := since[it.Namespace]; !ok || c.Time.Before(s) {
			since[it.Namespace] = c.Time
		}
		if ref := refOf(it); !slices.Contains(workloads[it.Namespace], ref) {
			workloads[it.Namespace] = append(workloads[it.Namespace], ref)
		}
	}

	reader := usage.NewReader(cfg.Prometheus, cfg.ReaderOptions...)
	watched := map[usage.WorkloadRef]map[string]*usage.Watched{}
	unread := map[string]bool{}
	for _, ns := range slices.Sorted(maps.Keys(workloads)) {
		// A period before the oldest change is compared against, as a run
		// does.
		got, err := reader.ReadWatch(ctx, ns, workloads[ns], since[ns].Add(-th.Period-time.Hour))
		if err != nil {
			d.fail("reading what followed the merged changes in namespace "+ns, err)
			unread[ns] = true
			continue
		}
		maps.Copy(watched, got)
	}

	for _, c := range latest {
		head := fmt.Sprintf("%s %s %s %s -> %s (commit %s, %s)", c.Item, c.Container, c.Resource, orNone(c.From), c.To.String(),
			shortHash(c.Commit), c.Time.UTC().Format(timeLayout))
		if c.Correction {
			head += ", a correction"
		}
		it, ok := byKey[c.Item]
		if !ok {
			d.info("%s: not checked: no valid ResourceRecommend of that name in scope", head)
			continue
		}
		if !m.Watched(c) {
			d.unwatched(head, c, now)
			continue
		}
		if unread[it.Namespace] {
			d.info("%s: not checked: the namespace's history could not be read", head)
			continue
		}
		var live verify.Live
		if ct := it.Workload.Container(c.Container); ct != nil {
			live = verify.Live{Request: quantityOf(ct.Requests, c.Resource), Limit: quantityOf(ct.Limits, c.Resource)}
		}
		// As in a run: nothing read for the workload is no observation;
		// nothing for the container, one in which nothing happened.
		var w *usage.Watched
		if containers, ok := watched[refOf(it)]; ok {
			if w = containers[c.Container]; w == nil {
				w = &usage.Watched{}
			}
		}
		d.watch(head, verify.Check(c, live, w, now, th), live, func() (map[string]string, error) {
			return reader.WatchQueries(it.Namespace, []usage.WorkloadRef{refOf(it)})
		})
	}
}

// unwatched shows a change committed before the watch period and the
// history window, as a run treats it: not watched, and, for a correction
// that still holds, the value below which nothing is proposed.
func (d *checks) unwatched(head string, c gitops.RecordedChange, now time.Time) {
	if !verify.Holds(c, now) {
		d.info("%s: past the watch period and the history window; not watched", head)
		return
	}
	d.info("%s: past the watch period and the history window; not watched, but holds the recommendations at or above %s until %s",
		head, c.To.String(), c.Time.Add(verify.LookBack).UTC().Format(timeLayout))
}

// watch shows one change's state, and explains a regression.
func (d *checks) watch(head string, w plan.Watch, live verify.Live, queries func() (map[string]string, error)) {
	switch w.State {
	case plan.WatchPending:
		d.info("%s: pending: the cluster runs %s, not the change", head, orNone(live.Request))
		return
	case plan.WatchSuperseded:
		d.info("%s: superseded: the cluster runs %s, neither the change's value nor the one before it; not watched", head, orNone(live.Request))
		return
	case plan.WatchWatching:
		d.info("%s: watching since %s, nothing worse so far", head, w.Effective.UTC().Format(timeLayout))
	case plan.WatchVerified:
		d.info("%s: verified: took effect %s, nothing worse in the period", head, w.Effective.UTC().Format(timeLayout))
	case plan.WatchRegressed:
		d.info("%s: REGRESSED: %s", head, w.Regression)
		d.info("  took effect %s", w.Effective.UTC().Format(timeLayout))
	}
	for _, o := range []struct {
		when string
		obs  *plan.Observed
	}{{"before", w.Before}, {"after", w.After}} {
		if o.obs != nil && w.State == plan.WatchRegressed {
			d.info("  %-6s %s", o.when, observed(o.obs))
		}
	}
	if w.State != plan.WatchRegressed {
		return
	}
	if w.Correction != nil {
		d.info("  correction: %s %s (a run proposes it in a pull request of its own)", w.Resource, w.Correction.String())
	}
	q, err := queries()
	if err != nil {
		d.info("  queries: %v", err)
		return
	}
	d.info("  queries behind it:")
	for _, name := range watchQueryOrder {
		if q[name] != "" {
			d.info("    %-9s <- %s", name, q[name])
		}
	}
}

// observed is how a container did over a period, on one line.
func observed(o *plan.Observed) string {
	throttled, peak := "-", "-"
	if o.Throttled != nil {
		throttled = fmt.Sprintf("%.0f%%", *o.Throttled*100)
	}
	if o.MemoryPeak != nil {
		peak = resource.NewQuantity(int64(*o.MemoryPeak), resource.BinarySI).String()
	}
	return fmt.Sprintf("%s to %s (%s): %d OOM kills, %d restarts, throttled %s, memory peak %s",
		o.From.UTC().Format(timeLayout), o.To.UTC().Format(timeLayout), days(o.To.Sub(o.From)), o.OOMKills, o.Restarts, throttled, peak)
}

// timeLayout is how doctor shows a time.
const timeLayout = "2006-01-02 15:04 UTC"

// days shows a duration in days, to a tenth.
func days(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Hours()/24), ".0") + "d"
}

func quantityOf(list corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
	if q, ok := list[name]; ok {
		return &q
	}
	return nil
}

func orNone(q *resource.Quantity) string {
	if q == nil {
		return "none"
	}
	return q.String()
}

func shortHash(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
