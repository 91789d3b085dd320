// Package collect is the cluster side of a run: it lists the
// ResourceRecommends, resolves and reads the workloads they target,
// validates them with katalyst's rules, and fetches the workloads' usage
// history from Prometheus.
package collect
