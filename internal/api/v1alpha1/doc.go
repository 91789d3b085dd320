// Package v1alpha1 contains the Go types of katalyst's ResourceRecommend
// custom resource (recommendation.katalyst.kubewharf.io/v1alpha1).
//
// The types mirror kubewharf/katalyst-api field for field, with the same Go
// names and JSON tags, so that objects written by katalyst's controller and
// by recommend-job decode into the same shape. Only the types and their
// scheme registration live here; validation lives in the collect package.
//
// The kubebuilder markers on the types are katalyst's. `make generate` runs
// controller-gen on them to write zz_generated.deepcopy.go and the chart's
// CRD (charts/recommend-job/crds/resourcerecommends.yaml), which matches the
// CRD katalyst-api generates the same way.
//
// +kubebuilder:object:generate=true
// +groupName=recommendation.katalyst.kubewharf.io
package v1alpha1
