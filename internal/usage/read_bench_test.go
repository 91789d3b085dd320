package usage

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
)

// One namespace of a large cluster: 40 Deployments of 2 pods each, a
// week of history at one minute, served by a stand-in Prometheus from
// answers made in advance, so that the benchmark times the reader alone.
const (
	benchWorkloads = 40
	benchPods      = 2
	benchWindow    = 7 * 24 * time.Hour
)

// namespaceAnswers makes the JSON answers of a namespace's four queries,
// with samples on the reader's grid ending at end, and of the listing of
// its ownership series.
type namespaceAnswers struct {
	ownership, cpu, memory, oom []byte
	// owners lists the ownership series, as /api/v1/series does.
	owners    []byte
	workloads []WorkloadRef
	// delay is how long each query takes to evaluate before its answer
	// comes, as on a Prometheus of its own.
	delay time.Duration
}

func newNamespaceAnswers(end time.Time, workloads int, window time.Duration) *namespaceAnswers {
	rng := rand.New(rand.NewPCG(1, 2))
	a := &namespaceAnswers{oom: []byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`)}
	var owners, listed, cpu, memory []string
	matrix := func(series []string) []byte {
		return []byte(`{"status":"success","data":{"resultType":"matrix","result":[` + strings.Join(series, ",") + `]}}`)
	}
	values := func(step time.Duration, value func() float64) string {
		var b strings.Builder
		n := int(window / step)
		for i := n; i >= 0; i-- {
			if i < n {
				b.WriteByte(',')
			}
			t := end.Add(-time.Duration(i) * step)
			fmt.Fprintf(&b, `[%s,"%s"]`, strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64),
				strconv.FormatFloat(value(), 'f', -1, 64))
		}
		return b.String()
	}
	for w := range workloads {
		name := fmt.Sprintf("svc-%02d", w)
		a.workloads = append(a.workloads, WorkloadRef{Kind: "Deployment", Namespace: "team", Name: name})
		rs := name + "-5f6d7c8b9"
		owners = append(owners, fmt.Sprintf(`{"metric":{"owner_kind":"Deployment","owner_name":%q,"replicaset":%q},"values":[[%d,"1"]]}`, name, rs, end.Unix()))
		listed = append(listed, fmt.Sprintf(`{"__name__":"kube_replicaset_owner","namespace":"team","owner_kind":"Deployment","owner_name":%q,"replicaset":%q}`, name, rs))
		for p := range benchPods {
			pod := fmt.Sprintf("%s-%c2k4p", rs, "bx"[p])
			owners = append(owners, fmt.Sprintf(`{"metric":{"owner_kind":"ReplicaSet","owner_name":%q,"pod":%q},"values":[[%d,"1"]]}`, rs, pod, end.Unix()))
			listed = append(listed, fmt.Sprintf(`{"__name__":"kube_pod_owner","namespace":"team","owner_kind":"ReplicaSet","owner_name":%q,"pod":%q,"uid":"%s-uid"}`, rs, pod, pod))
			metric := fmt.Sprintf(`"metric":{"container":"app","pod":%q}`, pod)
			cpu = append(cpu, `{`+metric+`,"values":[`+values(time.Minute, func() float64 { return 0.05 + rng.Float64()/10 })+`]}`)
			memory = append(memory, `{`+metric+`,"values":[`+values(time.Hour, func() float64 { return float64(100<<20 + rng.IntN(50<<20)) })+`]}`)
		}
	}
	a.ownership, a.cpu, a.memory = matrix(owners), matrix(cpu), matrix(memory)
	a.owners = []byte(`{"status":"success","data":[` + strings.Join(listed, ",") + `]}`)
	return a
}

func (a *namespaceAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch q := r.Form.Get("query"); {
	case strings.HasSuffix(r.URL.Path, "/api/v1/series"):
		w.Write(a.owners)
	case strings.Contains(q, "kube_pod_owner"):
		w.Write(a.ownership)
	case strings.Contains(q, "OOMKilled"):
		w.Write(a.oom)
	case strings.Contains(q, "container_cpu_usage_seconds_total"):
		w.Write(a.cpu)
	default:
		w.Write(a.memory)
	}
}

// BenchmarkReadNamespace reads one namespace's week, 40 workloads of 2
// pods at one minute: 80 series of 10,081 CPU samples and 169 memory
// peaks, about 20 MB of JSON.
func BenchmarkReadNamespace(b *testing.B) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	answers := newNamespaceAnswers(end, benchWorkloads, benchWindow)
	srv := httptest.NewServer(answers)
	defer srv.Close()
	b.Logf("answers: cpu %d bytes, memory %d bytes", len(answers.cpu), len(answers.memory))
	for _, c := range []struct {
		name string
		api  func() RangeQuerier
	}{
		{name: "client_golang", api: func() RangeQuerier {
			client, err := api.NewClient(api.Config{Address: srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			return promv1.NewAPI(client)
		}},
		{name: "Client", api: func() RangeQuerier {
			client, err := NewClient(srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			return client
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := NewReader(c.api(), WithClock(func() time.Time { return end }))
			b.ReportAllocs()
			for b.Loop() {
				got, err := r.Read(context.Background(), "team", answers.workloads)
				if err != nil {
					b.Fatal(err)
				}
				if h := got[answers.workloads[0]]["app"][corev1.ResourceCPU]; h == nil || len(h.Values) != benchPods*(int(benchWindow/time.Minute)+1) {
					b.Fatalf("cpu history of %s: %v samples, want every sample of both pods", answers.workloads[0].Name, h)
				}
			}
		})
	}
}

// BenchmarkReadAllNamespaces reads 8 namespaces of 10 workloads each from
// a stand-in Prometheus that takes 100ms to evaluate each query, as one on
// machines of its own does, with 1 to 8 namespaces read at a time.
func BenchmarkReadAllNamespaces(b *testing.B) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	answers := newNamespaceAnswers(end, 10, benchWindow)
	answers.delay = 100 * time.Millisecond
	srv := httptest.NewServer(answers)
	defer srv.Close()
	var wants []Want
	for ns := range 8 {
		for _, w := range answers.workloads {
			w.Namespace = fmt.Sprintf("team-%d", ns)
			wants = append(wants, Want{Ref: w})
		}
	}
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", n), func(b *testing.B) {
			client, err := NewClient(srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			r := NewReader(client, WithClock(func() time.Time { return end }))
			b.ReportAllocs()
			for b.Loop() {
				h, err := ReadAll(context.Background(), r, wants, slog.New(slog.DiscardHandler), WithConcurrency(n))
				if err != nil || h.Workloads() != len(wants) {
					b.Fatalf("ReadAll() = %d workloads, %v; want %d", h.Workloads(), err, len(wants))
				}
			}
		})
	}
}
