// Package recommend turns usage samples and a container's policy into
// resource values. It is pure: no I/O, no clocks, no Kubernetes clients, so
// every rule can be tested with numbers worked out by hand.
package recommend
