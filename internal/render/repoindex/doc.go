// Package repoindex knows what a GitOps repository renders, and for whom:
// it indexes the manifests under a searched directory and the
// kustomizations of the whole repository (which overlay includes which
// base, with which patches and name transforms), the Argo CD Applications
// and Flux Kustomizations and HelmReleases that point at a path, and the
// recommend-job.io markers; and it resolves a target to the one document
// that defines it (Index.Resolve), or says why none or several do. It
// reads files through a size limit (ReadLimited) and never edits them.
//
// The index follows kustomizations across the whole repository: a document
// that a kustomization renders (through resources, bases or components)
// counts under the namespace and name the kustomizations give it. Every
// kustomization but a component renders what it includes, also one that
// others include in turn, so a document has a candidate per kustomization
// it reaches. Patch files, and files next to a kustomization that does not
// list them, define nothing. Sought.Path, the Argo CD Application named by
// the target's tracking-id annotation (or instance label) and the Flux
// Kustomization named by its labels, when the repository holds that
// object, each name one directory: the kustomization in exactly that
// directory, or, in a directory without one, the manifests under it and
// the kustomizations under it no other one there includes. Without such a
// hint, what an environment renders wins: a kustomization nothing includes,
// or one named as deployed (by an Application, a Kustomization, a change's
// Path, or as another change's renderer). Whatever remains ambiguous is
// reported, never guessed. A marker comment,
// {"$recommend": "<ns>/<name>:<container>"} on a resources mapping or the
// key above it, maps files no index can, such as Helm values, and wins over
// the index. A marked file that kustomizations render is treated like a
// manifest: where another environment renders it too, the values go in a
// strategic-merge patch of the marked object, at the marked path, in the
// target's environment (the one a hint names, else the one environment
// that renders it; several and no hint are refused).
package repoindex
