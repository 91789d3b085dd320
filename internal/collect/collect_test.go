package collect

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

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

func newFakeCollector(t *testing.T, objs ...runtime.Object) (*Collector, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		v1alpha1.GroupVersionResource(): "ResourceRecommendList",
		deploymentsGVR:                  "DeploymentList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
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
		{Name: "shop/gone", Code: CodeWorkloadNotFound},
		{Name: "shop/sts", Code: CodeWorkloadsUnsupported},
		{Name: "shop/web", Containers: []string{"app", "proxy"}, Policies: []string{"app/cpu/30", "app/memory/10", "proxy/cpu/30", "proxy/memory/10"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Collect() mismatch (-want +got):\n%s", d)
	}

	web := items[3].Workload.Container("app")
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
	if d := cmp.Diff(map[string]int{"deployments": 1, "resourcerecommends": 1}, lists); d != "" {
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

func TestCollectFailsWhenTargetsCannotBeListed(t *testing.T) {
	c, client := newFakeCollector(t, deployment("shop", "web", container("app", "1", "1Gi")), recommendObj("shop", "web", "Deployment", "web"))
	client.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), "", errors.New("no rule"))
	})
	_, err := c.Collect(context.Background())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "listing deployments.apps") {
		t.Errorf("Collect() error = %v, want a forbidden error naming deployments.apps", err)
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
