// Package render writes resource recommendations into the Kubernetes
// manifests of a GitOps repository as minimal textual edits.
//
// Apply indexes the YAML files under a directory of the repository, finds the
// one document that defines each target workload and sets the requests (and,
// when asked, the limits) of one container of its pod template.
//
// The index (package repoindex) follows kustomizations across the whole
// repository, Argo CD Applications, Flux Kustomizations and markers, and
// resolves each target to one document or reports why it cannot; its
// package documentation gives the rules.
//
// A change lands in place (ModeInPlace) or as a strategic-merge patch in the
// kustomization that renders the target (ModePatch): an existing patch of
// that kustomization that names the object's containers is updated,
// otherwise recommend-job-<kind>-<name>.yaml is written next to it and
// listed in its patches (or patchesStrategicMerge, when that is what it
// uses), after the commented-out entries ("# - x") that follow the list or
// the file's last key, so that uncommenting them keeps each list whole. A file that an environment not built on the target's
// kustomization also renders, or that the kustomization renders twice, is
// always patched, never edited, and so is a target whose overlay, a layer
// below it or one of their components has a patch setting the container's
// resources. A patch file another kustomization also uses is not edited.
// ModeAuto, the default, edits in place otherwise.
//
// The files are edited in memory (package edits) and written only once
// every change has been worked out.
//
// Each kustomization that renders an edited target is then built with
// kustomize (krusty) from the files on disk and from the edited files laid
// over them, and so is every environment that reads an edited file without
// being built on that kustomization. Unless the targets render with the new
// values, nothing else in the output changes and those environments render
// exactly what they did, the edits of that kustomization (and of any that
// share a file with them) are undone and reported with ErrProofFailed
// (package proof builds and compares).
//
// The YAML is parsed only to locate nodes: new values are spliced into the
// original bytes (package yamledit), so the diff of a file is exactly the
// values that changed; when a value cannot be spliced, only the smallest
// subtree that holds the edit (the container's resources mapping, else the
// container) is re-serialised, and every edited file is checked to mean
// the intended tree and keep its comments. A file whose values already
// equal the requested quantities (compared as quantities, so 0.25 equals
// 250m) is left byte-identical and is not written. When no subtree passes
// (a container written as a flow mapping), the file is refused
// (ErrUnsafeFile) with the reason. Result.Method says how each file was
// edited: MethodSplice, MethodSubtree or MethodNewFile.
//
// Files are refused rather than edited when they look like Go or Helm
// templates, are encrypted with SOPS, or use anchors, aliases or merge keys
// on the path to the edited values.
//
// No file above the size limit (WithMaxFileSize, DefaultMaxFileSize by
// default) is read, neither by the index nor by kustomize during a proof:
// its size is checked first, it is listed in Outcome.Skipped, a target it
// might define is not found with ErrFileTooLarge naming it, and a
// kustomization that includes it is not built. The files the index's
// workers parse at once add up to the limit at most. The index never expands
// aliases; files that kustomize would expand into more than 65,536 extra
// nodes, or into themselves, fail the proof instead.
package render
