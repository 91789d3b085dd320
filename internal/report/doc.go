// Package report prints the plan of a run for people (a table) and for
// programs (JSON and YAML, the plan's own encoding, documented in
// docs/report.md).
package report
