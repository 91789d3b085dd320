package collect

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	configMapsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func deployment(ns, name string, containers ...map[string]any) *unstructured.Unstructured {
	cs := make([]any, len(containers))
	for i, c := range containers {
		cs[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": cs}}},
	}}
}

func container(name, cpu, memory string) map[string]any {
	return map[string]any{"name": name, "resources": map[string]any{
		"requests": map[string]any{"cpu": cpu, "memory": memory},
		"limits":   map[string]any{"memory": memory},
	}}
}

func recommendObj(ns, name, kind, target string, policies ...any) *unstructured.Unstructured {
	if len(policies) == 0 {
		policies = []any{map[string]any{
			"containerName":               "*",
			"controlledResourcesPolicies": []any{map[string]any{"resourceName": "cpu"}, map[string]any{"resourceName": "memory", "bufferPercent": int64(10)}},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "recommendation.katalyst.kubewharf.io/v1alpha1", "kind": "ResourceRecommend",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"targetRef":      map[string]any{"apiVersion": "apps/v1", "kind": kind, "name": target},
			"resourcePolicy": map[string]any{"algorithmPolicy": map[string]any{}, "containerPolicies": policies},
		},
	}}
}

func newFakeCollector(t testing.TB, objs ...runtime.Object) (*Collector, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		v1alpha1.GroupVersionResource(): "ResourceRecommendList",
		deploymentsGVR:                  "DeploymentList",
		statefulSetsGVR:                 "StatefulSetList",
		configMapsGVR:                   "ConfigMapList",
		hpaGVR:                          "HorizontalPodAutoscalerList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return New(client, mapper, WithPageSize(2)), client
}

func TestCollect(t *testing.T) {
	c, client := newFakeCollector(t,
		deployment("shop", "web", container("app", "500m", "512Mi"), container("proxy", "100m", "64Mi")),
		deployment("shop", "api", container("api", "1", "1Gi")),
		deployment("other", "web", container("app", "2", "2Gi")),
		recommendObj("shop", "web", "Deployment", "web"),
		recommendObj("shop", "gone", "Deployment", "missing"),
		recommendObj("shop", "sts", "StatefulSet", "db"),
		recommendObj("shop", "config", "ConfigMap", "settings"),
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "shop", "name": "settings"}, "data": map[string]any{"a": "b"},
		}},
		recommendObj("other", "external", "Deployment", "web", map[string]any{
			"containerName": "app", "controlledResourcesPolicies": []any{map[string]any{"resourceName": "cpu"}},
		}),
	)
	external := recommendObj("other", "elsewhere", "Deployment", "web")
	_ = unstructured.SetNestedField(external.Object, "vpa", "spec", "resourcePolicy", "algorithmPolicy", "recommender")
	if _, err := client.Resource(v1alpha1.GroupVersionResource()).Namespace("other").Create(context.Background(), external, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	type summary struct {
		Name       string
		Code       string
		Containers []string
		Policies   []string
	}
	var got []summary
	for _, it := range items {
		s := summary{Name: it.Namespace + "/" + it.Name}
		if it.Invalid != nil {
			s.Code = it.Invalid.Code
		}
		if it.Workload != nil {
			s.Containers = it.Workload.ContainerNames()
		}
		for _, p := range it.Policies {
			for _, r := range p.Resources {
				s.Policies = append(s.Policies, p.ContainerName+"/"+string(r.Resource)+"/"+strconv.Itoa(int(r.BufferPercent)))
			}
		}
		got = append(got, s)
	}
	want := []summary{
		// other/elsewhere belongs to another recommender and is skipped.
		{Name: "other/external", Containers: []string{"app"}, Policies: []string{"app/cpu/30"}},
		// The fixture says apiVersion apps/v1 for every kind; v1 ConfigMap
		// does not exist in apps, so it fails to resolve.
		{Name: "shop/config", Code: CodeWorkloadMatchError},
		{Name: "shop/gone", Code: CodeWorkloadNotFound},
		// No StatefulSet db exists.
		{Name: "shop/sts", Code: CodeWorkloadNotFound},
		{Name: "shop/web", Containers: []string{"app", "proxy"}, Policies: []string{"app/cpu/30", "app/memory/10", "proxy/cpu/30", "proxy/memory/10"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Collect() mismatch (-want +got):\n%s", d)
	}

	web := items[4].Workload.Container("app")
	if q := web.Requests["cpu"]; q.String() != "500m" {
		t.Errorf("web app cpu request = %s, want 500m", q.String())
	}
	if q := web.Limits["memory"]; q.String() != "512Mi" {
		t.Errorf("web app memory limit = %s, want 512Mi", q.String())
	}

	// One list per resource type, paged, and never a GET.
	lists := map[string]int{}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("unexpected GET %s", a.GetResource())
		}
		if a.GetVerb() == "list" {
			lists[a.GetResource().Resource]++
		}
	}
	// One list per resource type whatever the number of objects. (The fake
	// client ignores the page size, so paging itself is not seen here.)
	if d := cmp.Diff(map[string]int{"deployments": 1, "statefulsets": 1, "horizontalpodautoscalers": 1, "resourcerecommends": 1}, lists); d != "" {
		t.Errorf("list calls (-want +got):\n%s", d)
	}
}

func TestWorkloadFrom(t *testing.T) {
	withSpec := func(kind string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": kind, "metadata": map[string]any{"namespace": "a", "name": "b"}, "spec": spec,
		}}
	}
	tests := []struct {
		name           string
		obj            *unstructured.Unstructured
		wantContainers []string
		wantNoTemplate bool
	}{
		{name: "no pod template", obj: withSpec("ConfigMap", map[string]any{"data": "x"}), wantNoTemplate: true},
		{name: "containers not a list", obj: withSpec("Deployment", map[string]any{"template": map[string]any{"spec": map[string]any{"containers": "app"}}}), wantNoTemplate: true},
		{name: "nameless container skipped", obj: withSpec("Deployment", map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"image": "x"}, map[string]any{"name": "app"}, "junk"},
		}}}), wantContainers: []string{"app"}},
		{name: "cronjob", obj: withSpec("CronJob", map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "report"}},
		}}}}}), wantContainers: []string{"report"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := workloadFrom(tt.obj)
			if tt.wantNoTemplate {
				if !errors.Is(err, ErrNoPodTemplate) {
					t.Fatalf("workloadFrom() error = %v, want ErrNoPodTemplate", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("workloadFrom() error = %v", err)
			}
			if d := cmp.Diff(tt.wantContainers, w.ContainerNames()); d != "" {
				t.Errorf("containers (-want +got):\n%s", d)
			}
		})
	}
}

func TestCollectListFailures(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode string // of shop/web, when the run goes on
		wantErr  string // of the run, when it stops
	}{
		{name: "a kind the role cannot list is the item's error",
			err:      apierrors.NewForbidden(deploymentsGVR.GroupResource(), "", errors.New("no rule")),
			wantCode: CodeWorkloadMatchError},
		{name: "a kind no longer served is the item's error",
			err:      apierrors.NewNotFound(deploymentsGVR.GroupResource(), ""),
			wantCode: CodeWorkloadMatchError},
		{name: "a timeout stops the run",
			err:     apierrors.NewTimeoutError("slow", 1),
			wantErr: "listing deployments.apps"},
		{name: "a broken connection stops the run",
			err:     errors.New("connection reset by peer"),
			wantErr: "connection reset by peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, client := newFakeCollector(t,
				deployment("shop", "web", container("app", "1", "1Gi")), recommendObj("shop", "web", "Deployment", "web"),
				recommendObj("shop", "db", "StatefulSet", "db"))
			client.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			items, err := c.Collect(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Collect() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Collect() error = %v, want the run to go on", err)
			}
			if len(items) != 2 || items[1].Name != "web" || items[1].Invalid == nil || items[1].Invalid.Code != tt.wantCode {
				t.Fatalf("items = %+v, want shop/web rejected with %s", items, tt.wantCode)
			}
			if !errors.Is(items[1].Cause, ErrWorkloadUnreadable) || !strings.Contains(items[1].Cause.Error(), tt.err.Error()) {
				t.Errorf("shop/web cause = %v, want ErrWorkloadUnreadable with %q", items[1].Cause, tt.err)
			}
			// The other kind is read as usual.
			if items[0].Name != "db" || items[0].Invalid == nil || items[0].Invalid.Code != CodeWorkloadNotFound {
				t.Errorf("shop/db = %+v, want WorkloadNotFound", items[0])
			}
		})
	}
}

func TestCollectDoesNotListKindsWithoutTemplate(t *testing.T) {
	rec := recommendObj("shop", "config", "ConfigMap", "settings")
	_ = unstructured.SetNestedField(rec.Object, "v1", "spec", "targetRef", "apiVersion")
	c, client := newFakeCollector(t, rec)
	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	if len(items) != 1 || items[0].Invalid == nil || items[0].Invalid.Code != CodeWorkloadsUnsupported {
		t.Fatalf("items = %+v, want shop/config rejected with WorkloadsUnsupported", items)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "configmaps" {
			t.Errorf("Collect() sent %s %s: a built-in kind without a pod template needs no read", a.GetVerb(), a.GetResource())
		}
	}
}

func TestCollectUnknownKindIsPerItem(t *testing.T) {
	// A target of a kind the cluster does not serve.
	rec := recommendObj("shop", "odd", "Deployment", "web")
	_ = unstructured.SetNestedField(rec.Object, "example.com/v1", "spec", "targetRef", "apiVersion")
	c, _ := newFakeCollector(t, deployment("shop", "web", container("app", "1", "1Gi")), recommendObj("shop", "web", "Deployment", "web"), rec)
	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	if len(items) != 2 || items[0].Name != "odd" || items[0].Invalid == nil || items[0].Invalid.Code != CodeWorkloadMatchError || items[0].Cause == nil {
		t.Fatalf("items = %+v, want shop/odd rejected with WorkloadMatchError and a cause", items)
	}
	if items[1].Invalid != nil {
		t.Errorf("shop/web = %+v, want valid", items[1].Invalid)
	}
}

func TestCollectShardsAndScope(t *testing.T) {
	var objs []runtime.Object
	for _, ns := range []string{"a", "b", "kube-system"} {
		for i := range 10 {
			name := fmt.Sprintf("app-%d", i)
			rec := recommendObj(ns, name, "Deployment", name)
			if i%2 == 0 {
				rec.SetLabels(map[string]string{"team": "even"})
			}
			objs = append(objs, deployment(ns, name, container("app", "1", "1Gi")), rec)
		}
	}
	names := func(t *testing.T, opts ...Option) []string {
		t.Helper()
		c, _ := newFakeCollector(t, objs...)
		for _, o := range opts {
			o(c)
		}
		items, err := c.Collect(context.Background())
		if err != nil {
			t.Fatalf("Collect() error = %v", err)
		}
		var out []string
		for _, it := range items {
			if it.Invalid != nil {
				t.Errorf("%s/%s invalid: %v", it.Namespace, it.Name, it.Invalid)
			}
			out = append(out, it.Namespace+"/"+it.Name)
		}
		return out
	}

	all := names(t)
	if len(all) != 30 {
		t.Fatalf("all = %d items, want 30", len(all))
	}
	// Three shards split the 30 without overlap, each as Shard says.
	seen := map[string]int{}
	for i := range 3 {
		for _, n := range names(t, WithShard(i, 3)) {
			ns, name, _ := strings.Cut(n, "/")
			if Shard(ns, name, 3) != i {
				t.Errorf("%s in shard %d, Shard says %d", n, i, Shard(ns, name, 3))
			}
			seen[n]++
		}
	}
	if len(seen) != 30 {
		t.Errorf("shards cover %d items, want 30", len(seen))
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%s in %d shards, want 1", n, k)
		}
	}

	if got := names(t, WithExcludedNamespaces("kube-system")); len(got) != 20 || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "kube-system/") }) {
		t.Errorf("excluding kube-system = %v, want the 20 of a and b", got)
	}
	if d := cmp.Diff([]string{"b/app-0", "b/app-2", "b/app-4", "b/app-6", "b/app-8"}, names(t, WithNamespaces("b"), WithLabelSelector("team=even"))); d != "" {
		t.Errorf("namespace b, team=even (-want +got):\n%s", d)
	}

	c, _ := newFakeCollector(t, objs...)
	WithShard(3, 3)(c)
	if _, err := c.Collect(context.Background()); err == nil || !strings.Contains(err.Error(), "shard index 3 is not in [0, 3)") {
		t.Errorf("Collect() with shard 3 of 3 error = %v", err)
	}
	c, _ = newFakeCollector(t, objs...)
	WithLabelSelector("team in (")(c)
	if _, err := c.Collect(context.Background()); err == nil || !strings.Contains(err.Error(), `label selector "team in ("`) {
		t.Errorf("Collect() with a malformed selector error = %v", err)
	}
}

func TestCollectHPAAwareness(t *testing.T) {
	hpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"namespace": "shop", "name": "web"},
		"spec": map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{
				"name": "memory", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(75)}}}},
		},
	}}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("aware=", on), func(t *testing.T) {
			c, client := newFakeCollector(t, deployment("shop", "web", container("app", "1", "1Gi")),
				deployment("shop", "api", container("app", "1", "1Gi")),
				recommendObj("shop", "web", "Deployment", "web"), recommendObj("shop", "api", "Deployment", "api"), hpa)
			WithHPAAwareness(on)(c)
			items, err := c.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// items are api, web; only web is scaled.
			want := map[corev1.ResourceName]string{"memory": "HorizontalPodAutoscaler shop/web scales on memory utilization (75%)"}
			if !on {
				want = nil
			}
			if d := cmp.Diff(want, items[1].HeldBack); d != "" {
				t.Errorf("web HeldBack (-want +got):\n%s", d)
			}
			if items[0].HeldBack != nil {
				t.Errorf("api HeldBack = %v, want none", items[0].HeldBack)
			}
			listed := false
			for _, a := range client.Actions() {
				listed = listed || a.GetResource().Resource == "horizontalpodautoscalers"
			}
			if listed != on {
				t.Errorf("HPAs listed = %t, want %t", listed, on)
			}
		})
	}
}

func TestCollectReadsOnlyNamespacesHoldingTargets(t *testing.T) {
	// 30 Deployments in 10 namespaces; ResourceRecommends want two of
	// them, in ns-1 and ns-7. The metadata list finds them, and full
	// objects come from those two namespaces only.
	var objs []runtime.Object
	scheme := runtime.NewScheme()
	metav1.AddMetaToScheme(scheme)
	var metas []runtime.Object
	for i := range 30 {
		ns, name := fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("app-%d", i)
		objs = append(objs, deployment(ns, name, container("app", "1", "1Gi")))
		metas = append(metas, &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		})
	}
	// ns-7 names its reviewers; ns-1 does not.
	for _, ns := range []string{"ns-1", "ns-7"} {
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == "ns-7" {
			m.Annotations = map[string]string{"recommend-job.io/reviewers": "@org/seven"}
		}
		metas = append(metas, m)
	}
	// app-1 is in ns-1, app-17 in ns-7; app-99 does not exist.
	objs = append(objs, recommendObj("ns-1", "a", "Deployment", "app-1"), recommendObj("ns-7", "b", "Deployment", "app-17"),
		recommendObj("ns-7", "c", "Deployment", "app-99"))
	c, client := newFakeCollector(t, objs...)
	WithHPAAwareness(false)(c)
	meta := metadatafake.NewSimpleMetadataClient(scheme, metas...)
	WithMetadataClient(meta)(c)

	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		s := it.Namespace + "/" + it.Name
		if it.Invalid != nil {
			s += " " + it.Invalid.Code
		}
		got = append(got, s)
	}
	if d := cmp.Diff([]string{"ns-1/a", "ns-7/b", "ns-7/c WorkloadNotFound"}, got); d != "" {
		t.Errorf("items (-want +got):\n%s", d)
	}
	for _, it := range items {
		want := ""
		if it.Namespace == "ns-7" {
			want = "@org/seven"
		}
		if got := it.NamespaceAnnotations["recommend-job.io/reviewers"]; got != want {
			t.Errorf("%s/%s: namespace reviewers %q, want %q", it.Namespace, it.Name, got, want)
		}
	}
	var lists []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" {
			lists = append(lists, a.GetResource().Resource+" in "+a.GetNamespace())
		}
	}
	want := []string{"resourcerecommends in ", "deployments in ns-1", "deployments in ns-7"}
	if d := cmp.Diff(want, lists); d != "" {
		t.Errorf("full lists (-want +got):\n%s", d)
	}
	var metaLists []string
	for _, a := range meta.Actions() {
		metaLists = append(metaLists, a.GetVerb()+" "+a.GetResource().Resource+" in "+a.GetNamespace())
	}
	// One list of the namespaces (their reviewers), one of the targets'
	// kind; no object is read on its own.
	if d := cmp.Diff([]string{"list deployments in ", "list namespaces in "}, metaLists); d != "" {
		t.Errorf("metadata requests (-want +got):\n%s", d)
	}
}

func TestCollectUnreadableNamespaceFailsOnlyItsItems(t *testing.T) {
	// The job may list Deployments in one of its two namespaces only, as
	// with a RoleBinding per namespace.
	for _, denied := range []string{"dup", "shop"} {
		t.Run("denied in "+denied, func(t *testing.T) {
			c, client := newFakeCollector(t,
				deployment("dup", "web", container("app", "1", "1Gi")), recommendObj("dup", "web", "Deployment", "web"),
				deployment("shop", "web", container("app", "1", "1Gi")), recommendObj("shop", "web", "Deployment", "web"))
			WithNamespaces("dup", "shop")(c)
			WithHPAAwareness(false)(c)
			client.PrependReactor("list", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == denied {
					return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), "", errors.New("no rule"))
				}
				return false, nil, nil
			})
			items, err := c.Collect(context.Background())
			if err != nil {
				t.Fatalf("Collect() error = %v, want the run to go on", err)
			}
			if len(items) != 2 {
				t.Fatalf("items = %+v, want dup/web and shop/web", items)
			}
			for _, it := range items {
				if it.Namespace != denied {
					if it.Invalid != nil {
						t.Errorf("%s/%s = %v (cause %v), want it read: its namespace can be listed", it.Namespace, it.Name, it.Invalid, it.Cause)
					}
					continue
				}
				if it.Invalid == nil || it.Invalid.Code != CodeWorkloadMatchError {
					t.Fatalf("%s/%s invalid = %v, want %s", it.Namespace, it.Name, it.Invalid, CodeWorkloadMatchError)
				}
				if want := "listing deployments.apps in namespace " + denied + ":"; it.Cause == nil || !strings.Contains(it.Cause.Error(), want) {
					t.Errorf("%s/%s cause = %v, want it to name its own namespace: %q", it.Namespace, it.Name, it.Cause, want)
				}
			}
		})
	}
}

// TestCollectDropsLastApplied checks that the manifest kubectl apply keeps
// in an annotation is not held for the run, of the ResourceRecommend nor
// of its target, while the annotations the job reads are.
func TestCollectDropsLastApplied(t *testing.T) {
	annotate := func(u *unstructured.Unstructured, extra map[string]string) *unstructured.Unstructured {
		a := map[string]string{lastApplied: `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`}
		maps.Copy(a, extra)
		u.SetAnnotations(a)
		return u
	}
	c, _ := newFakeCollector(t,
		annotate(deployment("shop", "web", container("app", "500m", "512Mi")), map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web"}),
		annotate(recommendObj("shop", "web", "Deployment", "web"), map[string]string{"recommend-job.io/mode": "patch"}),
	)
	items, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Workload == nil {
		t.Fatalf("items = %+v, want shop/web with its workload", items)
	}
	for _, tc := range []struct {
		what, kept  string
		annotations map[string]string
	}{
		{what: "ResourceRecommend", kept: "recommend-job.io/mode", annotations: items[0].Annotations},
		{what: "workload", kept: "argocd.argoproj.io/tracking-id", annotations: items[0].Workload.Annotations},
	} {
		if _, ok := tc.annotations[lastApplied]; ok {
			t.Errorf("%s keeps %s", tc.what, lastApplied)
		}
		if tc.annotations[tc.kept] == "" {
			t.Errorf("%s lost %s: %v", tc.what, tc.kept, tc.annotations)
		}
	}
}
