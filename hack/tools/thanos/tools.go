//go:build tools

// Package tools pins the Thanos server, which the metrics backend tests
// build from source with `go build github.com/thanos-io/thanos/cmd/thanos`
// in this module.
package tools

import _ "github.com/thanos-io/thanos/cmd/thanos"
