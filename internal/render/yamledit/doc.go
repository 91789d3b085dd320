// Package yamledit edits YAML files byte for byte: it maps the parser's
// positions onto a file's bytes (Source), splices new values and keys into
// them (Splice, Entry), re-serialises the lines of one subtree when a value
// cannot be spliced (Region), checks that an edited file means exactly what
// was intended and keeps its comments (Verify), refuses what cannot be
// edited faithfully (UnsafeFile, UnsafeNode), and replaces a file without
// ever leaving it truncated (WriteFile). It knows nothing of Kubernetes.
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
// (ErrUnsafe) with the reason.
package yamledit

import "errors"

// ErrUnsafe means a file or a node cannot be edited faithfully: it is a
// template, SOPS-encrypted, or uses anchors, aliases or merge keys where
// the edit goes.
var ErrUnsafe = errors.New("unsafe file")
