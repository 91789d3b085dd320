package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of the ResourceRecommend custom resource.
	GroupName = "recommendation.katalyst.kubewharf.io"

	// Version is the only served and stored version of the API group.
	Version = "v1alpha1"

	// Resource is the plural resource name of ResourceRecommend, as used in
	// REST paths and RBAC rules.
	Resource = "resourcerecommends"

	// Kind is the kind of a single ResourceRecommend object.
	Kind = "ResourceRecommend"
)

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// GroupVersion is an alias of SchemeGroupVersion, for callers used to the
	// controller-runtime naming.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder collects the functions that add this group's types to a
	// scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds ResourceRecommend and ResourceRecommendList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// GroupVersionResource returns the GroupVersionResource of ResourceRecommend,
// for use with the dynamic client.
func GroupVersionResource() schema.GroupVersionResource {
	return SchemeGroupVersion.WithResource(Resource)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&ResourceRecommend{},
		&ResourceRecommendList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
