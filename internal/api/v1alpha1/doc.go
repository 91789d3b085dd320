// Package v1alpha1 contains the Go types of katalyst's ResourceRecommend
// custom resource (recommendation.katalyst.kubewharf.io/v1alpha1).
//
// The types mirror kubewharf/katalyst-api field for field, with the same Go
// names and JSON tags, so that objects written by katalyst's controller and
// by recommend-job decode into the same shape. Only the types and their
// scheme registration live here; validation lives in the collect package.
//
// +groupName=recommendation.katalyst.kubewharf.io
package v1alpha1
