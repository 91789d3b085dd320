package testbed

import "fmt"

// DeployerCRDs are minimal CustomResourceDefinitions of the Argo CD and
// Flux kinds the job reads (Application, ApplicationSet, Kustomization,
// HelmRelease, GitRepository, OCIRepository), at the versions it lists:
// any spec is kept, as the job reads what their controllers would.
func DeployerCRDs() []byte {
	var out []byte
	for _, k := range []struct{ group, version, kind, plural string }{
		{"argoproj.io", "v1alpha1", "Application", "applications"},
		{"argoproj.io", "v1alpha1", "ApplicationSet", "applicationsets"},
		{"kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"},
		{"helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"},
		{"source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories"},
		{"source.toolkit.fluxcd.io", "v1beta2", "OCIRepository", "ocirepositories"},
	} {
		out = fmt.Appendf(out, `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[4]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[3]s, plural: %[4]s, listKind: %[3]sList}
  versions:
  - name: %[2]s
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, k.group, k.version, k.kind, k.plural)
	}
	return out
}
