// Package usage reads workloads' usage history from a Prometheus-compatible
// API: batched per namespace, attributed to workloads by their pods' names.
package usage
