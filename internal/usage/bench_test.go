//go:build integration

package usage_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// Cluster-sized history: 1,000 Deployments of 2 pods each, in 10
// namespaces, for 7 days at 1-minute resolution: 4,000 series of 10,081
// samples, 40 million samples.
const (
	benchNamespaces = 10
	benchWorkloads  = 1000
	benchReplicas   = 2
)

// BenchmarkReadCluster reads the week of every workload the way a run does,
// through usage.ReadAll, computes every container's CPU and memory,
// and reports the PromQL queries per run: four per namespace, however many
// containers it holds.
func BenchmarkReadCluster(b *testing.B) {
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-7 * 24 * time.Hour)
	byNamespace := map[string][]usage.WorkloadRef{}
	var containers []history.Container
	for i := range benchWorkloads {
		ns := fmt.Sprintf("team-%d", i%benchNamespaces)
		name := fmt.Sprintf("svc-%d", i)
		byNamespace[ns] = append(byNamespace[ns], usage.WorkloadRef{Kind: "Deployment", Namespace: ns, Name: name})
		cpu, mem := 0.05+float64(i%20)/100, float64(64+i%200)*(1<<20)
		for _, span := range history.Rollouts(name, benchReplicas, 1, start, end) {
			for _, pod := range span.Pods {
				containers = append(containers, history.Container{Namespace: ns, Pod: pod, Container: "app",
					Start: span.Start, End: span.End, CPU: history.Constant(cpu), Memory: history.Constant(mem)})
			}
		}
	}

	dir := b.TempDir()
	began := time.Now()
	if err := history.WriteBlock(context.Background(), dir, containers, time.Minute); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d series of a week at 1m as a TSDB block in %s", 2*len(containers), time.Since(began).Round(time.Millisecond))
	root, err := testbed.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	tools, err := testbed.EnsureTools(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	began = time.Now()
	prom, err := testbed.StartPrometheus(context.Background(), tools, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer prom.Stop()
	defer os.RemoveAll(dir)
	b.Logf("prometheus ready in %s", time.Since(began).Round(time.Millisecond))
	// The job's client, which streams, and Prometheus's client library, one
	// namespace after the other; the default 1m step, and 5m with a fifth of
	// the CPU points; and the job's client reading 4 namespaces at a time.
	clients := map[string]func() (usage.RangeQuerier, *int){
		"Client": func() (usage.RangeQuerier, *int) {
			c := newClient(b, prom.URL)
			return c, &c.queries
		},
		"client_golang": func() (usage.RangeQuerier, *int) {
			c := testbedtest.NewCountingAPI(b, prom.URL)
			return c, &c.Queries
		},
	}
	var wants []usage.Want
	for _, refs := range byNamespace {
		for _, ref := range refs {
			wants = append(wants, usage.Want{Ref: ref})
		}
	}
	for _, c := range []struct {
		client      string
		step        time.Duration
		concurrency int
	}{
		{"Client", time.Minute, 1}, {"Client", 5 * time.Minute, 1}, {"Client", time.Minute, 2}, {"Client", time.Minute, 4},
		{"client_golang", time.Minute, 1}, {"client_golang", 5 * time.Minute, 1},
	} {
		b.Run(fmt.Sprintf("%s/step=%s/concurrency=%d", c.client, c.step, c.concurrency), func(b *testing.B) {
			promAPI, queries := clients[c.client]()
			reader := usage.NewReader(promAPI, usage.WithStep(c.step), usage.WithClock(func() time.Time { return end }))
			log := slog.New(slog.DiscardHandler)
			b.ReportAllocs()
			samples := 0
			var reading time.Duration
			for b.Loop() {
				*queries, samples = 0, 0
				began := time.Now()
				h, err := usage.ReadAll(b.Context(), reader, wants, log, usage.WithConcurrency(c.concurrency))
				if err != nil {
					b.Fatal(err)
				}
				reading += time.Since(began)
				if h.Workloads() != len(wants) {
					b.Fatalf("history of %d workloads, want %d", h.Workloads(), len(wants))
				}
				// The compute stage: a histogram per container resource.
				for _, w := range wants {
					u, err := h.Of(w)
					if err != nil {
						b.Fatal(err)
					}
					for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						h := u["app"][res]
						samples += len(h.Values)
						in := recommend.Input{Resource: res, BufferPercent: 30, First: h.First, Last: h.Last}
						in.Samples = make([]recommend.Sample, len(h.Values))
						for i, v := range h.Values {
							in.Samples[i] = recommend.Sample{Time: h.Time(i), Value: v}
						}
						if r, err := recommend.Compute(in, recommend.Options{}); err != nil || r.Request == nil {
							b.Fatalf("Compute() = %+v, %v", r, err)
						}
					}
				}
			}
			b.ReportMetric(reading.Seconds()/float64(b.N), "read-s/op")
			b.ReportMetric(float64(*queries), "queries/op")
			b.ReportMetric(float64(samples), "samples/op")
			b.ReportMetric(float64(len(containers)), "pods")
		})
	}
}
