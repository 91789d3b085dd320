// Package collect is the cluster side of a run: it lists the
// ResourceRecommends, resolves and reads the workloads they target, and
// validates them with katalyst's rules.
package collect
