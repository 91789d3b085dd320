// Package helm renders Helm charts with the Helm SDK and finds, by
// rendering, the values keys that size a workload's containers.
//
// A chart comes from a directory of the repository (LoadDir) or from a
// chart repository or OCI registry (Loader.Fetch), each loaded once per run.
// A Release is a chart, a release name and namespace, and its values as
// Helm would coalesce them from every layer (Merge).
//
// Finder.Keys renders a release once with its values, then once more with a
// distinct probe quantity written under every candidate key at the same
// time: every mapping of the values (and every .Values path the templates
// read that the values do not set), given requests and limits, and then
// every scalar. A probe that comes out as one resource value of exactly one
// container names the key that sets it. Candidates that make the chart
// fail are split in halves and rendered again. Nothing is guessed from key
// names, so resources, <component>.resources, sidecars[0].resources and
// scalar keys such as cpuRequest are all found the same way, and the
// renders are per release, not per container.
//
// Prove renders a release before and after a change of its values and
// checks that only the asked resource values of the target containers
// differ in the whole output.
package helm
