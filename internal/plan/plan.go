// Package plan holds the value a run builds and hands from stage to stage.
// Collect and recommend fill in each ResourceRecommend's target and, per
// container and resource, the recommendation as quantities with its
// evidence, or why there is none; render says what it did with each
// change; git what it pushed. The report, the commit message, the pull
// request body and the ResourceRecommend's status are views of a Plan,
// never sources a later stage parses back.
//
// The JSON encoding of a Plan is the run's report, documented in the
// README; fields a stage needs but a reader does not are left out of it.
package plan

import (
	"iter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Plan is one run.
type Plan struct {
	DryRun bool   `json:"dryRun"`
	Items  []Item `json:"resourceRecommends"`
	// Git is what was committed and pushed; nil when the repository was
	// not reached. When the run groups its changes, each group has its
	// own in Groups, and Git sums them up (see Git.Branches).
	Git *Git `json:"git,omitempty"`
	// Groups are the pull request groups of the run, by name; each has its
	// branch, its commit and its pull request.
	Groups []Group `json:"groups,omitempty"`
	// Dashboard is the issue the run keeps up to date with what waits for
	// a person, when asked for.
	Dashboard *PullRequest `json:"dashboard,omitempty"`
	// Interrupted says why and in which stage the run was cut short, e.g.
	// "run deadline of 27m0s exceeded during history"; the plan holds what
	// the run had by then.
	Interrupted string `json:"interrupted,omitempty"`
	// Failed is the error that ended the run when it failed (exit code 1
	// or 3); the plan holds what the run had computed by then.
	Failed string `json:"failed,omitempty"`
	// Unverified says why the job's merged changes could not all be
	// checked this run: the repository's history could not be read, or
	// what followed the changes in a namespace. A regression there may go
	// unseen, so no correction is taken back because of it.
	Unverified string `json:"unverified,omitempty"`
	// Unrecorded says why the job's record of the commits it pushed
	// could not be written: they will not be verified once merged, and the
	// run failed.
	Unrecorded string `json:"unrecorded,omitempty"`
}

// Item is one ResourceRecommend.
type Item struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Target    Target `json:"target"`
	Valid     bool   `json:"valid"`
	// Error is katalyst's reason code and message for an invalid item.
	Error      *Error      `json:"error,omitempty"`
	Containers []Container `json:"containers,omitempty"`
	// Source is where the target is defined in the repository and what
	// rendering did there; nil until rendering looked.
	Source *Source `json:"source,omitempty"`

	// Object is the object whose manifest holds the pod template: the
	// target, or the object it takes its template from (an Argo Rollout's
	// workloadRef).
	Object Object `json:"-"`
	// Labels and Annotations are the ResourceRecommend's own, which may
	// carry per-item settings for later stages (where its changes land,
	// which pull request holds them).
	Labels      map[string]string `json:"-"`
	Annotations map[string]string `json:"-"`
	// NamespaceLabels and NamespaceAnnotations are its namespace's.
	NamespaceLabels      map[string]string `json:"-"`
	NamespaceAnnotations map[string]string `json:"-"`
	// Group is the pull request group the item's changes go to ("" when
	// the run does not group them).
	Group string `json:"group,omitempty"`
	// Watches are the job's changes to the target that reached the base
	// branch recently: whether each took effect in the cluster, and what
	// followed.
	Watches []Watch `json:"watches,omitempty"`
	// Autoscalers are the HorizontalPodAutoscalers whose utilisation
	// targets change with the requests (HPA mode adjust).
	Autoscalers []Autoscaler `json:"autoscalers,omitempty"`
	// Cost is what the item's changes do to the requests over all its
	// replicas, and their monthly price; nil for an invalid item.
	Cost *Cost `json:"cost,omitempty"`
}

// Regressed reports whether a change of the item regressed and its
// correction is proposed: its changes then go to a pull request of their
// own.
func (it *Item) Regressed() bool {
	for _, w := range it.Watches {
		if w.State == WatchRegressed && w.Correction != nil {
			return true
		}
	}
	return false
}

// Key names the item uniquely in a run: namespace/name.
func (it *Item) Key() string { return it.Namespace + "/" + it.Name }

// AllResources yields every resource of every container of it, in order,
// to be read or set in place.
func (it *Item) AllResources() iter.Seq[*Resource] {
	return func(yield func(*Resource) bool) {
		for ci := range it.Containers {
			rs := it.Containers[ci].Resources
			for ri := range rs {
				if !yield(&rs[ri]) {
					return
				}
			}
		}
	}
}

// Target is the workload an item refers to, as written in the
// ResourceRecommend.
type Target struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// Object is a live object, with the labels and annotations that lead to
// its manifest (Argo CD's tracking annotation, Flux's labels).
type Object struct {
	APIVersion  string
	Kind        string
	Namespace   string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// PodPrint is the print of its pod template (kinds.PodPrint), which
	// picks its source among several candidates; "" when unknown.
	PodPrint string
}

// Error is a reason code and a message, and what lay behind it when the
// message alone says little.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Cause   string `json:"cause,omitempty"`
}

// Container holds one container's resources.
type Container struct {
	Name      string     `json:"name"`
	Resources []Resource `json:"resources"`
	// ValuesKeys maps each field written for the container through a
	// Helm release (requests.cpu, limits.memory) to the values key it was
	// written at (web.resources.requests.cpu, or a scalar such as
	// cpuRequest); nil when the container's values went to a manifest.
	ValuesKeys map[string]string `json:"valuesKeys,omitempty"`
	// Landed reports that rendering changed a file for this container.
	Landed bool `json:"-"`
}

// RequestKey is the values key the request of resource name went to
// through a Helm release; "" when none.
func (c *Container) RequestKey(name corev1.ResourceName) string {
	return c.ValuesKeys["requests."+string(name)]
}

// LimitKey is the values key the limit of resource name went to through a
// Helm release; "" when none.
func (c *Container) LimitKey(name corev1.ResourceName) string {
	return c.ValuesKeys["limits."+string(name)]
}

// Writes reports whether the container has a value to write.
func (c *Container) Writes() bool {
	for _, r := range c.Resources {
		if r.Request != nil || r.Limit != nil {
			return true
		}
	}
	return false
}

// Resource is one resource of one container.
type Resource struct {
	Resource corev1.ResourceName `json:"resource"`
	// Current is the request in the live pod template; nil when unset.
	// Under LimitsOnly it is the limit.
	Current *resource.Quantity `json:"current,omitempty"`
	// Recommended is the computed request, also when it is held back; nil
	// when none could be made. Under LimitsOnly it is the limit.
	Recommended *resource.Quantity `json:"recommended,omitempty"`
	// Changed reports that a value to write differs from the live one.
	Changed bool `json:"changed"`
	// CurrentLimit and RecommendedLimit are the limit's, when the policy
	// is RequestsAndLimits and the limit changes with the request.
	CurrentLimit     *resource.Quantity `json:"currentLimit,omitempty"`
	RecommendedLimit *resource.Quantity `json:"recommendedLimit,omitempty"`
	// LiveLimit is the limit in the live pod template, whatever the
	// policy, so that a reviewer sees it beside the request (CurrentLimit
	// is set only when the limit changes with the request); nil when
	// unset.
	LiveLimit *resource.Quantity `json:"liveLimit,omitempty"`
	// Reason explains a missing, adjusted or held-back recommendation.
	Reason string `json:"reason,omitempty"`
	// HeldBack marks a value left alone on purpose: the change is below
	// the threshold, or an autoscaler scales on the resource.
	HeldBack bool      `json:"heldBack,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`

	// Request and Limit are what to write into the manifest; nil for a
	// value that stays. Values equal to the live ones are written too: the
	// repository may disagree with the cluster.
	Request *resource.Quantity `json:"-"`
	Limit   *resource.Quantity `json:"-"`
	// LimitsOnly marks a policy that controls only the limit: Current and
	// Recommended are the limit's.
	LimitsOnly bool `json:"-"`
	// Correction marks a request that undoes a change of the job's that
	// regressed (see Watch); Recommended is then the corrected value.
	Correction bool `json:"correction,omitempty"`
}

// HeldRequest is what the container requests now: its request, or, with
// none set, its limit, which Kubernetes then requests for it; nil with
// neither.
func (r Resource) HeldRequest() *resource.Quantity {
	if r.Current == nil {
		return r.LiveLimit
	}
	return r.Current
}

// ReasonHistoryUnavailable starts the reason of a resource whose history
// could not be read in this run.
const ReasonHistoryUnavailable = "usage history unavailable: "

// Evidence is what a reviewer needs to trust a value. Values are in cores
// for CPU and bytes for memory.
type Evidence struct {
	// Window is how far back history was read.
	Window string `json:"window,omitempty"`
	// Resolution is how CPU history was read and where that came from,
	// e.g. "rate over 2m every 1m, from the 1m scrape interval" (CPU
	// only).
	Resolution string `json:"resolution,omitempty"`
	// History says how much of the window came from the job's checkpoint
	// and how much was read, or why it was all read, e.g. "7d: 6d from
	// checkpoint + 1d read" (when checkpoints are on).
	History string `json:"history,omitempty"`
	// Samples is the number of samples in the histogram: CPU rates, or
	// memory peaks per interval.
	Samples int `json:"samples"`
	// Span is the time between the first and the last sample.
	Span string `json:"span"`
	// Percentile and HalfLife are the histogram's settings.
	Percentile float64 `json:"percentile"`
	HalfLife   string  `json:"halfLife,omitempty"`
	// RawValue is the percentile before the buffer: the end of the
	// histogram's bucket it falls in, or the highest sample when that is
	// lower (PercentileAtMax). BucketWidth is that bucket's width.
	RawValue        float64 `json:"percentileValue"`
	BucketWidth     float64 `json:"bucketWidth,omitempty"`
	PercentileAtMax bool    `json:"percentileAtMax,omitempty"`
	BufferPercent   int32   `json:"bufferPercent"`
	// BufferedValue is RawValue x (1 + BufferPercent/100).
	BufferedValue float64 `json:"bufferedValue"`
	// OOMFloor is max(peak + 100Mi, peak x 1.2) after an OOM kill.
	OOMKilled bool    `json:"oomKilled,omitempty"`
	OOMFloor  float64 `json:"oomFloor,omitempty"`
	// StartupPeak is the highest working set seen within the startup
	// window after a start of the container's pods in the window, in bytes
	// (memory only); StartupFloor says it set the value, being above the
	// buffered value and the OOM floor. A cap (maxAllowed, the limit) still
	// wins over it, and Capped says so.
	StartupPeak  float64 `json:"startupPeak,omitempty"`
	StartupFloor bool    `json:"startupFloor,omitempty"`
	// RoundingStep is the step the value was rounded up to.
	RoundingStep string `json:"roundingStep,omitempty"`
	// Capped lists the bounds applied, e.g. "maxAllowed 2Gi".
	Capped []string `json:"capped,omitempty"`
	// LimitRatio is the limit:request ratio kept for the limit, and Limit
	// the limit it gave.
	LimitRatio float64 `json:"limitRatio,omitempty"`
	Limit      string  `json:"limit,omitempty"`
	// HeldBack says why the current value was kept.
	HeldBack string `json:"heldBack,omitempty"`

	// WindowDays and SpanDays are Window and Span in days, to a
	// hundredth, for people.
	WindowDays float64 `json:"windowDays,omitempty"`
	SpanDays   float64 `json:"spanDays,omitempty"`
	// UsageP50, UsageP90 and UsageMax are the usage observed in the
	// window, as it was, neither decayed nor weighted: the median, the
	// 90th percentile and the highest of the samples (CPU rates of every
	// pod at every step, or memory peaks per interval). The percentiles
	// are the upper end of the histogram bucket they fall in (buckets 5%
	// wide, from 0.01 core or 1e7 bytes), never above UsageMax, which is
	// exact. Nil when the window holds no sample.
	UsageP50 *float64 `json:"usageP50,omitempty"`
	UsageP90 *float64 `json:"usageP90,omitempty"`
	UsageMax *float64 `json:"usageMax,omitempty"`
	// Usage is the usage of each period of the window, in time order, for
	// the chart a reviewer sees: per day, or per hour for a window under
	// three days (UsagePeriod says which). Like UsageP90 and UsageMax,
	// neither decayed nor weighted.
	Usage       []UsagePoint `json:"usage,omitempty"`
	UsagePeriod string       `json:"usagePeriod,omitempty"`
	// OOMKills counts the out-of-memory kills seen in the window (memory
	// only): per pod, the hours in which a container of it restarted
	// after one.
	OOMKills int `json:"oomKills,omitempty"`
	// HPA is why the request is held back for a HorizontalPodAutoscaler:
	// it scales the target on the resource's utilization, which is
	// relative to the request. No value is computed then; the evidence is
	// what was observed.
	HPA string `json:"hpa,omitempty"`
}

// UsagePoint is the usage of one period of a window: its start, and the
// 90th percentile (as UsageP90 takes it) and the highest of its samples.
// A window's first and last periods may hold only part of a period.
type UsagePoint struct {
	Start time.Time `json:"start"`
	P90   float64   `json:"p90"`
	Max   float64   `json:"max"`
}

// Autoscaler is a HorizontalPodAutoscaler that scales the target on the
// utilisation of a resource. Utilisation is usage over request: when the
// request changes, the target changes by the inverse ratio, so that the
// HPA adds pods at the same usage per pod as before.
type Autoscaler struct {
	Name    string              `json:"name"`
	Targets []UtilizationTarget `json:"targets"`
	// File is the file edited for it, and Changed whether its bytes
	// changed; empty until rendering looked.
	File    string `json:"file,omitempty"`
	Changed bool   `json:"changed,omitempty"`

	// Object is the live HPA, whose labels lead to its manifest.
	Object Object `json:"-"`
}

// Utilization is one metric of a HorizontalPodAutoscaler's spec.metrics
// that targets a resource's average utilisation, and that target: as
// collect read it from the cluster, or as render sets it in the
// manifest. An autoscaling/v1 manifest holds one Resource metric of cpu,
// as targetCPUUtilizationPercentage.
type Utilization struct {
	// Index is the metric's position in spec.metrics.
	Index    int
	Resource corev1.ResourceName
	// Container is the container of a ContainerResource metric; "" for a
	// Resource metric, whose utilisation is of the pod's summed requests.
	Container string
	Percent   int32
}

// UtilizationTarget is the plan of one utilisation metric of an HPA: its
// target now and with the plan's requests.
type UtilizationTarget struct {
	// Index is the metric's position in the HPA's spec.metrics.
	Index    int                 `json:"index"`
	Resource corev1.ResourceName `json:"resource"`
	// Container is the container of a ContainerResource metric; "" for a
	// Resource metric, whose utilisation is of the pod's summed requests.
	Container string `json:"container,omitempty"`
	// From and To are the target in percent, now and with the requests of
	// the plan; To equals From when the requests stay.
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// RequestFrom and RequestTo are the request the utilisation is of (the
	// container's, or the sum of the pod's), now and with the plan's.
	RequestFrom *resource.Quantity `json:"requestFrom,omitempty"`
	RequestTo   *resource.Quantity `json:"requestTo,omitempty"`

	// Live are the live requests of every container of the pod for the
	// resource, including native sidecars; a container without one is
	// absent.
	Live map[string]resource.Quantity `json:"-"`
	// Containers names every container of the pod, so that one without a
	// request is seen.
	Containers []string `json:"-"`
}

// Changes reports whether the target moves.
func (u *UtilizationTarget) Changes() bool { return u.To != u.From }

// Source is the file that defines a target and what happened to it.
type Source struct {
	File    string `json:"file,omitempty"`
	Changed bool   `json:"changed"`
	// Method is how File was edited when it changed: "splice" (the values
	// spliced into the original bytes), "subtree" (the lines of the edited
	// subtree re-serialised, every other line byte-identical) or
	// "new-file" (a patch written whole).
	Method string `json:"method,omitempty"`
	Error  string `json:"error,omitempty"`
	// Helm is the Helm release that renders the target, when the values
	// went to the release's values rather than to a manifest: File is
	// then a values file, or the file of the object that holds the
	// values.
	Helm *Helm `json:"helm,omitempty"`
	// Deployer is the Argo CD or Flux object that says where the target is
	// rendered from, when one did: kind, namespace/name and where it was
	// read ("from the cluster", "generated by ApplicationSet argocd/shop
	// in argocd/appset.yaml", "in the repository").
	Deployer string `json:"deployer,omitempty"`
	// Chosen says, when several sources could define the target, why
	// File's was chosen: its build has the live pod template, and what
	// the others differ in.
	Chosen string `json:"chosen,omitempty"`
}

// Helm is how a target's values went through a Helm release: the object
// that installs the release, the chart, and the values edited. The keys
// are per container (Container.ValuesKeys).
type Helm struct {
	// Kind and Object are the HelmRelease or Application that installs
	// the release: its kind, and its namespace/name.
	Kind   string `json:"kind"`
	Object string `json:"object"`
	// Release and Namespace are the Helm release's name and namespace.
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Chart and Version are the chart's name and version; ChartSource is
	// where the chart comes from (a chart repository, an OCI registry, a
	// directory of the repository).
	Chart       string `json:"chart"`
	Version     string `json:"version,omitempty"`
	ChartSource string `json:"chartSource,omitempty"`
	// Layer says which values were edited, e.g. "the values file
	// charts/shop/values-production.yaml" or "spec.values of HelmRelease
	// shop/shop (apps/shop.yaml)".
	Layer string `json:"layer,omitempty"`
	// SchemaUnchecked names the chart's values schemas that could not be
	// checked, and why (a $ref that could not be fetched); the values were
	// written, proved by rendering.
	SchemaUnchecked []string `json:"schemaUnchecked,omitempty"`
}

// Edit methods of Source.Method.
const (
	MethodSplice  = "splice"
	MethodSubtree = "subtree"
	MethodNewFile = "new-file"
)

// Git is what the run did in the repository.
type Git struct {
	Branch string   `json:"branch"`
	Commit string   `json:"commit,omitempty"`
	Pushed bool     `json:"pushed"`
	Files  []string `json:"files,omitempty"`
	// Attempts is how many fresh clones the run needed because the remote
	// moved under it; 1 when it did not.
	Attempts int `json:"attempts,omitempty"`
	// Stopped says why the run left the branch alone, e.g. a commit on it
	// that the job did not make.
	Stopped string `json:"stopped,omitempty"`
	// Diff is the unified diff of the rendered files, on a dry run.
	Diff string `json:"diff,omitempty"`
	// PullRequest is the pull request for the branch, when a forge is set.
	PullRequest *PullRequest `json:"pullRequest,omitempty"`
	// Branches and PullRequests are, for a run whose changes went to
	// groups, the branches that hold its changes (pushed now or before)
	// and the pull requests it synced, the run's own branch first; Pushed
	// then says whether any of them was pushed, Files lists every file
	// they changed, and Branch is empty when the run has no branch of its
	// own.
	Branches     []string      `json:"branches,omitempty"`
	PullRequests []PullRequest `json:"pullRequests,omitempty"`
	// Skipped lists the repository files the run did not read: those above
	// max-file-size, and those the checkout left out because git or the
	// file system refuses their paths (the job's commit keeps them as the
	// base has them).
	Skipped []SkippedFile `json:"skipped,omitempty"`
}

// Group is one pull request group: the items whose changes share a
// branch and a pull request, and what the run did with them.
type Group struct {
	Name string `json:"name"`
	// Items are the keys (namespace/name) of the group's items.
	Items []string `json:"items,omitempty"`
	// Git is what was committed, pushed and opened for the group; nil
	// when the repository was not reached for it.
	Git *Git `json:"git,omitempty"`
	// Held says why the group's changes wait for their values to move: a
	// person closed its last pull request without merging it.
	Held string `json:"held,omitempty"`
	// Waiting says which limit keeps the group from opening a pull
	// request this run (pr-limit, pr-per-run).
	Waiting string `json:"waiting,omitempty"`
	// Savings ranks groups for the limits: the CPU cores, plus the GiB of
	// memory divided by 4 (a general-purpose instance's memory per core),
	// requested less per replica; negative when the group asks for more.
	Savings float64 `json:"savings,omitempty"`
}

// SkippedFile is a repository file the run did not read, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// PullRequest is the pull (merge) request a run opened or updated.
type PullRequest struct {
	URL    string `json:"url,omitempty"`
	Number int    `json:"number,omitempty"`
	// Action is created, updated, unchanged, closed, or planned on a dry
	// run.
	Action string `json:"action"`
	// Body is the description the run wrote or would write.
	Body string `json:"body,omitempty"`
}

// Pull request actions.
const (
	PRCreated   = "created"
	PRUpdated   = "updated"
	PRUnchanged = "unchanged"
	PRClosed    = "closed"
	PRPlanned   = "planned"
)

// Watch states.
const (
	// WatchPending: the change is on the base branch, but the target's
	// pod template still has the request from before it: not synced yet.
	WatchPending = "pending"
	// WatchSuperseded: the pod template has a request that is neither the
	// change's nor the one before it: someone or something changed it
	// since. The change is not watched.
	WatchSuperseded = "superseded"
	// WatchWatching: the change took effect less than the watch period ago
	// and nothing regressed so far.
	WatchWatching = "watching"
	// WatchVerified: the watch period passed without a regression.
	WatchVerified = "verified"
	// WatchRegressed: the container did worse after the change.
	WatchRegressed = "regressed"
)

// Watch is one change of the job's, to one container's request, that
// reached the base branch: when it took effect in the cluster, and how the
// container did in the watch period after it against as long a period
// before it.
type Watch struct {
	Container string              `json:"container"`
	Resource  corev1.ResourceName `json:"resource"`
	// From and To are the request before and after; From is nil when the
	// request was unset.
	From *resource.Quantity `json:"from,omitempty"`
	To   resource.Quantity  `json:"to"`
	// Commit is the job's commit that made the change, CommitURL where a
	// person reads it, and Committed when it was made.
	Commit    string    `json:"commit"`
	CommitURL string    `json:"commitURL,omitempty"`
	Committed time.Time `json:"committed"`
	// Corrective reports that the change was itself the correction of a
	// regression.
	Corrective bool `json:"corrective,omitempty"`
	// Effective is when a pod of the target first ran with To; nil while
	// none has.
	Effective *time.Time `json:"effective,omitempty"`
	// State is pending, superseded, watching, verified or regressed.
	State string `json:"state"`
	// Live is the request the pod template has when it is not To; nil
	// when it has none.
	Live *resource.Quantity `json:"live,omitempty"`
	// Before and After are what the container did in the period before the
	// change took effect and in the watch period after it (or the part of
	// it that has passed).
	Before *Observed `json:"before,omitempty"`
	After  *Observed `json:"after,omitempty"`
	// Regression says what got worse, e.g. "2 OOM kills after, none
	// before".
	Regression string `json:"regression,omitempty"`
	// Correction is the request proposed to undo a regression.
	Correction *resource.Quantity `json:"correction,omitempty"`
	// Queries are the PromQL queries the observations come from.
	Queries []string `json:"queries,omitempty"`
}

// Observed is how a container did over a period, summed or taken over all
// pods of its target.
type Observed struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// OOMKills counts the hours in which a pod's container restarted after
	// an out-of-memory kill; Restarts the restarts.
	OOMKills int `json:"oomKills"`
	Restarts int `json:"restarts"`
	// Throttled is the share of CPU periods in which the container was
	// throttled; nil without CFS counters.
	Throttled *float64 `json:"throttled,omitempty"`
	// MemoryPeak is the highest working set in bytes; nil without samples.
	MemoryPeak *float64 `json:"memoryPeak,omitempty"`
}
