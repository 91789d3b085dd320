package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// The functions below are written by hand in the shape deepcopy-gen would
// produce: nil pointers, slices and maps stay nil, everything else is copied
// so that the copy shares no memory with the original.

var (
	_ runtime.Object = (*ResourceRecommend)(nil)
	_ runtime.Object = (*ResourceRecommendList)(nil)
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourceRecommend) DeepCopyInto(out *ResourceRecommend) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourceRecommend) DeepCopy() *ResourceRecommend {
	if in == nil {
		return nil
	}
	out := new(ResourceRecommend)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a deep copy of the receiver as a runtime.Object.
func (in *ResourceRecommend) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourceRecommendList) DeepCopyInto(out *ResourceRecommendList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		in, out := &in.Items, &out.Items
		*out = make([]ResourceRecommend, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourceRecommendList) DeepCopy() *ResourceRecommendList {
	if in == nil {
		return nil
	}
	out := new(ResourceRecommendList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a deep copy of the receiver as a runtime.Object.
func (in *ResourceRecommendList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourceRecommendSpec) DeepCopyInto(out *ResourceRecommendSpec) {
	*out = *in
	out.TargetRef = in.TargetRef
	in.ResourcePolicy.DeepCopyInto(&out.ResourcePolicy)
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourceRecommendSpec) DeepCopy() *ResourceRecommendSpec {
	if in == nil {
		return nil
	}
	out := new(ResourceRecommendSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *CrossVersionObjectReference) DeepCopyInto(out *CrossVersionObjectReference) {
	*out = *in
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *CrossVersionObjectReference) DeepCopy() *CrossVersionObjectReference {
	if in == nil {
		return nil
	}
	out := new(CrossVersionObjectReference)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourcePolicy) DeepCopyInto(out *ResourcePolicy) {
	*out = *in
	in.AlgorithmPolicy.DeepCopyInto(&out.AlgorithmPolicy)
	if in.ContainerPolicies != nil {
		in, out := &in.ContainerPolicies, &out.ContainerPolicies
		*out = make([]ContainerResourcePolicy, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourcePolicy) DeepCopy() *ResourcePolicy {
	if in == nil {
		return nil
	}
	out := new(ResourcePolicy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *AlgorithmPolicy) DeepCopyInto(out *AlgorithmPolicy) {
	*out = *in
	if in.Extensions != nil {
		// RawExtension copies both its raw bytes and its decoded Object.
		out.Extensions = in.Extensions.DeepCopy()
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *AlgorithmPolicy) DeepCopy() *AlgorithmPolicy {
	if in == nil {
		return nil
	}
	out := new(AlgorithmPolicy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ContainerResourcePolicy) DeepCopyInto(out *ContainerResourcePolicy) {
	*out = *in
	if in.ControlledResourcesPolicies != nil {
		in, out := &in.ControlledResourcesPolicies, &out.ControlledResourcesPolicies
		*out = make([]ContainerControlledResourcesPolicy, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ContainerResourcePolicy) DeepCopy() *ContainerResourcePolicy {
	if in == nil {
		return nil
	}
	out := new(ContainerResourcePolicy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ContainerControlledResourcesPolicy) DeepCopyInto(out *ContainerControlledResourcesPolicy) {
	*out = *in
	if in.MinAllowed != nil {
		// Quantity caches its string form, so it is copied with its own
		// DeepCopy rather than by value.
		q := in.MinAllowed.DeepCopy()
		out.MinAllowed = &q
	}
	if in.MaxAllowed != nil {
		q := in.MaxAllowed.DeepCopy()
		out.MaxAllowed = &q
	}
	if in.BufferPercent != nil {
		v := *in.BufferPercent
		out.BufferPercent = &v
	}
	if in.ControlledValues != nil {
		v := *in.ControlledValues
		out.ControlledValues = &v
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ContainerControlledResourcesPolicy) DeepCopy() *ContainerControlledResourcesPolicy {
	if in == nil {
		return nil
	}
	out := new(ContainerControlledResourcesPolicy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourceRecommendStatus) DeepCopyInto(out *ResourceRecommendStatus) {
	*out = *in
	if in.LastRecommendationTime != nil {
		out.LastRecommendationTime = in.LastRecommendationTime.DeepCopy()
	}
	if in.RecommendResources != nil {
		out.RecommendResources = in.RecommendResources.DeepCopy()
	}
	if in.Conditions != nil {
		in, out := &in.Conditions, &out.Conditions
		*out = make([]ResourceRecommendCondition, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourceRecommendStatus) DeepCopy() *ResourceRecommendStatus {
	if in == nil {
		return nil
	}
	out := new(ResourceRecommendStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *RecommendResources) DeepCopyInto(out *RecommendResources) {
	*out = *in
	if in.PodRecommendations != nil {
		in, out := &in.PodRecommendations, &out.PodRecommendations
		*out = make([]PodResources, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
	if in.ContainerRecommendations != nil {
		in, out := &in.ContainerRecommendations, &out.ContainerRecommendations
		*out = make([]ContainerResources, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *RecommendResources) DeepCopy() *RecommendResources {
	if in == nil {
		return nil
	}
	out := new(RecommendResources)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *PodResources) DeepCopyInto(out *PodResources) {
	*out = *in
	if in.ContainerRecommendations != nil {
		in, out := &in.ContainerRecommendations, &out.ContainerRecommendations
		*out = make([]ContainerResources, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *PodResources) DeepCopy() *PodResources {
	if in == nil {
		return nil
	}
	out := new(PodResources)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ContainerResources) DeepCopyInto(out *ContainerResources) {
	*out = *in
	if in.Requests != nil {
		out.Requests = in.Requests.DeepCopy()
	}
	if in.Limits != nil {
		out.Limits = in.Limits.DeepCopy()
	}
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ContainerResources) DeepCopy() *ContainerResources {
	if in == nil {
		return nil
	}
	out := new(ContainerResources)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ContainerResourceList) DeepCopyInto(out *ContainerResourceList) {
	*out = *in
	// ResourceList.DeepCopy keeps nil maps nil and copies each Quantity.
	out.Current = in.Current.DeepCopy()
	out.Target = in.Target.DeepCopy()
	out.UncappedTarget = in.UncappedTarget.DeepCopy()
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ContainerResourceList) DeepCopy() *ContainerResourceList {
	if in == nil {
		return nil
	}
	out := new(ContainerResourceList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ResourceRecommendCondition) DeepCopyInto(out *ResourceRecommendCondition) {
	*out = *in
	in.LastTransitionTime.DeepCopyInto(&out.LastTransitionTime)
}

// DeepCopy returns a deep copy of the receiver, or nil if it is nil.
func (in *ResourceRecommendCondition) DeepCopy() *ResourceRecommendCondition {
	if in == nil {
		return nil
	}
	out := new(ResourceRecommendCondition)
	in.DeepCopyInto(out)
	return out
}
