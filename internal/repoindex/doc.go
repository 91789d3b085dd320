// Package repoindex knows what a GitOps repository renders, and for whom:
// it indexes the manifests under a searched directory and the
// kustomizations of the whole repository (which overlay includes which
// base, with which patches and name transforms), the Argo CD Applications
// and Flux Kustomizations and HelmReleases that point at a path, and the
// recommend-job.io markers; and it resolves a target to the one document
// that defines it (Index.Resolve), or says why none or several do. It
// reads files through a size limit (ReadLimited) and never edits them.
package repoindex
