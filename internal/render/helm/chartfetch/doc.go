// Package chartfetch gets the charts that package helm renders: from a
// directory of the repository (LoadDir), or from a chart repository or an
// OCI registry (Loader.Fetch), each fetched once per run.
//
// What it fetches is chosen by the repository, whose author may be
// anyone, so it fetches on the repository's word only what the run
// allows: a login goes to its repository's host alone, never over plain
// HTTP unless the source is declared insecure; the Secrets a source names
// are read from the run's secrets directory by a checked name; a chart
// directory's dependencies come only from the hosts the run names
// (WithDependencyHosts); and every index, archive and directory read is
// bounded in size and time.
package chartfetch
