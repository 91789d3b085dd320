//go:build tools

// Package tools pins the helm CLI, which the chart tests build from source
// with `go build helm.sh/helm/v3/cmd/helm` in this module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
