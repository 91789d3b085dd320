//go:build integration

package collect

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// TestCollectAsChartServiceAccount runs the collect stage as the chart's
// ServiceAccount with the chart's ClusterRole on the real apiserver.
func TestCollectAsChartServiceAccount(t *testing.T) {
	installCRDs(t)
	sa := renderChartTemplate(t, "serviceaccount.yaml", "recommend-job", nil)
	sel := "    selector: {matchLabels: {app: x}}\n"
	labelled := func(doc string) string {
		return strings.Replace(doc, "metadata: {namespace: rbac, ", "metadata: {labels: {suite: rbac}, namespace: rbac, ", 1)
	}
	apply(t,
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: recommend-job}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: rbac}\n",
		string(sa),
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: rbac, name: web}\nspec:\n"+sel+podTemplate(4, "500m", ""),
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {namespace: rbac, name: db}\nspec:\n    serviceName: db\n"+sel+podTemplate(4, "1", ""),
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {namespace: rbac, name: nightly}\nspec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n"+podTemplate(6, "3", "    restartPolicy: Never\n"),
		// A Rollout on a template of its own: one on web's would conflict
		// with web's ResourceRecommend.
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: rbac, name: byref-template}\nspec:\n    replicas: 0\n"+sel+podTemplate(4, "250m", ""),
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {namespace: rbac, name: byref}\nspec:\n  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: byref-template}\n",
		"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {namespace: rbac, name: web}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 3\n",
		labelled(recommendYAML("rbac", "web", "apps/v1", "Deployment", "web", "")),
		labelled(recommendYAML("rbac", "db", "apps/v1", "StatefulSet", "db", "")),
		labelled(recommendYAML("rbac", "nightly", "batch/v1", "CronJob", "nightly", "")),
		labelled(recommendYAML("rbac", "byref", "argoproj.io/v1alpha1", "Rollout", "byref", "")),
		// Kinds outside the role: a tenant's mistake must not stop the run.
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: rbac, name: settings}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {namespace: rbac, name: widget}\nspec:\n"+podTemplate(2, "1", ""),
		labelled(recommendYAML("rbac", "settings", "v1", "ConfigMap", "settings", "")),
		labelled(recommendYAML("rbac", "widget", "example.com/v1", "Widget", "widget", "")),
	)

	cfg := bed.APIServer.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:recommend-job:recommend-job"}
	dyn, meta, mapper := clients(t, cfg)
	// Across all namespaces, as the chart runs it; the label keeps other
	// tests' ResourceRecommends out.
	newCollector := func() *Collector {
		mapper.Reset()
		return New(dyn, mapper, WithMetadataClient(meta), WithLabelSelector("suite=rbac"), WithStatusWriting(true))
	}
	applyRBAC := func(t *testing.T, docs []*unstructured.Unstructured) {
		t.Helper()
		var out []string
		for _, d := range docs {
			b, err := yaml.Marshal(d.Object)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		apply(t, out...)
	}

	t.Run("read-only role collects", func(t *testing.T) {
		applyRBAC(t, chartRBAC(t, nil))
		var items []Item
		var err error
		// RBAC changes reach the authorizer through an informer.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			items, err = newCollector().Collect(t.Context())
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("Collect() as the chart's ServiceAccount error = %v", err)
		}
		// The HPA without metrics scales web on cpu utilisation. A ConfigMap
		// is refused without a list; the role cannot list widgets.
		want := []string{"byref app", "db app", "nightly app", "settings WorkloadsUnsupported", "web app held:cpu",
			"widget WorkloadMatchError"}
		if d := cmp.Diff(want, summarize(items)); d != "" {
			t.Fatalf("items (-want +got):\n%s", d)
		}
		widget := itemNamed(t, items, "widget")
		for _, want := range []string{"the job cannot read this kind", `cannot list resource "widgets" in API group "example.com"`} {
			if widget.Cause == nil || !strings.Contains(widget.Cause.Error(), want) {
				t.Errorf("widget's cause = %v, want it to contain %q", widget.Cause, want)
			}
		}
		// Without write-status the role cannot write a status.
		err = newCollector().patchStatus(t.Context(), items[0], nil, errors.New("not yet"))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `resource "resourcerecommends/status"`) {
			t.Errorf("WriteStatus() with the read-only role error = %v, want forbidden on resourcerecommends/status", err)
		}
	})

	t.Run("write-status role writes the status", func(t *testing.T) {
		applyRBAC(t, chartRBAC(t, map[string]any{"config": map[string]any{"write-status": true}}))
		items, err := newCollector().Collect(t.Context())
		if err != nil {
			t.Fatalf("Collect() error = %v", err)
		}
		web := itemNamed(t, items, "web")
		recs := []v1alpha1.ContainerResources{{ContainerName: "app", Requests: &v1alpha1.ContainerResourceList{
			Target: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("300Mi")}}}}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err = newCollector().patchStatus(t.Context(), web, recs, nil)
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("WriteStatus() error = %v", err)
		}
		admin, _, _ := clients(t, bed.APIServer.RESTConfig())
		u, err := admin.Resource(v1alpha1.GroupVersionResource()).Namespace("rbac").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		target, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendResources", "containerRecommendations")
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if len(target) != 1 || len(conditions) != 3 {
			t.Errorf("status = %v, want one container recommendation and three conditions", u.Object["status"])
		}
		// Listed again, the same status is not written a second time.
		items, err = newCollector().Collect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		web = itemNamed(t, items, "web")
		if !equalStatus(web.status.RecommendResources, recs) {
			t.Errorf("listed status = %+v, want the recommendation written", web.status.RecommendResources)
		}
		if err := newCollector().patchStatus(t.Context(), web, recs, nil); err != nil {
			t.Fatalf("WriteStatus() again error = %v", err)
		}
		again, err := admin.Resource(v1alpha1.GroupVersionResource()).Namespace("rbac").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again.GetResourceVersion() != u.GetResourceVersion() {
			t.Errorf("resourceVersion %s -> %s: an unchanged status was written again", u.GetResourceVersion(), again.GetResourceVersion())
		}
	})

	t.Run("a missing rule fails only the items of that kind", func(t *testing.T) {
		docs := chartRBAC(t, nil)
		rules, _, _ := unstructured.NestedSlice(docs[0].Object, "rules")
		for _, r := range rules {
			m := r.(map[string]any)
			res, _, _ := unstructured.NestedStringSlice(m, "resources")
			_ = unstructured.SetNestedStringSlice(m, slices.DeleteFunc(res, func(s string) bool { return s == "statefulsets" }), "resources")
		}
		_ = unstructured.SetNestedSlice(docs[0].Object, rules, "rules")
		applyRBAC(t, docs)
		var items []Item
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			items, err = newCollector().Collect(t.Context())
			if err != nil {
				t.Fatalf("Collect() error = %v, want the run to go on", err)
			}
			if itemNamed(t, items, "db").Invalid != nil || time.Now().After(deadline) {
				break
			}
		}
		want := []string{"byref app", "db WorkloadMatchError", "nightly app", "settings WorkloadsUnsupported", "web app held:cpu",
			"widget WorkloadMatchError"}
		if d := cmp.Diff(want, summarize(items)); d != "" {
			t.Fatalf("items (-want +got):\n%s", d)
		}
		db := itemNamed(t, items, "db")
		for _, want := range []string{"listing statefulsets.apps", `cannot list resource "statefulsets" in API group "apps"`} {
			if db.Cause == nil || !strings.Contains(db.Cause.Error(), want) {
				t.Errorf("db's cause = %v, want it to contain %q", db.Cause, want)
			}
		}
	})
}

// summarize lists items as "name code" when invalid, else "name containers"
// with " held:cpu" when the cpu request is held back.
func summarize(items []Item) []string {
	var got []string
	for _, it := range items {
		s := it.Name
		if it.Invalid != nil {
			s += " " + it.Invalid.Code
		} else if it.Workload != nil {
			s += " " + strings.Join(it.Workload.ContainerNames(), ",")
		}
		if len(it.HeldBack) > 0 {
			s += " held:" + string(corev1.ResourceCPU)
		}
		got = append(got, s)
	}
	return got
}

// itemNamed returns the item of that name.
func itemNamed(t *testing.T, items []Item, name string) Item {
	t.Helper()
	for _, it := range items {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no item %s", name)
	return Item{}
}

func equalStatus(got *v1alpha1.RecommendResources, want []v1alpha1.ContainerResources) bool {
	if got == nil || len(got.ContainerRecommendations) != len(want) {
		return false
	}
	for i := range want {
		g, w := got.ContainerRecommendations[i], want[i]
		if g.ContainerName != w.ContainerName || g.Requests == nil {
			return false
		}
		for r, q := range w.Requests.Target {
			if gq, ok := g.Requests.Target[r]; !ok || gq.Cmp(q) != 0 {
				return false
			}
		}
	}
	return true
}
