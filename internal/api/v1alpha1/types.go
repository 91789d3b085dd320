package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rec

// ResourceRecommend asks for resource recommendations for the containers of
// one workload.
type ResourceRecommend struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the workload and the policy to recommend resources for.
	Spec ResourceRecommendSpec `json:"spec"`

	// Status is the last recommendation and the conditions that led to it.
	// +optional
	Status ResourceRecommendStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ResourceRecommendList is a list of ResourceRecommend objects.
type ResourceRecommendList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ResourceRecommend objects.
	Items []ResourceRecommend `json:"items"`
}

// ResourceRecommendSpec is the desired state of a ResourceRecommend.
type ResourceRecommendSpec struct {
	// TargetRef points to the workload whose pods are recommended for,
	// e.g. a Deployment.
	TargetRef CrossVersionObjectReference `json:"targetRef"`

	// ResourcePolicy controls how the recommended resources are computed.
	ResourcePolicy ResourcePolicy `json:"resourcePolicy"`
}

// CrossVersionObjectReference identifies the target workload in the
// namespace of the ResourceRecommend.
// +structType=atomic
type CrossVersionObjectReference struct {
	// Kind is the kind of the referent.
	Kind string `json:"kind"`

	// Name is the name of the referent.
	Name string `json:"name"`

	// APIVersion is the API version of the referent. The schema does not
	// require it, but katalyst cannot resolve the target without it.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// ResourcePolicy controls how the recommender computes recommended resources.
type ResourcePolicy struct {
	// AlgorithmPolicy selects the recommender and its algorithm. It may be
	// empty, in which case the defaults apply.
	AlgorithmPolicy AlgorithmPolicy `json:"algorithmPolicy"`

	// ContainerPolicies are the per-container policies.
	// +patchMergeKey=containerName
	// +patchStrategy=merge
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies" patchStrategy:"merge" patchMergeKey:"containerName"`
}

// AlgorithmPolicy selects the recommender and the algorithm it uses.
type AlgorithmPolicy struct {
	// Recommender names the recommender that handles the object. Katalyst's
	// built-in recommender handles "" and "default" and ignores the rest, so
	// that users can plug in their own.
	// +kubebuilder:default=default
	// +optional
	Recommender string `json:"recommender,omitempty"`

	// Algorithm is the recommendation algorithm, "percentile" by default.
	// +kubebuilder:default=percentile
	// +optional
	Algorithm Algorithm `json:"algorithm,omitempty"`

	// Extensions is free-form algorithm configuration. Katalyst accepts and
	// copies it but does not use it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Extensions *runtime.RawExtension `json:"extensions,omitempty"`
}

// Algorithm is the name of a recommendation algorithm.
type Algorithm string

const (
	// AlgorithmPercentile recommends a percentile of a decaying usage
	// histogram.
	AlgorithmPercentile Algorithm = "percentile"
)

// ContainerResourcePolicy is the policy for one container, or for every
// container of the workload when ContainerName is the wildcard "*".
type ContainerResourcePolicy struct {
	// ContainerName is the name of the container, or "*" for all containers
	// that have no policy of their own.
	ContainerName string `json:"containerName"`

	// ControlledResourcesPolicies lists the resources recommended for the
	// container, one entry per resource.
	// +patchStrategy=merge
	ControlledResourcesPolicies []ContainerControlledResourcesPolicy `json:"controlledResourcesPolicies" patchStrategy:"merge"`
}

// ContainerControlledResourcesPolicy is the policy for one resource of a
// container.
type ContainerControlledResourcesPolicy struct {
	// ResourceName is the controlled resource, e.g. cpu or memory.
	ResourceName corev1.ResourceName `json:"resourceName"`

	// MinAllowed is the smallest amount that will be recommended. The
	// default is no minimum.
	// +optional
	MinAllowed *resource.Quantity `json:"minAllowed,omitempty"`

	// MaxAllowed is the largest amount that will be recommended. The default
	// is no maximum.
	// +optional
	MaxAllowed *resource.Quantity `json:"maxAllowed,omitempty"`

	// BufferPercent is the extra headroom, in percent, added on top of the
	// observed usage.
	// +optional
	BufferPercent *int32 `json:"bufferPercent,omitempty"`

	// ControlledValues says which of requests and limits are controlled.
	// Defaults to RequestsOnly.
	// +optional
	ControlledValues *ContainerControlledValues `json:"controlledValues,omitempty"`
}

// ContainerControlledValues says which resource values of a container are
// controlled.
type ContainerControlledValues string

const (
	// ContainerControlledValuesRequestsAndLimits controls both requests and
	// limits.
	ContainerControlledValuesRequestsAndLimits ContainerControlledValues = "RequestsAndLimits"

	// ContainerControlledValuesRequestsOnly controls requests only.
	ContainerControlledValuesRequestsOnly ContainerControlledValues = "RequestsOnly"

	// ContainerControlledValuesLimitsOnly controls limits only.
	ContainerControlledValuesLimitsOnly ContainerControlledValues = "LimitsOnly"
)

// ResourceRecommendStatus is the observed state of a ResourceRecommend.
type ResourceRecommendStatus struct {
	// LastRecommendationTime is when the last recommendation was made.
	// +optional
	LastRecommendationTime *metav1.Time `json:"lastRecommendationTime,omitempty"`

	// RecommendResources is the last recommendation.
	// +optional
	RecommendResources *RecommendResources `json:"recommendResources,omitempty"`

	// Conditions report whether the object was validated, whether the data
	// processing was initialized and whether a recommendation was provided.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []ResourceRecommendCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the generation of the spec the status was
	// computed from. It is always serialized, even when zero.
	ObservedGeneration int64 `json:"observedGeneration"`
}

// RecommendResources is a recommendation, per pod or per container.
type RecommendResources struct {
	// PodRecommendations are per-pod recommendations. Katalyst never fills
	// them.
	// +optional
	// +patchMergeKey=podName
	// +patchStrategy=merge
	PodRecommendations []PodResources `json:"podRecommendations,omitempty" patchStrategy:"merge" patchMergeKey:"podName"`

	// ContainerRecommendations are the per-container recommendations.
	// +optional
	// +patchMergeKey=containerName
	// +patchStrategy=merge
	ContainerRecommendations []ContainerResources `json:"containerRecommendations,omitempty" patchStrategy:"merge" patchMergeKey:"containerName"`
}

// PodResources is the recommendation for the containers of one pod.
type PodResources struct {
	// PodName is the name of the pod.
	PodName string `json:"podName"`

	// ContainerRecommendations are the recommendations for the pod's
	// containers.
	// +optional
	ContainerRecommendations []ContainerResources `json:"containerRecommendations,omitempty"`
}

// ContainerResources is the recommendation for one container.
type ContainerResources struct {
	// ContainerName is the name of the container.
	ContainerName string `json:"containerName"`

	// Requests is the recommendation for the container's requests.
	// +optional
	Requests *ContainerResourceList `json:"requests,omitempty"`

	// Limits is the recommendation for the container's limits. Katalyst
	// never fills it.
	// +optional
	Limits *ContainerResourceList `json:"limits,omitempty"`
}

// ContainerResourceList holds the current, recommended and uncapped amounts
// of a container's resources.
type ContainerResourceList struct {
	// Current is the configuration in effect, as seen by the container
	// runtime.
	// +optional
	Current corev1.ResourceList `json:"current,omitempty"`

	// Target is the recommended amount, with the container policy applied.
	Target corev1.ResourceList `json:"target"`

	// UncappedTarget is the amount derived from usage alone, without the
	// container policy (such as the buffer) applied.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}

// ResourceRecommendCondition is the state of one aspect of a
// ResourceRecommend at a point in time.
type ResourceRecommendCondition struct {
	// Type is the type of the condition.
	Type ResourceRecommendConditionType `json:"type"`

	// Status is the status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`

	// LastTransitionTime is when the condition last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a machine-readable code for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable explanation of the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceRecommendConditionType is the type of a ResourceRecommendCondition.
type ResourceRecommendConditionType string

const (
	// Validated reports whether the spec passed validation.
	Validated ResourceRecommendConditionType = "Validated"

	// Initialized reports whether the data processing tasks were registered.
	Initialized ResourceRecommendConditionType = "Initialized"

	// RecommendationProvided reports whether a recommendation was made.
	RecommendationProvided ResourceRecommendConditionType = "RecommendationProvided"
)
