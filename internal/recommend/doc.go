// Package recommend turns a collected ResourceRecommend and its workload's
// usage history into the run's plan of it: per container and resource the
// recommended values, their evidence, and what to write. Compute is the
// algorithm; ForItem (foritem.go, with the other adapters from collect's
// items and usage's histories) applies it to an item's policies. It is
// pure: no I/O, no clocks, no Kubernetes clients, so every rule can be
// tested with numbers worked out by hand.
package recommend
