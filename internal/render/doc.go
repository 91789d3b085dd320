// Package render writes resource recommendations into the Kubernetes
// manifests of a GitOps repository as minimal textual edits.
//
// Apply indexes the YAML files under a directory of the repository, finds the
// one document that defines each target workload and sets the requests (and,
// when asked, the limits) of one container of its pod template.
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
// the one document concerned is re-serialised instead (kyaml's encoder, with
// the document's indentation, sequence style and line breaks). Splicing is
// impossible when:
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
// Re-serialising loses the document's blank lines and may move or respace
// its comments; it is refused (ErrUnsafeFile) when it would drop or
// duplicate a comment.
//
// Files are refused rather than edited when they look like Go or Helm
// templates, are encrypted with SOPS, or use anchors, aliases or merge keys
// on the path to the edited values.
package render
