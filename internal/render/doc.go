// Package render writes resource recommendations into the Kubernetes
// manifests of a GitOps repository as minimal textual edits.
//
// Apply indexes the YAML files under a directory of the repository, finds the
// one document that defines each target workload and sets the requests (and,
// when asked, the limits) of one container of its pod template.
//
// The index follows kustomizations across the whole repository: a document
// that a kustomization renders (through resources, bases or components)
// counts under the namespace and name the kustomizations give it. Every
// kustomization but a component renders what it includes, also one that
// others include in turn, so a document has a candidate per kustomization
// it reaches. Patch files, and files next to a kustomization that does not
// list them, define nothing. Change.Path, the Argo CD Application named by
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
// Each kustomization that renders an edited target is then built with
// kustomize (krusty) from the files on disk and from the edited files laid
// over them, and so is every environment that reads an edited file without
// being built on that kustomization. Unless the targets render with the new
// values, nothing else in the output changes and those environments render
// exactly what they did, the edits of that kustomization (and of any that
// share a file with them) are undone and reported with ErrProofFailed.
//
// The YAML is parsed only to locate nodes. New values are spliced into the
// original bytes at the positions the parser reports, so comments, blank
// lines, key order, quoting, indentation, line endings, document separators
// and the presence or absence of a final newline survive, and the diff of a
// file is exactly the values that changed. A file whose values already equal
// the requested quantities (compared as quantities, so 0.25 equals 250m) is
// left byte-identical and is not written.
//
// Splicing covers:
//   - replacing a plain, single-quoted or double-quoted scalar, keeping its
//     quoting;
//   - adding keys to a block mapping, after its last entry, indented like its
//     other keys, and to a flow mapping, in flow style;
//   - turning an empty value (resources: {}, resources:, ~ or null) into a
//     block mapping.
//
// Every spliced file is parsed again and compared with the intended tree
// before it is accepted. When splicing is impossible, or that check fails,
// only the smallest subtree that holds the edit and has lines of its own
// is re-serialised in their place (kyaml's encoder, with the file's
// indentation, sequence style and line breaks): the container's resources
// mapping, else the container. Splicing is impossible when:
//   - the value to replace is a block scalar (| or >), carries an explicit
//     tag, or is a plain scalar folded over several lines;
//   - an empty value to fill sits on a line below its key, or has no text
//     of its own inside a flow mapping;
//   - keys go after a last entry whose end cannot be found: a block scalar
//     with an indentation indicator, a plain scalar over several lines, or a
//     node with a tag or anchor inside a flow collection;
//   - the check fails, as when keys would land after a block scalar that
//     keeps its trailing blank lines (|+).
//
// Every line outside the subtree is checked to be byte-identical, the file
// must parse to the intended tree and hold the same comments; inside the
// subtree, blank lines go and comments may be respaced. When no subtree
// passes (a container written as a flow mapping), the file is refused
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
