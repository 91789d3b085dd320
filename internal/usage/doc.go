// Package usage reads workloads' usage history from a Prometheus-compatible
// API: batched per namespace, aggregated on the server where PromQL can,
// and attributed to workloads by kube-state-metrics ownership or by their
// pods' names.
package usage
