package bench

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

// Workload kinds of the fleet, and their share: most are Deployments.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
)

// workloadsPerNamespace is how many workloads share a namespace: N/20
// namespaces, at least one.
const workloadsPerNamespace = 20

// podsPerWorkload is how many pods of a workload are alive at any time; each
// workload rolls over once in the data, so its history holds twice as many
// pod names (a StatefulSet's pods keep their names).
const podsPerWorkload = 2

const mib = 1 << 20

// Fleet is the synthetic cluster of one scale: N workloads of mixed kinds
// with two containers each, in N/20 namespaces, each the target of one
// ResourceRecommend. It is a pure function of N, so that the cached usage
// history, the cluster's objects and the repository always agree.
type Fleet struct {
	// N is the number of workloads and of ResourceRecommends.
	N int
	// Namespaces are the namespaces' names, in order.
	Namespaces []string
	// Workloads are the workloads, in order of their index.
	Workloads []Workload
}

// Workload is one workload of the fleet and how it uses resources.
type Workload struct {
	Index     int
	Namespace string
	Name      string
	Kind      string
	// Kustomize places the workload's manifest in its namespace's kustomize
	// base, built by an overlay that patches it; otherwise it is a plain
	// file of its namespace's directory.
	Kustomize  bool
	Containers []Container
}

// Container is one container of a workload: its usage over time and the
// requests its manifest and its live object carry.
type Container struct {
	Name string
	// CPU is the usage in cores at a time, Memory the working set in bytes.
	CPU, Memory func(time.Time) float64
	// RequestCPU and RequestMemory are the current requests, as
	// Kubernetes quantities; far enough above the usage that the job
	// changes them.
	RequestCPU, RequestMemory string
}

// NewFleet returns the fleet of n workloads.
func NewFleet(n int) Fleet {
	f := Fleet{N: n}
	namespaces := max(1, n/workloadsPerNamespace)
	for i := range namespaces {
		f.Namespaces = append(f.Namespaces, fmt.Sprintf("bench-%03d", i))
	}
	// Twenty consecutive workloads share a namespace, so that each holds
	// every kind; the last takes the remainder.
	for i := range n {
		f.Workloads = append(f.Workloads, newWorkload(i, f.Namespaces[min(i/workloadsPerNamespace, namespaces-1)]))
	}
	return f
}

// newWorkload makes workload i: 8 in 10 are Deployments, 1 a StatefulSet
// and 1 a DaemonSet; a third are in kustomize layouts. Names have a fixed
// width, so that no name is a prefix of another's pods.
func newWorkload(i int, namespace string) Workload {
	kind, prefix := KindDeployment, "web"
	switch i % 10 {
	case 7:
		kind, prefix = KindStatefulSet, "db"
	case 9:
		kind, prefix = KindDaemonSet, "agent"
	}
	appCPU := 0.05 + 0.01*float64(i%10)
	appMemory := float64(128+16*(i%8)) * mib
	sidecarCPU := 0.005 + 0.001*float64(i%5)
	sidecarMemory := float64(24+4*(i%4)) * mib
	return Workload{
		Index:     i,
		Namespace: namespace,
		Name:      fmt.Sprintf("%s-%05d", prefix, i),
		Kind:      kind,
		Kustomize: i%3 == 0,
		Containers: []Container{
			{
				Name:       "app",
				CPU:        history.DailyPeak(appCPU, 4*appCPU, 9, 17),
				Memory:     history.DailyPeak(appMemory, 1.25*appMemory, 9, 17),
				RequestCPU: "1", RequestMemory: "1Gi",
			},
			{
				Name:       "sidecar",
				CPU:        history.Constant(sidecarCPU),
				Memory:     history.Constant(sidecarMemory),
				RequestCPU: "100m", RequestMemory: "128Mi",
			},
		},
	}
}

// Pod is one pod of a workload, alive from Start to End (excluded).
type Pod struct {
	Name       string
	Start, End time.Time
	// OwnerKind and OwnerName are the pod's controller, as
	// kube-state-metrics' kube_pod_owner says: a Deployment's pods belong
	// to its ReplicaSet.
	OwnerKind, OwnerName string
}

// Pods returns the pods the workload had from start to end: two at a time,
// replaced once, halfway (history.Rollouts' split). A Deployment's pods
// are named <name>-<hash>-<5>, each rollout with its own ReplicaSet; a
// DaemonSet's <name>-<5>; a StatefulSet's <name>-<ordinal>, the same names
// after the rollover.
func (w Workload) Pods(start, end time.Time) []Pod {
	spans := history.Rollouts(w.Name, podsPerWorkload, 2, start, end)
	var pods []Pod
	for r, span := range spans {
		for k, name := range span.Pods {
			p := Pod{Start: span.Start, End: span.End, OwnerKind: w.Kind, OwnerName: w.Name}
			switch w.Kind {
			case KindDeployment:
				p.Name = name
				p.OwnerKind, p.OwnerName = "ReplicaSet", name[:strings.LastIndexByte(name, '-')]
			case KindStatefulSet:
				p.Name = fmt.Sprintf("%s-%d", w.Name, k)
			default:
				p.Name = w.Name + "-" + suffix(w.Name, r, k)
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// ReplicaSets returns the ReplicaSets a Deployment had from start to end,
// with their lifetimes; none for other kinds.
func (w Workload) ReplicaSets(start, end time.Time) []Pod {
	if w.Kind != KindDeployment {
		return nil
	}
	var out []Pod
	seen := map[string]bool{}
	for _, p := range w.Pods(start, end) {
		if !seen[p.OwnerName] {
			seen[p.OwnerName] = true
			out = append(out, Pod{Name: p.OwnerName, Start: p.Start, End: p.End, OwnerKind: KindDeployment, OwnerName: w.Name})
		}
	}
	return out
}

// alphabet is the one Kubernetes draws generated name parts from.
const alphabet = "bcdfghjklmnpqrstvwxz2456789"

// suffix is a deterministic stand-in for the random 5-character suffix of a
// DaemonSet's pod.
func suffix(name string, rollout, replica int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d/%d", name, rollout, replica)
	v := h.Sum32()
	out := make([]byte, 5)
	for i := range out {
		v = v*1664525 + 1013904223
		out[i] = alphabet[(v>>16)%uint32(len(alphabet))]
	}
	return string(out)
}

// Count returns how many workloads of kind the fleet has.
func (f Fleet) Count(kind string) int {
	n := 0
	for _, w := range f.Workloads {
		if w.Kind == kind {
			n++
		}
	}
	return n
}
