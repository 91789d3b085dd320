// Package helmtest holds test helpers for charts: Package packages a chart
// from its files with the Helm SDK, Repo serves packaged charts as a real
// chart repository (index.yaml and archives) and Registry as a real OCI
// registry, both on loopback, with basic auth if asked and request
// counters that let tests prove what was fetched and how often.
//
// It is imported by tests only.
package helmtest
