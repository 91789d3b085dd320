// Package testbed starts the real servers recommend-job talks to, on
// loopback addresses with free ports, for integration tests and for local
// runs:
//
//   - etcd and a kube-apiserver (built from the tools module in
//     hack/tools/kube-apiserver) that serves the Kubernetes API without a
//     controller manager,
//   - Prometheus, optionally with usage history written as a TSDB block
//     (WriteBlock; package history makes cAdvisor-shaped series),
//   - a git HTTP server (git http-backend behind basic auth) holding bare
//     repositories that accept pushes,
//   - for other metrics backends, VictoriaMetrics (StartVictoriaMetrics)
//     and Thanos (StartThanosWithHistory: a query in front of a sidecar in
//     front of a Prometheus of its own, built from hack/tools/thanos),
//   - with Options.Node, a node that runs pods for real (package node,
//     through the Node interface): containerd with runc and the CNI
//     bridge, the kubelet, kube-controller-manager, kube-scheduler and
//     kube-proxy, on a bridge of its own in RFC 2544's benchmarking range,
//     whose address the apiserver then binds. It needs root, and leaves
//     the host as it found it when the bed closes.
//
// EnsureTools finds or installs the binaries, Up starts the whole bed and
// Bed.Env describes it as environment variables. Each server can also be
// started on its own with StartEtcd, StartAPIServer, StartPrometheus and
// StartGitServer.
//
// Servers run as child processes in their own session with their output in
// log files next to their data; when a server fails to start, the error
// carries the tail of its log. Outside of Detached mode the children are
// killed when the process that started them dies, so tests cannot leave
// servers behind.
//
// Package testbedtest wraps all of this for Go tests, and hack/testbed runs
// the bed as background processes for a shell.
package testbed
