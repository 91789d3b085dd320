package collect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// The helpers of this file carry a val or want prefix: other test files of
// the package define their own builders.

func valPtr[T any](v T) *T { return &v }

func valQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// valSpec returns a valid spec targeting Deployment "web" with the given
// container policies.
func valSpec(policies ...v1alpha1.ContainerResourcePolicy) v1alpha1.ResourceRecommendSpec {
	return v1alpha1.ResourceRecommendSpec{
		TargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		ResourcePolicy: v1alpha1.ResourcePolicy{
			AlgorithmPolicy:   v1alpha1.AlgorithmPolicy{Recommender: DefaultRecommender, Algorithm: v1alpha1.AlgorithmPercentile},
			ContainerPolicies: policies,
		},
	}
}

// valWith returns spec after applying fn to it.
func valWith(spec v1alpha1.ResourceRecommendSpec, fn func(*v1alpha1.ResourceRecommendSpec)) v1alpha1.ResourceRecommendSpec {
	fn(&spec)
	return spec
}

// valContainer returns the policy of container name.
func valContainer(name string, resources ...v1alpha1.ContainerControlledResourcesPolicy) v1alpha1.ContainerResourcePolicy {
	return v1alpha1.ContainerResourcePolicy{ContainerName: name, ControlledResourcesPolicies: resources}
}

// valResource returns a resource policy with the given buffer (nil for none)
// and controlledValues RequestsOnly.
func valResource(name corev1.ResourceName, buffer *int32) v1alpha1.ContainerControlledResourcesPolicy {
	return v1alpha1.ContainerControlledResourcesPolicy{
		ResourceName:     name,
		BufferPercent:    buffer,
		ControlledValues: valPtr(v1alpha1.ContainerControlledValuesRequestsOnly),
	}
}

// valWithValues returns p with controlledValues v.
func valWithValues(p v1alpha1.ContainerControlledResourcesPolicy, v *v1alpha1.ContainerControlledValues) v1alpha1.ContainerControlledResourcesPolicy {
	p.ControlledValues = v
	return p
}

// wantResource is a validated resource policy with controlledValues
// RequestsOnly and no bounds.
func wantResource(name corev1.ResourceName, buffer int32) ResourcePolicy {
	return ResourcePolicy{Resource: name, BufferPercent: buffer, ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly}
}

// wantCPUMem is a validated cpu and memory policy.
func wantCPUMem(cpuBuffer, memBuffer int32) []ResourcePolicy {
	return []ResourcePolicy{wantResource(corev1.ResourceCPU, cpuBuffer), wantResource(corev1.ResourceMemory, memBuffer)}
}

// valCPUMem returns a cpu and memory policy for container name.
func valCPUMem(name string, cpuBuffer, memBuffer int32) v1alpha1.ContainerResourcePolicy {
	return valContainer(name, valResource(corev1.ResourceCPU, valPtr(cpuBuffer)), valResource(corev1.ResourceMemory, valPtr(memBuffer)))
}

func TestValidate(t *testing.T) {
	valid := valSpec(valCPUMem("c1", 10, 10))
	defaultContainers := []string{"c1", "c2", "c3"}

	tests := []struct {
		name string
		spec v1alpha1.ResourceRecommendSpec
		// containers and lookupErr are what the lookup returns;
		// containers defaults to c1, c2, c3.
		containers []string
		lookupErr  error
		// noLookup says the lookup must not be called.
		noLookup bool
		want     []ContainerPolicy
		wantErr  *ValidationError
	}{
		// 2.1 targetRef.
		{
			name:     "empty target name",
			spec:     valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.Name = "" }),
			noLookup: true,
			wantErr:  &ValidationError{Code: "WorkloadNameIsEmpty", Message: "spec.targetRef.name cannot be empty"},
		},
		{
			// Katalyst rejects every kind but Deployment; here the lookup
			// decides.
			name: "any kind goes to the lookup",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.Kind = "ReplicaSet" }),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(10, 10)}},
		},
		{
			name:      "a kind without a pod template",
			spec:      valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.Kind = "ConfigMap" }),
			lookupErr: fmt.Errorf("ConfigMap shop/x: %w", ErrKindUnsupported),
			wantErr: &ValidationError{Code: "WorkloadsUnsupported",
				Message: "spec.targetRef.kind ConfigMap is currently unsupported, only support in [kinds with a pod template]"},
		},
		{
			name:     "empty kind",
			spec:     valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.Kind = "" }),
			noLookup: true,
			wantErr: &ValidationError{Code: "WorkloadsUnsupported",
				Message: "spec.targetRef.kind  is currently unsupported, only support in [kinds with a pod template]"},
		},
		{
			name: "empty apiVersion is left to the lookup",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.APIVersion = "" }),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(10, 10)}},
		},

		// 2.2 algorithm.
		{
			name: "unsupported algorithm",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) {
				s.ResourcePolicy.AlgorithmPolicy.Algorithm = "mockAlgorithm"
			}),
			noLookup: true,
			wantErr: &ValidationError{Code: "AlgorithmUnsupported",
				Message: "spec.resourcePolicy.algorithmPolicy.algorithm mockAlgorithm is currently unsupported, only support in [percentile]"},
		},
		{
			name: "algorithm is case-sensitive",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) {
				s.ResourcePolicy.AlgorithmPolicy.Algorithm = "Percentile"
			}),
			noLookup: true,
			wantErr: &ValidationError{Code: "AlgorithmUnsupported",
				Message: "spec.resourcePolicy.algorithmPolicy.algorithm Percentile is currently unsupported, only support in [percentile]"},
		},
		{
			name: "empty algorithm defaults to percentile",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) {
				s.ResourcePolicy.AlgorithmPolicy = v1alpha1.AlgorithmPolicy{}
			}),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(10, 10)}},
		},
		{
			name: "recommender and extensions are not checked",
			spec: valWith(valid, func(s *v1alpha1.ResourceRecommendSpec) {
				s.ResourcePolicy.AlgorithmPolicy.Recommender = "custom"
				s.ResourcePolicy.AlgorithmPolicy.Extensions = nil
			}),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(10, 10)}},
		},

		// 2.3 containerPolicies and the workload lookup.
		{
			name:     "no container policies",
			spec:     valSpec(),
			noLookup: true,
			wantErr:  &ValidationError{Code: "ContainerPoliciesNotFound", Message: "spec.containerPolicies cannot be empty"},
		},
		{
			name:      "workload not found",
			spec:      valid,
			lookupErr: ErrWorkloadNotFound,
			wantErr:   &ValidationError{Code: "WorkloadNotFound", Message: "workload not found"},
		},
		{
			name:      "wrapped workload not found",
			spec:      valid,
			lookupErr: fmt.Errorf("Deployment default/web: %w", ErrWorkloadNotFound),
			wantErr:   &ValidationError{Code: "WorkloadNotFound", Message: "workload not found"},
		},
		{
			name:      "no pod template",
			spec:      valid,
			lookupErr: fmt.Errorf("Deployment default/web: %w", ErrNoPodTemplate),
			wantErr:   &ValidationError{Code: "ContainersMatchErrorCode", Message: "containers matched err"},
		},
		{
			name:      "any other lookup error",
			spec:      valid,
			lookupErr: errors.New("no matches for kind \"Deployment\" in version \"\""),
			wantErr:   &ValidationError{Code: "WorkloadMatchError", Message: "workload matched err"},
		},

		// 2.4 pass 1, in spec order.
		{
			name:    "duplicate container",
			spec:    valSpec(valCPUMem("c1", 10, 10), valCPUMem("c1", 20, 20)),
			wantErr: &ValidationError{Code: "ContainerDuplicate", Message: "container name c1 is duplicate"},
		},
		{
			name:    "duplicate wildcard",
			spec:    valSpec(valCPUMem("*", 10, 10), valCPUMem("*", 20, 20)),
			wantErr: &ValidationError{Code: "ContainerDuplicate", Message: "container name * is duplicate"},
		},
		{
			name:    "empty container name",
			spec:    valSpec(valCPUMem("", 10, 10)),
			wantErr: &ValidationError{Code: "ContainerNameEmpty", Message: "empty container name"},
		},
		{
			name:    "two empty container names report the empty name, not the duplicate",
			spec:    valSpec(valCPUMem("", 10, 10), valCPUMem("", 10, 10)),
			wantErr: &ValidationError{Code: "ContainerNameEmpty", Message: "empty container name"},
		},
		{
			name:    "container not in the workload",
			spec:    valSpec(valCPUMem("c9", 10, 10)),
			wantErr: &ValidationError{Code: "ContainersNotFound", Message: "container c9 is not found"},
		},
		{
			name:       "container names are case-sensitive",
			spec:       valSpec(valCPUMem("App", 10, 10)),
			containers: []string{"app"},
			wantErr:    &ValidationError{Code: "ContainersNotFound", Message: "container App is not found"},
		},
		{
			name:       "init containers are not containers",
			spec:       valSpec(valCPUMem("init", 10, 10)),
			containers: []string{"app"}, // the lookup leaves init containers out
			wantErr:    &ValidationError{Code: "ContainersNotFound", Message: "container init is not found"},
		},
		{
			name:    "empty resource policies",
			spec:    valSpec(valContainer("c1")),
			wantErr: &ValidationError{Code: "ControlledResourcesPoliciesEmpty", Message: "container(c1) Resources Policies is empty"},
		},
		{
			name: "empty resource policies on the wildcard",
			spec: valSpec(v1alpha1.ContainerResourcePolicy{
				ContainerName:               "*",
				ControlledResourcesPolicies: []v1alpha1.ContainerControlledResourcesPolicy{},
			}),
			wantErr: &ValidationError{Code: "ControlledResourcesPoliciesEmpty", Message: "container(*) Resources Policies is empty"},
		},
		{
			name:    "not found is checked before empty resource policies",
			spec:    valSpec(valContainer("c9")),
			wantErr: &ValidationError{Code: "ContainersNotFound", Message: "container c9 is not found"},
		},
		{
			name:    "pass 1 follows spec order",
			spec:    valSpec(valContainer("c2"), valCPUMem("c9", 10, 10)),
			wantErr: &ValidationError{Code: "ControlledResourcesPoliciesEmpty", Message: "container(c2) Resources Policies is empty"},
		},
		{
			name: "pass 1 errors win over pass 2 errors of earlier containers",
			spec: valSpec(
				valContainer("c1", valResource("gpu", nil)),
				valCPUMem("c9", 10, 10),
			),
			wantErr: &ValidationError{Code: "ContainersNotFound", Message: "container c9 is not found"},
		},

		// 2.4 pass 2, per resource.
		{
			name: "unsupported resource",
			spec: valSpec(valContainer("c1", valResource("gpu", nil))),
			wantErr: &ValidationError{Code: "ResourceNameUnsupported",
				Message: "unsupported ResourceName, current supported values: [cpu memory]"},
		},
		{
			name: "resource names are case-sensitive",
			spec: valSpec(valContainer("c1", valResource("CPU", nil))),
			wantErr: &ValidationError{Code: "ResourceNameUnsupported",
				Message: "unsupported ResourceName, current supported values: [cpu memory]"},
		},
		{
			// Katalyst accepts only RequestsOnly.
			name: "RequestsAndLimits",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceCPU, nil), valPtr(v1alpha1.ContainerControlledValuesRequestsAndLimits)))),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{{
				Resource: corev1.ResourceCPU, BufferPercent: 30, ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits}}}},
		},
		{
			name: "LimitsOnly",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceMemory, nil), valPtr(v1alpha1.ContainerControlledValuesLimitsOnly)))),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{{
				Resource: corev1.ResourceMemory, BufferPercent: 30, ControlledValues: v1alpha1.ContainerControlledValuesLimitsOnly}}}},
		},
		{
			// Katalyst formats this with its ResourceName template by
			// mistake; the template it meant lists the values.
			name: "empty controlledValues string is not nil",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceCPU, nil), valPtr(v1alpha1.ContainerControlledValues(""))))),
			wantErr: &ValidationError{Code: "ControlledValuesUnsupported",
				Message: "unsupported ControlledValues, current supported values: [RequestsOnly RequestsAndLimits LimitsOnly]"},
		},
		{
			name: "controlledValues is case-sensitive",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceCPU, nil), valPtr(v1alpha1.ContainerControlledValues("requestsonly"))))),
			wantErr: &ValidationError{Code: "ControlledValuesUnsupported",
				Message: "unsupported ControlledValues, current supported values: [RequestsOnly RequestsAndLimits LimitsOnly]"},
		},
		{
			name: "bufferPercent -1",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](-1)))),
			wantErr: &ValidationError{Code: "ResourceBuffersUnsupported",
				Message: "resource buffers should be in the range from 0 to 100"},
		},
		{
			name: "bufferPercent 101",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceMemory, valPtr[int32](101)))),
			wantErr: &ValidationError{Code: "ResourceBuffersUnsupported",
				Message: "resource buffers should be in the range from 0 to 100"},
		},
		{
			name: "bufferPercent 0",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](0)))),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{wantResource(corev1.ResourceCPU, 0)}}},
		},
		{
			name: "bufferPercent 100",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](100)))),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{wantResource(corev1.ResourceCPU, 100)}}},
		},
		{
			name: "resource name is checked before controlledValues",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource("gpu", nil), valPtr(v1alpha1.ContainerControlledValuesLimitsOnly)))),
			wantErr: &ValidationError{Code: "ResourceNameUnsupported",
				Message: "unsupported ResourceName, current supported values: [cpu memory]"},
		},
		{
			name: "controlledValues is checked before bufferPercent",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceCPU, valPtr[int32](101)), valPtr(v1alpha1.ContainerControlledValues("All"))))),
			wantErr: &ValidationError{Code: "ControlledValuesUnsupported",
				Message: "unsupported ControlledValues, current supported values: [RequestsOnly RequestsAndLimits LimitsOnly]"},
		},
		{
			name: "resources are checked in spec order",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](101)), valResource("gpu", nil))),
			wantErr: &ValidationError{Code: "ResourceBuffersUnsupported",
				Message: "resource buffers should be in the range from 0 to 100"},
		},
		{
			name: "containers are checked in name order, not spec order",
			spec: valSpec(
				valContainer("c2", valResource("gpu", nil)),
				valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](101))),
			),
			wantErr: &ValidationError{Code: "ResourceBuffersUnsupported",
				Message: "resource buffers should be in the range from 0 to 100"},
		},
		{
			name: "wildcard errors surface under the first expanded container",
			spec: valSpec(valCPUMem("c1", 10, 10), valContainer("*", valResource("gpu", nil))),
			wantErr: &ValidationError{Code: "ResourceNameUnsupported",
				Message: "unsupported ResourceName, current supported values: [cpu memory]"},
		},
		{
			name: "invalid wildcard shadowed by explicit policies everywhere",
			spec: valSpec(
				valContainer("*", valResource("gpu", nil)),
				valCPUMem("c1", 10, 10),
			),
			containers: []string{"c1"},
			want:       []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(10, 10)}},
		},

		// Successful results.
		{
			// katalyst-core validate_test.go "Container name list includes *".
			name: "wildcard with an explicit override",
			spec: valSpec(valCPUMem("*", 20, 20), valCPUMem("c1", 10, 10)),
			want: []ContainerPolicy{
				{ContainerName: "c1", Resources: wantCPUMem(10, 10)},
				{ContainerName: "c2", Resources: wantCPUMem(20, 20)},
				{ContainerName: "c3", Resources: wantCPUMem(20, 20)},
			},
		},
		{
			name: "an override replaces the whole wildcard policy",
			spec: valSpec(valCPUMem("*", 20, 20), valContainer("c2", valResource(corev1.ResourceCPU, valPtr[int32](5)))),
			want: []ContainerPolicy{
				{ContainerName: "c1", Resources: wantCPUMem(20, 20)},
				{ContainerName: "c2", Resources: []ResourcePolicy{wantResource(corev1.ResourceCPU, 5)}},
				{ContainerName: "c3", Resources: wantCPUMem(20, 20)},
			},
		},
		{
			name:       "wildcard over a workload without containers",
			spec:       valSpec(valCPUMem("*", 20, 20)),
			containers: []string{},
			want:       []ContainerPolicy{},
		},
		{
			name: "defaults: bufferPercent 30, controlledValues RequestsOnly",
			spec: valSpec(valContainer("c1",
				valWithValues(valResource(corev1.ResourceCPU, nil), nil),
				valWithValues(valResource(corev1.ResourceMemory, nil), nil),
			)),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: wantCPUMem(30, 30)}},
		},
		{
			name: "minAllowed and maxAllowed pass through",
			spec: valSpec(valContainer("c1", v1alpha1.ContainerControlledResourcesPolicy{
				ResourceName: corev1.ResourceMemory,
				MinAllowed:   valQty("500Mi"),
				MaxAllowed:   valQty("2Gi"),
			})),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{{
				Resource:         corev1.ResourceMemory,
				BufferPercent:    30,
				MinAllowed:       valQty("500Mi"),
				MaxAllowed:       valQty("2Gi"),
				ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly,
			}}}},
		},
		{
			// 1Gi = 1024Mi, so min == max in another spelling is allowed.
			name: "minAllowed equal to maxAllowed",
			spec: valSpec(valContainer("c1", v1alpha1.ContainerControlledResourcesPolicy{
				ResourceName: corev1.ResourceMemory, MinAllowed: valQty("1Gi"), MaxAllowed: valQty("1024Mi"),
			})),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{{
				Resource: corev1.ResourceMemory, BufferPercent: 30, MinAllowed: valQty("1Gi"), MaxAllowed: valQty("1024Mi"),
				ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly,
			}}}},
		},
		{
			// Katalyst ignores both bounds; 2Gi > 500Mi.
			name: "minAllowed above maxAllowed",
			spec: valSpec(valContainer("c1", v1alpha1.ContainerControlledResourcesPolicy{
				ResourceName: corev1.ResourceMemory, MinAllowed: valQty("2Gi"), MaxAllowed: valQty("500Mi"),
			})),
			wantErr: &ValidationError{Code: "ResourceBoundsInvalid",
				Message: "container(c1) memory minAllowed 2Gi is greater than maxAllowed 500Mi"},
		},
		{
			// 1500m > 1, across the units.
			name: "cpu minAllowed above maxAllowed in other units",
			spec: valSpec(valContainer("*", v1alpha1.ContainerControlledResourcesPolicy{
				ResourceName: corev1.ResourceCPU, MinAllowed: valQty("1500m"), MaxAllowed: valQty("1"),
			})),
			wantErr: &ValidationError{Code: "ResourceBoundsInvalid",
				Message: "container(c1) cpu minAllowed 1500m is greater than maxAllowed 1"},
		},
		{
			name: "negative maxAllowed",
			spec: valSpec(valContainer("c1", v1alpha1.ContainerControlledResourcesPolicy{
				ResourceName: corev1.ResourceCPU, MaxAllowed: valQty("-1"),
			})),
			wantErr: &ValidationError{Code: "ResourceBoundsInvalid",
				Message: "container(c1) cpu maxAllowed -1 must not be negative"},
		},
		{
			name: "a resource listed twice yields two entries",
			spec: valSpec(valContainer("c1", valResource(corev1.ResourceCPU, valPtr[int32](10)), valResource(corev1.ResourceCPU, valPtr[int32](20)))),
			want: []ContainerPolicy{{ContainerName: "c1", Resources: []ResourcePolicy{
				wantResource(corev1.ResourceCPU, 10),
				wantResource(corev1.ResourceCPU, 20),
			}}},
		},
		{
			name: "only listed containers without a wildcard, sorted by name",
			spec: valSpec(valCPUMem("c3", 1, 2), valCPUMem("c1", 3, 4)),
			want: []ContainerPolicy{
				{ContainerName: "c1", Resources: wantCPUMem(3, 4)},
				{ContainerName: "c3", Resources: wantCPUMem(1, 2)},
			},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			containers := tt.containers
			if containers == nil {
				containers = defaultContainers
			}
			calls := 0
			lookup := func() ([]string, error) {
				calls++
				if tt.lookupErr != nil {
					return nil, tt.lookupErr
				}
				return containers, nil
			}

			got, err := Validate(tt.spec, lookup)

			if diff := cmp.Diff(tt.wantErr, err); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policies mismatch (-want +got):\n%s", diff)
			}
			wantCalls := 1
			if tt.noLookup {
				wantCalls = 0
			}
			if calls != wantCalls {
				t.Errorf("lookup called %d times, want %d", calls, wantCalls)
			}
		})
	}
}

func TestValidateOrder(t *testing.T) {
	// Every check fails; each row fixes the earlier ones in turn, so each
	// row's error is the first check still failing.
	bad := v1alpha1.ResourceRecommendSpec{
		TargetRef: v1alpha1.CrossVersionObjectReference{},
		ResourcePolicy: v1alpha1.ResourcePolicy{
			AlgorithmPolicy: v1alpha1.AlgorithmPolicy{Algorithm: "mockAlgorithm"},
		},
	}
	tests := []struct {
		name     string
		fix      func(*v1alpha1.ResourceRecommendSpec)
		lookup   error
		wantCode string
		wantCall bool
	}{
		{
			name:     "name before kind and algorithm",
			fix:      func(*v1alpha1.ResourceRecommendSpec) {},
			wantCode: CodeWorkloadNameIsEmpty,
		},
		{
			name:     "kind before algorithm",
			fix:      func(s *v1alpha1.ResourceRecommendSpec) { s.TargetRef.Name = "web" },
			wantCode: CodeWorkloadsUnsupported,
		},
		{
			name: "algorithm before extensions",
			fix: func(s *v1alpha1.ResourceRecommendSpec) {
				s.TargetRef.Name, s.TargetRef.Kind = "web", "Deployment"
				s.ResourcePolicy.AlgorithmPolicy.Extensions = &runtime.RawExtension{Raw: []byte(`{"percentile": 2}`)}
			},
			wantCode: CodeAlgorithmUnsupported,
		},
		{
			name: "extensions before container policies",
			fix: func(s *v1alpha1.ResourceRecommendSpec) {
				s.TargetRef.Name, s.TargetRef.Kind = "web", "Deployment"
				s.ResourcePolicy.AlgorithmPolicy.Algorithm = ""
				s.ResourcePolicy.AlgorithmPolicy.Extensions = &runtime.RawExtension{Raw: []byte(`{"percentile": 2}`)}
			},
			wantCode: CodeExtensionsInvalid,
		},
		{
			name: "algorithm before container policies",
			fix: func(s *v1alpha1.ResourceRecommendSpec) {
				s.TargetRef.Name, s.TargetRef.Kind = "web", "Deployment"
			},
			wantCode: CodeAlgorithmUnsupported,
		},
		{
			name: "container policies before the lookup",
			fix: func(s *v1alpha1.ResourceRecommendSpec) {
				s.TargetRef.Name, s.TargetRef.Kind = "web", "Deployment"
				s.ResourcePolicy.AlgorithmPolicy.Algorithm = ""
			},
			lookup:   ErrWorkloadNotFound,
			wantCode: CodeContainerPoliciesNotFound,
		},
		{
			name: "lookup before the container checks",
			fix: func(s *v1alpha1.ResourceRecommendSpec) {
				s.TargetRef.Name, s.TargetRef.Kind = "web", "Deployment"
				s.ResourcePolicy.AlgorithmPolicy.Algorithm = ""
				s.ResourcePolicy.ContainerPolicies = []v1alpha1.ContainerResourcePolicy{valContainer("")}
			},
			lookup:   ErrWorkloadNotFound,
			wantCode: CodeWorkloadNotFound,
			wantCall: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := *bad.DeepCopy()
			tt.fix(&spec)
			called := false
			_, err := Validate(spec, func() ([]string, error) {
				called = true
				return []string{"c1"}, tt.lookup
			})
			if err == nil || err.Code != tt.wantCode {
				t.Errorf("Validate() error = %v, want code %s", err, tt.wantCode)
			}
			if called != tt.wantCall {
				t.Errorf("lookup called = %t, want %t", called, tt.wantCall)
			}
		})
	}
}

func TestValidateDeterministic(t *testing.T) {
	// Several containers fail in pass 2; katalyst's map order would pick any
	// of them. The first in name order must win every time.
	spec := valSpec(
		valContainer("e", valResource("gpu", nil)),
		valContainer("d", valWithValues(valResource(corev1.ResourceCPU, nil), valPtr(v1alpha1.ContainerControlledValuesLimitsOnly))),
		valContainer("c", valResource("gpu", nil)),
		valContainer("b", valResource(corev1.ResourceCPU, valPtr[int32](101))),
		valContainer("*", valResource("gpu", nil)),
	)
	lookup := func() ([]string, error) { return []string{"a", "b", "c", "d", "e"}, nil }
	want := &ValidationError{Code: CodeResourceNameUnsupported, Message: "unsupported ResourceName, current supported values: [cpu memory]"}
	for range 50 {
		if _, err := Validate(spec, lookup); !cmp.Equal(want, err) {
			t.Fatalf("Validate() error = %+v, want %+v", err, want)
		}
	}

	spec.ResourcePolicy.ContainerPolicies = spec.ResourcePolicy.ContainerPolicies[:4]
	want = &ValidationError{Code: CodeResourceBuffersUnsupported, Message: "resource buffers should be in the range from 0 to 100"}
	for range 50 {
		if _, err := Validate(spec, lookup); !cmp.Equal(want, err) {
			t.Fatalf("Validate() error = %+v, want %+v", err, want)
		}
	}
}

func TestValidateDoesNotAliasSpec(t *testing.T) {
	spec := valSpec(valContainer("*", v1alpha1.ContainerControlledResourcesPolicy{
		ResourceName: corev1.ResourceCPU,
		MinAllowed:   valQty("100m"),
		MaxAllowed:   valQty("2"),
	}))
	pristine := spec.DeepCopy()

	got, err := Validate(spec, func() ([]string, error) { return []string{"a", "b"}, nil })
	if err != nil {
		t.Fatalf("Validate() error = %v", err)
	}
	got[0].Resources[0].MinAllowed.Add(resource.MustParse("1"))
	got[0].Resources[0].MaxAllowed.Add(resource.MustParse("1"))

	if diff := cmp.Diff(pristine, &spec); diff != "" {
		t.Errorf("mutating the result changed the spec (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(valQty("100m"), got[1].Resources[0].MinAllowed); diff != "" {
		t.Errorf("containers expanded from the wildcard share quantities (-want +got):\n%s", diff)
	}
}

func TestValidationError(t *testing.T) {
	var err error = &ValidationError{Code: CodeContainerNameEmpty, Message: "empty container name"}
	if got := err.Error(); got != "empty container name" {
		t.Errorf("Error() = %q, want the message", got)
	}
	var ve *ValidationError
	if !errors.As(fmt.Errorf("validating: %w", err), &ve) || ve.Code != CodeContainerNameEmpty {
		t.Errorf("errors.As did not recover the ValidationError")
	}
}

func TestCodes(t *testing.T) {
	// The codes are katalyst's strings; they appear in users' conditions.
	want := map[string]string{
		"WorkloadNameIsEmpty":              CodeWorkloadNameIsEmpty,
		"WorkloadsUnsupported":             CodeWorkloadsUnsupported,
		"AlgorithmUnsupported":             CodeAlgorithmUnsupported,
		"ContainerPoliciesNotFound":        CodeContainerPoliciesNotFound,
		"WorkloadNotFound":                 CodeWorkloadNotFound,
		"WorkloadMatchError":               CodeWorkloadMatchError,
		"ContainersMatchErrorCode":         CodeContainersMatchError,
		"ContainerDuplicate":               CodeContainerDuplicate,
		"ContainerNameEmpty":               CodeContainerNameEmpty,
		"ContainersNotFound":               CodeContainersNotFound,
		"ControlledResourcesPoliciesEmpty": CodeControlledResourcesPoliciesEmpty,
		"ResourceNameUnsupported":          CodeResourceNameUnsupported,
		"ControlledValuesUnsupported":      CodeControlledValuesUnsupported,
		"ResourceBuffersUnsupported":       CodeResourceBuffersUnsupported,
	}
	for s, c := range want {
		if s != c {
			t.Errorf("code %q = %q", s, c)
		}
	}
}

func TestIsDefaultRecommender(t *testing.T) {
	tests := []struct {
		recommender string
		want        bool
	}{
		{"", true},
		{"default", true},
		{"Default", false},
		{"custom", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.recommender), func(t *testing.T) {
			spec := valSpec()
			spec.ResourcePolicy.AlgorithmPolicy.Recommender = tt.recommender
			if got := IsDefaultRecommender(spec); got != tt.want {
				t.Errorf("IsDefaultRecommender() = %t, want %t", got, tt.want)
			}
		})
	}
}
