// Package yamledit edits YAML files byte for byte: it maps the parser's
// positions onto a file's bytes (Source), splices new values and keys into
// them (Splice, Entry), re-serialises the lines of one subtree when a value
// cannot be spliced (Region), checks that an edited file means exactly what
// was intended and keeps its comments (Verify), refuses what cannot be
// edited faithfully (UnsafeFile, UnsafeNode), and replaces a file without
// ever leaving it truncated (WriteFile). It knows nothing of Kubernetes.
package yamledit

import "errors"

// ErrUnsafe means a file or a node cannot be edited faithfully: it is a
// template, SOPS-encrypted, or uses anchors, aliases or merge keys where
// the edit goes.
var ErrUnsafe = errors.New("unsafe file")
