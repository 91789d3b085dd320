package usage

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// sourceLabels are the labels that tell who wrote a usage series: the
// scrape job and, where the setup keeps it (kube-prometheus-stack does),
// the path scraped. instance is not one: a pod's series come from
// another instance when its node's kubelet restarts or the pod moves.
var sourceLabels = []model.LabelName{"job", "metrics_path"}

// bySource is the grouping of the usage queries: per pod and container,
// as the reader attributes series, and per source, so that series
// another job writes under a container's labels stay apart and are seen.
const bySource = "pod, container, job, metrics_path"

// source is who wrote a series: its job and metrics_path labels.
type source struct{ job, path model.LabelValue }

func sourceOf(m model.Metric) source {
	return source{job: m["job"], path: m["metrics_path"]}
}

func (s source) String() string {
	out := "job=" + strconv.Quote(string(s.job))
	if s.path != "" {
		out += ",metrics_path=" + strconv.Quote(string(s.path))
	}
	return out
}

// containerRef is a workload's container.
type containerRef struct {
	workload  WorkloadRef
	container string
}

// sources are the sources of each workload container's usage series seen
// in one read of a namespace: CPU, memory and startup peaks, every pod
// the workload had in the window.
type sources map[containerRef][]source

// sourced says whether the query of what reads cAdvisor's series, whose
// sources count; the OOM query reads kube-state-metrics'.
func sourced(what corev1.ResourceName) bool {
	return what == corev1.ResourceCPU || what == corev1.ResourceMemory || what == "startup"
}

// note adds the source of a series of container of w.
func (s sources) note(w WorkloadRef, container string, m model.Metric) {
	if s == nil {
		return
	}
	k, src := containerRef{workload: w, container: container}, sourceOf(m)
	if !slices.Contains(s[k], src) {
		s[k] = append(s[k], src)
	}
}

// mixed are the containers of w whose series came from more than one
// source, each with them named in order.
func (s sources) mixed(w WorkloadRef) map[string][]string {
	var out map[string][]string
	for k, srcs := range s {
		if k.workload != w || len(srcs) < 2 {
			continue
		}
		names := make([]string, len(srcs))
		for i, src := range srcs {
			names[i] = src.String()
		}
		slices.Sort(names)
		if out == nil {
			out = map[string][]string{}
		}
		out[k.container] = names
	}
	return out
}

// markMixed sets the sources of every history of the containers of u
// that mixed names.
func markMixed(u Usage, mixed map[string][]string) {
	for container, names := range mixed {
		for _, h := range u[container] {
			h.Sources = names
		}
	}
}

// SourcesError is why a container's usage is not recommended from: its
// series came from more than one source (scrape job and path), so that
// another job may be writing series under its labels, which would decide
// its value.
type SourcesError struct {
	// Sources name each source, e.g. job="kubelet", in order.
	Sources []string
}

func (e *SourcesError) Error() string {
	return fmt.Sprintf("its usage series come from %d sources: %s; not recommended, as another job may write series under its labels"+
		" (set prometheus-label-filter to select cAdvisor's alone, e.g. job=\"kubelet\")", len(e.Sources), strings.Join(e.Sources, ", "))
}

// Refusal is why container's history must not decide its values: a
// *SourcesError when its series came from more than one source; nil when
// they came from one.
func (u Usage) Refusal(container string) error {
	for _, h := range u[container] {
		if h != nil && len(h.Sources) > 1 {
			return &SourcesError{Sources: h.Sources}
		}
	}
	return nil
}
