package collect

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// DefaultPageSize is how many objects one list call asks for.
const DefaultPageSize = 500

// Item is one ResourceRecommend as the run sees it: its target, and either
// the validated policies or the reason it was rejected.
type Item struct {
	Namespace string
	Name      string
	// Labels and Annotations are the ResourceRecommend's own: per-CR
	// settings, and what groups its changes into pull requests.
	Labels, Annotations map[string]string
	// NamespaceLabels and NamespaceAnnotations are its namespace's (who
	// reviews its changes); nil when namespaces could not be listed.
	NamespaceLabels, NamespaceAnnotations map[string]string
	Target                                v1alpha1.CrossVersionObjectReference
	// Workload is the resolved target; nil when it could not be read.
	Workload *Workload
	// Policies are the validated per-container policies of a valid item.
	Policies []ContainerPolicy
	// Extensions are the validated algorithmPolicy.extensions of a valid
	// item; zero fields mean the run's defaults.
	Extensions Extensions
	// HeldBack are the resources whose requests must be left alone, with
	// the reason: a HorizontalPodAutoscaler scales the target on that
	// resource's utilisation, which is relative to the request.
	HeldBack map[corev1.ResourceName]string
	// Autoscalers are, in HPA mode adjust, the HorizontalPodAutoscaler
	// whose utilisation targets change with the requests instead.
	Autoscalers []Autoscaler
	// Scaler is the HorizontalPodAutoscaler that sets the target's
	// replicas, on whatever metric; nil when none does (or HPAs are not
	// read).
	Scaler *Scaler
	// Invalid says why the item was rejected; nil when it is valid.
	Invalid *ValidationError
	// Cause is what lay behind a rejection whose katalyst message says
	// little, such as "workload matched err".
	Cause error

	// generation and status are the object's as listed, for WriteStatus.
	generation int64
	status     v1alpha1.ResourceRecommendStatus
	// claims are the objects whose manifest this item would change: its
	// target and the object the target takes its pod template from.
	claims []targetKey
}

// Collector lists ResourceRecommends and the workloads they target.
type Collector struct {
	client      dynamic.Interface
	meta        metadata.Interface
	mapper      meta.RESTMapper
	scope       scope
	selector    string
	shardIndex  int
	shardCount  int
	pageSize    int64
	hpa         bool
	hpaMode     HPAMode
	writeStatus bool
	log         *slog.Logger
	// listed are the items of the last Collect by namespace/name, whose
	// listed status WriteStatus compares with the one it would write;
	// kept only when it writes statuses, and only what it needs.
	listed map[string]Item
}

// Option configures a Collector.
type Option func(*Collector)

// WithNamespace restricts the run to one namespace; "" means all. It is
// WithNamespaces with one name.
func WithNamespace(ns string) Option {
	return func(c *Collector) {
		if ns != "" {
			c.scope.include = append(c.scope.include, ns)
		}
	}
}

// WithNamespaces restricts the run to these namespaces; each is listed on
// its own. None means all namespaces.
func WithNamespaces(namespaces ...string) Option {
	return func(c *Collector) { c.scope.include = append(c.scope.include, namespaces...) }
}

// WithExcludedNamespaces leaves these namespaces out.
func WithExcludedNamespaces(namespaces ...string) Option {
	return func(c *Collector) { c.scope.exclude = append(c.scope.exclude, namespaces...) }
}

// WithLabelSelector handles only the ResourceRecommends matching selector,
// in kubectl's syntax. Collect fails on a malformed selector.
func WithLabelSelector(selector string) Option {
	return func(c *Collector) { c.selector = selector }
}

// WithShard handles only the ResourceRecommends of shard index out of
// count (see Shard). count <= 1 means one shard, the whole scope.
func WithShard(index, count int) Option {
	return func(c *Collector) { c.shardIndex, c.shardCount = index, count }
}

// WithMetadataClient lists targets by their metadata first, so that full
// objects are read only from the namespaces holding a wanted target.
// Without it, the dynamic client's full lists tell existence too.
func WithMetadataClient(m metadata.Interface) Option {
	return func(c *Collector) { c.meta = m }
}

// WithHPAAwareness sets whether resources a HorizontalPodAutoscaler scales
// on by utilisation are held back (Item.HeldBack). On by default.
func WithHPAAwareness(on bool) Option { return func(c *Collector) { c.hpa = on } }

// WithHPAMode sets what happens to a resource an HPA scales on by
// utilisation: HPAHold (the default) or HPAAdjust.
func WithHPAMode(mode HPAMode) Option { return func(c *Collector) { c.hpaMode = mode } }

// WithStatusWriting enables WriteStatus. Off by default, so that the job
// needs no write permission.
func WithStatusWriting(on bool) Option { return func(c *Collector) { c.writeStatus = on } }

// WithPageSize sets the number of objects per list call.
func WithPageSize(n int64) Option { return func(c *Collector) { c.pageSize = n } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *Collector) { c.log = l } }

// New returns a Collector reading through client, resolving kinds with mapper.
func New(client dynamic.Interface, mapper meta.RESTMapper, opts ...Option) *Collector {
	c := &Collector{client: client, mapper: mapper, pageSize: DefaultPageSize, hpa: true, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Collect lists every ResourceRecommend in scope and shard, reads the
// targets with paged lists per resource type (never a GET per object), and
// validates each item. An invalid item is returned with Invalid set; a
// failure to list ResourceRecommends, targets or HorizontalPodAutoscalers
// is an error, as the items it concerns would otherwise be reported
// wrongly. Items are sorted by namespace and name.
func (c *Collector) Collect(ctx context.Context) ([]Item, error) {
	if c.shardCount > 1 && (c.shardIndex < 0 || c.shardIndex >= c.shardCount) {
		return nil, fmt.Errorf("shard index %d is not in [0, %d)", c.shardIndex, c.shardCount)
	}
	if _, err := labels.Parse(c.selector); err != nil {
		return nil, fmt.Errorf("label selector %q: %w", c.selector, err)
	}
	recs, undecodable, others, err := c.listRecommends(ctx)
	if err != nil {
		return nil, err
	}
	targets, err := c.readTargets(ctx, recs)
	if err != nil {
		return nil, err
	}
	namespaces, err := c.readNamespaces(ctx, recs)
	if err != nil {
		return nil, err
	}
	var hpas hpaRead
	if c.hpa && len(recs) > 0 {
		if hpas, err = c.readHPAs(ctx); err != nil {
			return nil, err
		}
	}

	items := make([]Item, 0, len(recs)+len(undecodable))
	items = append(items, undecodable...)
	for _, rec := range recs {
		item := c.item(ctx, rec, targets)
		ns := namespaces[rec.Namespace]
		item.NamespaceLabels, item.NamespaceAnnotations = ns.labels, ns.annotations
		mode, invalid := hpaModeOf(rec.Annotations, c.hpaMode)
		if item.Invalid == nil && invalid != nil {
			item.Invalid = invalid
			c.log.InfoContext(ctx, "invalid resource recommend", "resourceRecommend", rec.Namespace+"/"+rec.Name, "code", invalid.Code, "message", invalid.Message)
		}
		if item.Invalid == nil && item.Workload != nil {
			item.HeldBack, item.Autoscalers = hpas.of(targets.keyOf(rec), mode)
			if s, ok := hpas.scalers[targets.keyOf(rec)]; ok {
				item.Scaler = &s
			}
		}
		items = append(items, item)
	}
	markConflicts(ctx, items, c.otherClaims(others, targets), c.log)
	c.listed = nil
	if c.writeStatus {
		// What WriteStatus compares and writes, and no more: the items'
		// targets are let go with the items.
		c.listed = make(map[string]Item, len(items))
		for _, it := range items {
			c.listed[it.Namespace+"/"+it.Name] = Item{Namespace: it.Namespace, Name: it.Name, Invalid: it.Invalid, generation: it.generation, status: it.status}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	return items, nil
}

// item validates one ResourceRecommend against what was read.
func (c *Collector) item(ctx context.Context, rec *v1alpha1.ResourceRecommend, targets *targetSet) Item {
	item := Item{
		Namespace:   rec.Namespace,
		Name:        rec.Name,
		Labels:      rec.Labels,
		Annotations: withoutLastApplied(rec.Annotations),
		Target:      rec.Spec.TargetRef,
		generation:  rec.Generation,
		status:      rec.Status,
	}
	if res := targets.resolved[refOf(rec)]; res.err == nil && res.gk.Kind != "" {
		item.claims = append(item.claims, targets.keyOf(rec))
	}
	lookup := func() ([]string, error) {
		w, err := targets.lookup(rec)
		if err != nil {
			item.Cause = err
			return nil, err
		}
		item.Workload = w
		if w.Source != nil {
			item.claims = append(item.claims, sourceKey(w.Source))
		}
		return w.ContainerNames(), nil
	}
	policies, invalid := Validate(rec.Spec, lookup)
	if invalid != nil {
		item.Invalid = invalid
		attrs := []any{"resourceRecommend", rec.Namespace + "/" + rec.Name, "code", invalid.Code, "message", invalid.Message}
		if item.Cause != nil {
			attrs = append(attrs, "cause", item.Cause)
		}
		c.log.InfoContext(ctx, "invalid resource recommend", attrs...)
		return item
	}
	item.Policies = policies
	// Validate has checked the extensions already.
	item.Extensions, _ = ParseExtensions(rec.Spec.ResourcePolicy.AlgorithmPolicy.Extensions)
	if len(item.Extensions.Unknown) > 0 {
		c.log.InfoContext(ctx, "ignoring unknown algorithm extensions", "resourceRecommend", rec.Namespace+"/"+rec.Name, "keys", item.Extensions.Unknown)
	}
	return item
}

// listRecommends lists and decodes the ResourceRecommends in scope and
// shard, dropping those that belong to another recommender. The apiserver
// has checked each object against the CRD schema, so one that does not
// decode means the cluster's CRD differs from ours: it comes back as an
// invalid item with code CodeDecodeError, and the run goes on. The targets
// of the ResourceRecommends in scope but in another shard come back as
// others, so that a conflict across shards is seen by both.
func (c *Collector) listRecommends(ctx context.Context) ([]*v1alpha1.ResourceRecommend, []Item, []claim, error) {
	gvr := v1alpha1.GroupVersionResource()
	var recs []*v1alpha1.ResourceRecommend
	var undecodable []Item
	var others []claim
	err := c.eachObject(ctx, gvr, c.scope.namespaces(), c.selector, func(u *unstructured.Unstructured) error {
		if !c.scope.contains(u.GetNamespace()) {
			return nil
		}
		if !c.inShard(u.GetNamespace(), u.GetName()) {
			if cl, ok := claimOf(u); ok {
				others = append(others, cl)
			}
			return nil
		}
		rec := &v1alpha1.ResourceRecommend{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rec); err != nil {
			undecodable = append(undecodable, Item{
				Namespace:   u.GetNamespace(),
				Name:        u.GetName(),
				Annotations: withoutLastApplied(u.GetAnnotations()),
				Invalid:     &ValidationError{Code: CodeDecodeError, Message: fmt.Sprintf("cannot decode: %v", err)},
				generation:  u.GetGeneration(),
			})
			return nil
		}
		if !IsDefaultRecommender(rec.Spec) {
			return nil
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return recs, undecodable, others, nil
}

// CodeDecodeError marks a ResourceRecommend that does not decode into the
// v1alpha1 types; katalyst has no code for it.
const CodeDecodeError = "DecodeError"

// inShard reports whether namespace/name belongs to this collector's shard.
func (c *Collector) inShard(namespace, name string) bool {
	return c.shardCount <= 1 || Shard(namespace, name, c.shardCount) == c.shardIndex
}

// targetKey names a target by its resolved group and kind.
type targetKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func (k targetKey) String() string {
	return fmt.Sprintf("%s %s/%s", k.gk, k.namespace, k.name)
}
