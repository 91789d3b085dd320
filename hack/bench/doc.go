// Package bench benchmarks a whole run of recommend-job on the test bed at
// a given scale: N ResourceRecommends over N workloads
// of mixed kinds in N/20 namespaces, a week of 1-minute usage history for
// two pods per workload (rolled over once), and a GitOps repository of
// their manifests, part of them in kustomize overlays.
//
// Run starts the bed (internal/testbed) on the fleet's usage history,
// written once per N as TSDB blocks and cached (EnsureData), creates the
// objects and the repository, and runs the job binary as a full run that
// pushes a branch. The job talks to the apiserver, Prometheus and the git
// server through counting reverse proxies (Proxy), so that every request
// is recorded with its time and size, and its memory is read every 50 ms;
// both are attributed to the stages the job logs ("stage done") by time.
// With Options.Forge, a real Gitea holds the repository and the job opens
// its pull requests there: one proxy in front of Gitea records its git
// requests and its API calls apart, and the run's forge calls are counted
// per group (Forge).
// Then, on the same bed and data, it measures the floor (the run's list
// calls and PromQL queries replayed one after the other, and a clone and
// push of the same change with git) and the katalyst-style baseline (one
// range query per ResourceRecommend, container and resource, 8 at a time).
// The replayed queries ask for Prometheus's statistics, which give the
// samples each one scanned.
//
// hack/cmd/bench is the command (make bench); BENCHMARKS.md explains the
// columns and holds the figures.
package bench
