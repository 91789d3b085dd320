package job

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// itemsCollector hands out fixed items and writes no status.
type itemsCollector []collect.Item

func (c itemsCollector) Collect(context.Context) ([]collect.Item, error) { return c, nil }

func (itemsCollector) WriteStatus(context.Context, plan.Item) error { return nil }

// A large cluster: Deployments of 2 containers and 2 pods, 20 to a
// namespace, with a week of history at one minute.
const (
	benchPerNamespace = 20
	benchPods         = 2
	benchWindow       = 7 * 24 * time.Hour
)

var benchContainers = []string{"app", "proxy"}

// weekAnswers is a stand-in Prometheus answering every namespace's queries
// with the same week of its 20 workloads, made in advance, so that the
// benchmark measures the job and not a server.
type weekAnswers struct {
	cpu, memory, empty []byte
}

func newWeekAnswers(end time.Time) *weekAnswers {
	var cpu, memory []string
	values := func(step time.Duration, value func(i int) float64) string {
		var b strings.Builder
		n := int(benchWindow / step)
		for i := n; i >= 0; i-- {
			if i < n {
				b.WriteByte(',')
			}
			t := end.Add(-time.Duration(i) * step)
			fmt.Fprintf(&b, `[%d,"%s"]`, t.Unix(), strconv.FormatFloat(value(i), 'f', -1, 64))
		}
		return b.String()
	}
	for w := range benchPerNamespace {
		for p := range benchPods {
			pod := fmt.Sprintf("svc-%02d-5f6d7c8b9-%c2k4p", w, "bx"[p])
			for c, container := range benchContainers {
				metric := fmt.Sprintf(`"metric":{"container":%q,"pod":%q}`, container, pod)
				cpu = append(cpu, `{`+metric+`,"values":[`+values(time.Minute, func(i int) float64 { return 0.05 + float64((i*7+w+c)%13)/100 })+`]}`)
				memory = append(memory, `{`+metric+`,"values":[`+values(time.Hour, func(i int) float64 { return float64(100<<20 + (i*w)%50<<20) })+`]}`)
			}
		}
	}
	matrix := func(series []string) []byte {
		return []byte(`{"status":"success","data":{"resultType":"matrix","result":[` + strings.Join(series, ",") + `]}}`)
	}
	return &weekAnswers{cpu: matrix(cpu), memory: matrix(memory), empty: matrix(nil)}
}

func (a *weekAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch q := r.Form.Get("query"); {
	case strings.Contains(q, "container_cpu_usage_seconds_total"):
		w.Write(a.cpu)
	case strings.Contains(q, "container_memory_working_set_bytes"):
		w.Write(a.memory)
	default: // ownership and OOM kills: none
		w.Write(a.empty)
	}
}

// benchItems are n valid ResourceRecommends, one per workload of the
// stand-in's namespaces.
func benchItems(n int) []collect.Item {
	items := make([]collect.Item, 0, n)
	for i := range n {
		ns, name := fmt.Sprintf("team-%03d", i/benchPerNamespace), fmt.Sprintf("svc-%02d", i%benchPerNamespace)
		it := collect.Item{Namespace: ns, Name: name,
			Target:   v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}},
		}
		for _, c := range benchContainers {
			it.Workload.Containers = append(it.Workload.Containers, collect.Container{Name: c,
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}})
			it.Policies = append(it.Policies, collect.ContainerPolicy{ContainerName: c, Resources: []collect.ResourcePolicy{
				{Resource: corev1.ResourceCPU, BufferPercent: 30}, {Resource: corev1.ResourceMemory, BufferPercent: 30}}})
		}
		items = append(items, it)
	}
	return items
}

// peakHeap samples the heap in use until stop is called, and returns the
// highest it saw.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-sampled
		return peak.Load()
	}
}

// BenchmarkRunHistory runs a dry run's history and recommend stages over n
// ResourceRecommends, 20 to a namespace, with the history read 4
// namespaces at a time as by default, and reports the highest heap in use:
// it grows with the namespaces read at a time, not with n.
func BenchmarkRunHistory(b *testing.B) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(newWeekAnswers(end))
	defer srv.Close()
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			items := benchItems(n)
			client, err := usage.NewClient(srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			// At a 1m step, the stand-in's: five times the default's points.
			reader := usage.NewReader(client, usage.WithStep(time.Minute), usage.WithOwnership(false), usage.WithClock(func() time.Time { return end }))
			cfg := Config{DryRun: true, HistoryConcurrency: 4}
			var peak uint64
			b.ReportAllocs()
			for b.Loop() {
				runtime.GC()
				stop := peakHeap()
				p, err := Run(b.Context(), cfg, itemsCollector(items), reader, slog.New(slog.DiscardHandler))
				peak = max(peak, stop())
				if err != nil {
					b.Fatal(err)
				}
				if got := recommended(p); got != 2*len(benchContainers)*n {
					b.Fatalf("%d resources recommended, want %d", got, 2*len(benchContainers)*n)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// recommended counts the resources of p with a recommended value.
func recommended(p *plan.Plan) int {
	n := 0
	for _, it := range p.Items {
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if r.Recommended != nil {
					n++
				}
			}
		}
	}
	return n
}
