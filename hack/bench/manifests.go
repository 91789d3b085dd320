package bench

import (
	"fmt"
	"path"
	"strings"
)

// overlayAnnotation is what each kustomize overlay's patch adds to its
// Deployments, so that the overlay renders something of its own.
const overlayAnnotation = "bench.recommend-job.io/overlay"

// Manifest returns the workload's manifest as a GitOps repository holds
// it: with its namespace when it is a plain file, without when it is in a
// kustomize base, whose overlay sets the namespace.
func (w Workload) Manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: %s\nmetadata:\n  name: %s\n", w.Kind, w.Name)
	if !w.Kustomize {
		fmt.Fprintf(&b, "  namespace: %s\n", w.Namespace)
	}
	fmt.Fprintf(&b, "  labels:\n    app: %s\nspec:\n", w.Name)
	switch w.Kind {
	case KindDeployment:
		fmt.Fprintf(&b, "  replicas: %d\n", podsPerWorkload)
	case KindStatefulSet:
		fmt.Fprintf(&b, "  replicas: %d\n  serviceName: %s\n", podsPerWorkload, w.Name)
	}
	fmt.Fprintf(&b, "  selector:\n    matchLabels:\n      app: %s\n", w.Name)
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels:\n        app: %s\n    spec:\n      containers:\n", w.Name)
	for _, c := range w.Containers {
		fmt.Fprintf(&b, "        - name: %s\n          image: registry.example.com/bench/%s:1.0\n", c.Name, c.Name)
		fmt.Fprintf(&b, "          resources:\n            requests:\n              cpu: %s\n              memory: %s\n", c.RequestCPU, c.RequestMemory)
	}
	return b.String()
}

// ResourceRecommend returns the ResourceRecommend of the workload: both
// containers, CPU and memory, katalyst's defaults otherwise.
func (w Workload) ResourceRecommend() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1\nkind: ResourceRecommend\n")
	fmt.Fprintf(&b, "metadata:\n  name: %s\n  namespace: %s\n", w.Name, w.Namespace)
	fmt.Fprintf(&b, "spec:\n  targetRef:\n    apiVersion: apps/v1\n    kind: %s\n    name: %s\n", w.Kind, w.Name)
	b.WriteString("  resourcePolicy:\n    algorithmPolicy:\n      recommender: default\n      algorithm: percentile\n    containerPolicies:\n")
	for _, c := range w.Containers {
		fmt.Fprintf(&b, "      - containerName: %s\n        controlledResourcesPolicies:\n          - resourceName: cpu\n          - resourceName: memory\n", c.Name)
	}
	return b.String()
}

// File is where the repository holds the workload's manifest.
func (w Workload) File() string {
	if w.Kustomize {
		return path.Join("kustomize", w.Namespace, "base", w.Name+".yaml")
	}
	return path.Join("apps", w.Namespace, w.Name+".yaml")
}

// RepositoryFiles returns the GitOps repository of the fleet, path to
// content: a third of the workloads in kustomize layouts, one base per
// namespace (kustomize/<namespace>/base) built by an overlay
// (kustomize/<namespace>/overlay) that sets the namespace and patches its
// Deployments; the others as plain files in apps/<namespace>.
func (f Fleet) RepositoryFiles() map[string]string {
	files := map[string]string{"README.md": "# GitOps repository of the recommend-job benchmark\n"}
	bases := map[string][]string{}
	for _, w := range f.Workloads {
		files[w.File()] = w.Manifest()
		if w.Kustomize {
			bases[w.Namespace] = append(bases[w.Namespace], w.Name+".yaml")
		}
	}
	for ns, resources := range bases {
		dir := path.Join("kustomize", ns)
		files[path.Join(dir, "base", "kustomization.yaml")] = kustomization("", []string{}, resources)
		files[path.Join(dir, "overlay", "kustomization.yaml")] = kustomization(ns, []string{overlayPatch}, []string{"../base"})
	}
	return files
}

// overlayPatch annotates every Deployment of an overlay.
const overlayPatch = `  - target:
      kind: Deployment
    patch: |-
      - op: add
        path: /metadata/annotations
        value:
          ` + overlayAnnotation + `: "true"
`

func kustomization(namespace string, patches, resources []string) string {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if namespace != "" {
		fmt.Fprintf(&b, "namespace: %s\n", namespace)
	}
	b.WriteString("resources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	if len(patches) > 0 {
		b.WriteString("patches:\n")
		for _, p := range patches {
			b.WriteString(p)
		}
	}
	return b.String()
}
