package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// sampleCR is the sample object and status from katalyst's user guide.
const sampleCR = `
apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata:
  name: rec-demo
  namespace: default
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: shared-normal-deployment
  resourcePolicy:
    algorithmPolicy:
      algorithm: percentile
      recommender: default
      extensions: {}
    containerPolicies:
    - containerName: "*"
      controlledResourcesPolicies:
      - resourceName: cpu
        bufferPercent: 10
        controlledValues: RequestsOnly
        minAllowed: "1"
        maxAllowed: "3"
      - resourceName: memory
        bufferPercent: 10
        controlledValues: RequestsOnly
        minAllowed: 500Mi
        maxAllowed: 2Gi
status:
  conditions:
  - lastTransitionTime: "2023-08-24T07:55:12Z"
    status: "True"
    type: Initialized
  - lastTransitionTime: "2023-08-24T07:55:12Z"
    status: "True"
    type: RecommendationProvided
  - lastTransitionTime: "2023-08-24T07:55:12Z"
    status: "True"
    type: Validated
  lastRecommendationTime: "2023-08-24T07:55:12Z"
  observedGeneration: 1
  recommendResources:
    containerRecommendations:
    - containerName: stress
      requests:
        target:
          cpu: 1487m
          memory: 11Mi
`

func ptr[T any](v T) *T { return &v }

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func TestSampleRoundTrip(t *testing.T) {
	var u map[string]interface{}
	if err := yaml.UnmarshalStrict([]byte(sampleCR), &u); err != nil {
		t.Fatalf("parsing sample: %v", err)
	}

	var rec ResourceRecommend
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u, &rec, true); err != nil {
		t.Fatalf("converting sample to ResourceRecommend: %v", err)
	}

	ts := metav1.NewTime(time.Date(2023, 8, 24, 7, 55, 12, 0, time.UTC))
	wantSpec := ResourceRecommendSpec{
		TargetRef: CrossVersionObjectReference{
			APIVersion: "apps/v1",
			Kind:       "Deployment",
			Name:       "shared-normal-deployment",
		},
		ResourcePolicy: ResourcePolicy{
			AlgorithmPolicy: AlgorithmPolicy{
				Algorithm:   AlgorithmPercentile,
				Recommender: "default",
				Extensions:  &runtime.RawExtension{Raw: []byte(`{}`)},
			},
			ContainerPolicies: []ContainerResourcePolicy{{
				ContainerName: "*",
				ControlledResourcesPolicies: []ContainerControlledResourcesPolicy{
					{
						ResourceName:     corev1.ResourceCPU,
						BufferPercent:    ptr[int32](10),
						ControlledValues: ptr(ContainerControlledValuesRequestsOnly),
						MinAllowed:       quantity("1"),
						MaxAllowed:       quantity("3"),
					},
					{
						ResourceName:     corev1.ResourceMemory,
						BufferPercent:    ptr[int32](10),
						ControlledValues: ptr(ContainerControlledValuesRequestsOnly),
						MinAllowed:       quantity("500Mi"),
						MaxAllowed:       quantity("2Gi"),
					},
				},
			}},
		},
	}
	wantStatus := ResourceRecommendStatus{
		LastRecommendationTime: &ts,
		ObservedGeneration:     1,
		Conditions: []ResourceRecommendCondition{
			{Type: Initialized, Status: corev1.ConditionTrue, LastTransitionTime: ts},
			{Type: RecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: ts},
			{Type: Validated, Status: corev1.ConditionTrue, LastTransitionTime: ts},
		},
		RecommendResources: &RecommendResources{
			ContainerRecommendations: []ContainerResources{{
				ContainerName: "stress",
				Requests: &ContainerResourceList{
					Target: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("1487m"),
						corev1.ResourceMemory: resource.MustParse("11Mi"),
					},
				},
			}},
		},
	}

	if got, want := rec.GroupVersionKind(), SchemeGroupVersion.WithKind(Kind); got != want {
		t.Errorf("GroupVersionKind = %v, want %v", got, want)
	}
	if rec.Namespace != "default" || rec.Name != "rec-demo" {
		t.Errorf("metadata = %s/%s, want default/rec-demo", rec.Namespace, rec.Name)
	}
	// Quantities are compared by value: cmp would otherwise see the cached
	// string form and the internal representation.
	quantityEqual := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(wantSpec, rec.Spec, quantityEqual); diff != "" {
		t.Errorf("spec mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantStatus, rec.Status, quantityEqual); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}

	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&rec)
	if err != nil {
		t.Fatalf("converting ResourceRecommend to unstructured: %v", err)
	}
	// ObjectMeta always serializes a zero creationTimestamp as null.
	if meta, ok := back["metadata"].(map[string]interface{}); ok {
		if v, ok := meta["creationTimestamp"]; ok && v == nil {
			delete(meta, "creationTimestamp")
		}
	}
	if diff := cmp.Diff(u, back); diff != "" {
		t.Errorf("round trip mismatch (-sample +round trip):\n%s", diff)
	}
}

func TestObservedGenerationAlwaysSerialized(t *testing.T) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ResourceRecommend{
		Status: ResourceRecommendStatus{Conditions: []ResourceRecommendCondition{{Type: Validated, Status: corev1.ConditionFalse}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	status, _ := u["status"].(map[string]interface{})
	if _, ok := status["observedGeneration"]; !ok {
		t.Errorf("status %v has no observedGeneration, want it serialized even when zero", status)
	}
}

func TestDeepCopy(t *testing.T) {
	ts := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	orig := &ResourceRecommend{
		ObjectMeta: metav1.ObjectMeta{Name: "rec", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: ResourceRecommendSpec{
			TargetRef: CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			ResourcePolicy: ResourcePolicy{
				AlgorithmPolicy: AlgorithmPolicy{
					Algorithm:  AlgorithmPercentile,
					Extensions: &runtime.RawExtension{Raw: []byte(`{"decayHalfLife":24}`)},
				},
				ContainerPolicies: []ContainerResourcePolicy{{
					ContainerName: "app",
					ControlledResourcesPolicies: []ContainerControlledResourcesPolicy{{
						ResourceName:     corev1.ResourceCPU,
						MinAllowed:       quantity("100m"),
						MaxAllowed:       quantity("2"),
						BufferPercent:    ptr[int32](30),
						ControlledValues: ptr(ContainerControlledValuesRequestsOnly),
					}},
				}},
			},
		},
		Status: ResourceRecommendStatus{
			LastRecommendationTime: &ts,
			ObservedGeneration:     3,
			Conditions:             []ResourceRecommendCondition{{Type: Validated, Status: corev1.ConditionTrue, LastTransitionTime: ts}},
			RecommendResources: &RecommendResources{
				PodRecommendations: []PodResources{{
					PodName: "web-1",
					ContainerRecommendations: []ContainerResources{{
						ContainerName: "app",
						Limits:        &ContainerResourceList{Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				}},
				ContainerRecommendations: []ContainerResources{{
					ContainerName: "app",
					Requests: &ContainerResourceList{
						Current:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
						Target:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
						UncappedTarget: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
					},
				}},
			},
		},
	}
	pristine := orig.DeepCopy()

	obj := orig.DeepCopyObject()
	cp, ok := obj.(*ResourceRecommend)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T, want *ResourceRecommend", obj)
	}
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Fatalf("copy differs from original (-orig +copy):\n%s", diff)
	}

	// Mutate every pointer, slice and map of the copy.
	cp.Labels["a"] = "changed"
	cp.Spec.TargetRef.Name = "changed"
	cp.Spec.ResourcePolicy.AlgorithmPolicy.Extensions.Raw[0] = 'X'
	crp := &cp.Spec.ResourcePolicy.ContainerPolicies[0].ControlledResourcesPolicies[0]
	crp.ResourceName = corev1.ResourceMemory
	crp.MinAllowed.Add(resource.MustParse("1"))
	crp.MaxAllowed.Add(resource.MustParse("1"))
	*crp.BufferPercent = 99
	*crp.ControlledValues = ContainerControlledValuesLimitsOnly
	cp.Spec.ResourcePolicy.ContainerPolicies[0].ContainerName = "changed"
	cp.Status.LastRecommendationTime.Time = time.Time{}
	cp.Status.Conditions[0].Reason = "changed"
	cp.Status.Conditions[0].LastTransitionTime.Time = time.Time{}
	cp.Status.RecommendResources.PodRecommendations[0].PodName = "changed"
	cp.Status.RecommendResources.PodRecommendations[0].ContainerRecommendations[0].Limits.Target[corev1.ResourceCPU] = resource.MustParse("9")
	req := cp.Status.RecommendResources.ContainerRecommendations[0].Requests
	req.Current[corev1.ResourceMemory] = resource.MustParse("1Gi")
	req.Target[corev1.ResourceCPU] = resource.MustParse("9")
	delete(req.UncappedTarget, corev1.ResourceCPU)

	if diff := cmp.Diff(pristine, orig); diff != "" {
		t.Errorf("mutating the copy changed the original (-before +after):\n%s", diff)
	}

	list := &ResourceRecommendList{Items: []ResourceRecommend{*pristine}}
	listCopy, ok := list.DeepCopyObject().(*ResourceRecommendList)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T, want *ResourceRecommendList", list.DeepCopyObject())
	}
	listCopy.Items[0].Spec.ResourcePolicy.ContainerPolicies[0].ContainerName = "changed"
	if got := list.Items[0].Spec.ResourcePolicy.ContainerPolicies[0].ContainerName; got != "app" {
		t.Errorf("mutating the list copy changed the original: containerName = %q", got)
	}
}

func TestDeepCopyNil(t *testing.T) {
	var rec *ResourceRecommend
	if rec.DeepCopy() != nil {
		t.Error("DeepCopy of nil ResourceRecommend is not nil")
	}
	if rec.DeepCopyObject() != nil {
		t.Error("DeepCopyObject of nil ResourceRecommend is not nil")
	}
	var list *ResourceRecommendList
	if list.DeepCopyObject() != nil {
		t.Error("DeepCopyObject of nil ResourceRecommendList is not nil")
	}

	// nil slices and maps stay nil rather than becoming empty.
	empty := &ResourceRecommend{}
	if diff := cmp.Diff(empty, empty.DeepCopy()); diff != "" {
		t.Errorf("copy of empty object differs (-orig +copy):\n%s", diff)
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	for kind, obj := range map[string]runtime.Object{
		Kind:                    &ResourceRecommend{},
		"ResourceRecommendList": &ResourceRecommendList{},
	} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Errorf("ObjectKinds(%T): %v", obj, err)
			continue
		}
		if want := SchemeGroupVersion.WithKind(kind); len(gvks) != 1 || gvks[0] != want {
			t.Errorf("ObjectKinds(%T) = %v, want [%v]", obj, gvks, want)
		}
	}
	// metav1.AddToGroupVersion registers the common option types too.
	if !s.Recognizes(SchemeGroupVersion.WithKind("ListOptions")) {
		t.Error("scheme does not recognize ListOptions in the group version")
	}

	want := "recommendation.katalyst.kubewharf.io/v1alpha1, Resource=resourcerecommends"
	if got := GroupVersionResource().String(); got != want {
		t.Errorf("GroupVersionResource() = %q, want %q", got, want)
	}
}
