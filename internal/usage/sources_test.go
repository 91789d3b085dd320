package usage

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// TestReaderRefusesAContainerOfSeveralSources reads a namespace whose
// usage series carry job (and metrics_path) labels, with and without the
// ownership listing (the CPU query a rate alone, or aggregated): a
// container whose series, of any pod and resource, come from more than
// one job or path is refused naming them; instances, cgroups and other
// containers and workloads do not count.
func TestReaderRefusesAContainerOfSeveralSources(t *testing.T) {
	const pod, pod2, apiPod = "web-7c9d5-x2k4p", "web-7c9d5-b6z9q", "api-5f6d7-k8m2n"
	web := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"}
	api := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "api"}
	// s is one series: what it is of (cpu or memory), its pod and
	// container, and labels besides.
	type s struct {
		what, pod, container string
		labels               model.LabelSet
	}
	kubelet := model.LabelSet{"job": "kubelet", "metrics_path": "/metrics/cadvisor", "instance": "node-1"}
	with := func(more model.LabelSet) model.LabelSet {
		out := kubelet.Clone()
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	evil := model.LabelSet{"job": "evil-exporter", "instance": "10.0.0.9:9100"}
	genuine := []s{{"cpu", pod, "app", kubelet}, {"memory", pod, "app", kubelet}, {"cpu", pod, "sidecar", kubelet}, {"memory", pod, "sidecar", kubelet},
		{"cpu", apiPod, "app", kubelet}, {"memory", apiPod, "app", kubelet}}
	const both = `job="evil-exporter", job="kubelet",metrics_path="/metrics/cadvisor"`
	for _, c := range []struct {
		name string
		more []s
		// want are the refused containers, workload/container, with the
		// sources they name.
		want map[string]string
	}{
		{name: "one source", want: map[string]string{}},
		{name: "another instance and a new cgroup of the same job",
			more: []s{{"cpu", pod, "app", with(model.LabelSet{"instance": "node-2"})}, {"cpu", pod2, "app", with(model.LabelSet{"id": "/kubepods/new"})}},
			want: map[string]string{}},
		{name: "forged CPU of the same pod", more: []s{{"cpu", pod, "app", evil}}, want: map[string]string{"web/app": both}},
		{name: "forged memory only", more: []s{{"memory", pod, "app", evil}}, want: map[string]string{"web/app": both}},
		{name: "forged under a pod the workload never had",
			more: []s{{"cpu", pod2, "app", evil}}, want: map[string]string{"web/app": both}},
		{name: "another path of the same job",
			more: []s{{"cpu", pod, "sidecar", with(model.LabelSet{"metrics_path": "/metrics/resource"})}},
			want: map[string]string{"web/sidecar": `job="kubelet",metrics_path="/metrics/cadvisor", job="kubelet",metrics_path="/metrics/resource"`}},
		{name: "forged in two workloads",
			more: []s{{"cpu", pod, "app", evil}, {"memory", apiPod, "app", evil}},
			want: map[string]string{"web/app": both, "api/app": both}},
	} {
		for _, owners := range []bool{true, false} {
			name := c.name + map[bool]string{true: ", listed", false: ", aggregated"}[owners]
			t.Run(name, func(t *testing.T) {
				all := append(append([]s(nil), genuine...), c.more...)
				matrix := func(what string) model.Matrix {
					var out model.Matrix
					for _, x := range all {
						if x.what != what {
							continue
						}
						m := series(x.pod, x.container, 0.1, 0.1, 0.1)
						for k, v := range x.labels {
							m.Metric[k] = v
						}
						out = append(out, m)
					}
					return out
				}
				lister := &listingAPI{}
				for _, x := range all {
					if x.what == "cpu" {
						set := model.LabelSet{model.MetricNameLabel: cpuMetric, "namespace": "ns", "pod": model.LabelValue(x.pod), "container": model.LabelValue(x.container)}
						lister.sets = append(lister.sets, set.Merge(x.labels))
					}
				}
				lister.answer = func(q string) model.Matrix {
					switch {
					case strings.Contains(q, "rate(container_cpu_usage_seconds_total"):
						return matrix("cpu")
					case strings.HasPrefix(q, "max by (pod, container, job, metrics_path) (max_over_time(container_memory_working_set_bytes"):
						return matrix("memory")
					}
					return nil
				}
				got, err := NewReader(lister, WithOwnership(owners), WithStep(DefaultStep), WithRateWindow(DefaultRateWindow)).
					Read(t.Context(), "ns", []WorkloadRef{web, api})
				if err != nil {
					t.Fatal(err)
				}
				refused := map[string]string{}
				for _, w := range []WorkloadRef{web, api} {
					for container := range got[w] {
						err := got[w].Refusal(container)
						if err == nil {
							continue
						}
						var se *SourcesError
						if !errors.As(err, &se) || !strings.Contains(err.Error(), "not recommended") {
							t.Errorf("%s/%s: refusal %v, want a *SourcesError saying it is not recommended", w.Name, container, err)
							continue
						}
						refused[w.Name+"/"+container] = strings.Join(se.Sources, ", ")
					}
				}
				if diff := cmp.Diff(c.want, refused); diff != "" {
					t.Errorf("refused containers (-want +got):\n%s", diff)
				}
				// The refusal holds for every resource of the container.
				for key := range c.want {
					w, container, _ := strings.Cut(key, "/")
					for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						ref := web
						if w == "api" {
							ref = api
						}
						if h := got[ref][container][res]; h != nil && len(h.Sources) < 2 {
							t.Errorf("%s %s: sources %q, want both named", key, res, h.Sources)
						}
					}
				}
			})
		}
	}
}

// TestSourceString names a source as a label matcher would select it.
func TestSourceString(t *testing.T) {
	for _, c := range []struct {
		metric model.Metric
		want   string
	}{
		{model.Metric{"job": "kubelet", "metrics_path": "/metrics/cadvisor", "instance": "node-1"}, `job="kubelet",metrics_path="/metrics/cadvisor"`},
		{model.Metric{"job": "kubernetes-cadvisor"}, `job="kubernetes-cadvisor"`},
		{model.Metric{"job": `evil"job`}, `job="evil\"job"`},
		{model.Metric{}, `job=""`},
	} {
		if got := sourceOf(c.metric).String(); got != c.want {
			t.Errorf("sourceOf(%v) = %s, want %s", c.metric, got, c.want)
		}
	}
}
