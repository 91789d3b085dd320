//go:build integration

package usage_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// queryLog records the queries a Client sends.
type queryLog struct {
	*usage.Client
	queries []string
}

func (q *queryLog) QueryRangeSeries(ctx context.Context, query string, r promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	q.queries = append(q.queries, query)
	return q.Client.QueryRangeSeries(ctx, query, r, each)
}

// TestPrometheusMergesAContainersCPUSeriesAsMaxBy reads a container with
// several CPU series on a real Prometheus (a second instance with other
// values, and a restart's new cgroup halfway): the rates the reader merges
// itself, where the ownership listing counted the series, equal to the
// sample what max by (pod, container) answers without the listing, at the
// resolution measured from the data; and they are not those of one series.
func TestPrometheusMergesAContainersCPUSeriesAsMaxBy(t *testing.T) {
	start := now.Add(-24 * time.Hour)
	pod := history.Rollouts("web", 1, 1, start, now)[0].Pods[0]
	app := history.Series([]history.Container{{Namespace: "dup", Pod: pod, Container: "app", Start: start, End: now,
		CPU: history.Bursts(0.15, 2, 4, 2*time.Minute), Memory: history.Constant(200 * mib)}}, time.Minute)
	var series []testbed.Series
	series = append(series, app...)
	// A second instance of the same job, busier at night, idler in the
	// day (another job's series would make the container refused; see
	// TestPrometheusRefusesForeignSeries).
	for _, s := range history.Series([]history.Container{{Namespace: "dup", Pod: pod, Container: "app", Start: start, End: now,
		CPU: history.DailyPeak(0.5, 0.1, 9, 17)}}, time.Minute) {
		s.Labels = maps.Clone(s.Labels)
		s.Labels["instance"] = "node-2"
		series = append(series, s)
	}
	// The restart: a new cgroup's counter from noon on, next to the old.
	for _, s := range history.Series([]history.Container{{Namespace: "dup", Pod: pod, Container: "app", Start: start.Add(12 * time.Hour), End: now,
		CPU: history.Constant(1.2)}}, time.Minute) {
		s.Labels = maps.Clone(s.Labels)
		s.Labels["id"] = "/kubepods/pod-uid/restarted"
		series = append(series, s)
	}
	series = append(series, history.Series([]history.Container{{Namespace: "dup", Pod: pod, Container: "sidecar", Start: start, End: now,
		CPU: history.Constant(0.01), Memory: history.Constant(20 * mib)}}, time.Minute)...)
	series = append(series, history.PodOwner("dup", pod, "ReplicaSet", strings.TrimSuffix(pod, pod[strings.LastIndex(pod, "-"):]), start, now, time.Minute),
		history.ReplicaSetOwner("dup", strings.TrimSuffix(pod, pod[strings.LastIndex(pod, "-"):]), "Deployment", "web", start, now, time.Minute))

	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools, err := testbed.EnsureTools(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	prom, err := testbed.StartPrometheusWithHistory(context.Background(), tools, t.TempDir(), series)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()

	web := usage.WorkloadRef{Kind: "Deployment", Namespace: "dup", Name: "web"}
	read := func(owners bool, window time.Duration) (usage.Usage, []string) {
		t.Helper()
		client, err := usage.NewClient(prom.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		log := &queryLog{Client: client}
		got, err := usage.NewReader(log, usage.WithWindow(window), usage.WithStep(0), usage.WithRateWindow(0),
			usage.WithOwnership(owners), usage.WithClock(func() time.Time { return now })).
			Read(context.Background(), "dup", []usage.WorkloadRef{web})
		if err != nil {
			t.Fatal(err)
		}
		return got[web], log.queries
	}
	cpuQuery := func(queries []string) string {
		for _, q := range queries {
			if strings.Contains(q, "rate(container_cpu_usage_seconds_total") {
				return q
			}
		}
		return ""
	}
	merged, queries := read(true, 23*time.Hour)
	byPrometheus, theirs := read(false, 23*time.Hour)
	if q := cpuQuery(queries); !strings.HasPrefix(q, "rate(") {
		t.Errorf("CPU query with the listing: %s, want the rates alone", q)
	}
	if q := cpuQuery(theirs); !strings.HasPrefix(q, "max by (pod, container, job, metrics_path) (rate(") {
		t.Errorf("CPU query without the listing: %s, want max by (pod, container, job, metrics_path)", q)
	}
	for _, container := range []string{"app", "sidecar"} {
		m, p := merged[container][corev1.ResourceCPU], byPrometheus[container][corev1.ResourceCPU]
		if m == nil || p == nil || len(p.Values) < 23*60 || !m.Equal(p) {
			t.Errorf("%s: merged by the reader %d samples, by max by %d; want the same, every minute of 23h", container, samples(m), samples(p))
		}
		if m != nil && m.Resolution.Step != time.Minute || m.Resolution.RateWindow != 2*time.Minute {
			t.Errorf("%s read at %v, want a 2m rate every 1m, from the 1m scrape", container, m.Resolution)
		}
	}
	// Neither scrape job's series alone: both and the restart take part.
	if h := merged["app"][corev1.ResourceCPU]; h != nil {
		seen := map[string]bool{}
		for _, v := range h.Values {
			switch {
			case v > 1.9:
				seen["bursts"] = true
			case v > 1.1 && v < 1.3:
				seen["restart"] = true
			case v > 0.45 && v < 0.55:
				seen["cadvisor's night"] = true
			}
		}
		if len(seen) != 3 {
			t.Errorf("app's merged CPU shows %v, want the bursts, the restart's 1.2 and cadvisor's 0.5 at night", seen)
		}
	}
}

// BenchmarkCPUQueryCost replays one namespace's CPU query on a real
// Prometheus (40 pods of 2 containers, a week scraped every minute, as a
// namespace of make bench), the three ways in turn within each iteration so
// that a shared machine's load falls on all alike: as before issue 25 (a
// 5m rate every 5m, max by), at the data's resolution with max by (a 2m
// rate every 1m), the same grouped by source as well (job and
// metrics_path: the reader's query without a listing), and at that
// resolution as the reader asks for it with a listing, the rates alone and
// merged by the reader. It reports each one's seconds,
// the ratios to the first, and the points and bytes each returned.
func BenchmarkCPUQueryCost(b *testing.B) {
	end := now
	start := end.Add(-7*24*time.Hour - time.Hour)
	var containers []history.Container
	for w := range 20 {
		for _, span := range history.Rollouts(fmt.Sprintf("svc-%02d", w), 2, 1, start, end) {
			for _, pod := range span.Pods {
				containers = append(containers,
					history.Container{Namespace: "bench", Pod: pod, Container: "app", Start: span.Start, End: span.End,
						CPU: history.DailyPeak(0.05+0.01*float64(w%10), 0.2+0.04*float64(w%10), 9, 17)},
					history.Container{Namespace: "bench", Pod: pod, Container: "sidecar", Start: span.Start, End: span.End,
						CPU: history.Constant(0.005 + 0.001*float64(w%5))})
			}
		}
	}
	dir := b.TempDir()
	if err := history.WriteBlock(context.Background(), dir, containers, time.Minute); err != nil {
		b.Fatal(err)
	}
	root, err := testbed.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	tools, err := testbed.EnsureTools(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	prom, err := testbed.StartPrometheus(context.Background(), tools, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer prom.Stop()

	sel := `container!="",container!="POD",namespace="bench"`
	week := func(step time.Duration) promv1.Range {
		return promv1.Range{Start: end.Add(-7 * 24 * time.Hour), End: end, Step: step}
	}
	ways := []struct {
		name  string
		query string
		rng   promv1.Range
	}{
		{"5m-maxby", `max by (pod, container) (rate(container_cpu_usage_seconds_total{` + sel + `}[5m]))`, week(5 * time.Minute)},
		{"1m-maxby", `max by (pod, container) (rate(container_cpu_usage_seconds_total{` + sel + `}[2m]))`, week(time.Minute)},
		// As the reader asks without a listing since the sources count.
		{"1m-maxby-source", `max by (pod, container, job, metrics_path) (rate(container_cpu_usage_seconds_total{` + sel + `}[2m]))`, week(time.Minute)},
		{"1m-rates", `rate(container_cpu_usage_seconds_total{` + sel + `}[2m])`, week(time.Minute)},
	}
	for _, compressed := range []bool{true, false} {
		b.Run(fmt.Sprintf("gzip=%v", compressed), func(b *testing.B) {
			counted := &countingTransport{base: &http.Transport{DisableCompression: !compressed}}
			client, err := usage.NewClient(prom.URL, &http.Client{Transport: counted})
			if err != nil {
				b.Fatal(err)
			}
			took := make([]time.Duration, len(ways))
			points := make([]int, len(ways))
			bytes := make([]int64, len(ways))
			for i := 0; b.Loop(); i++ {
				for j := range ways {
					way := ways[(i+j)%len(ways)] // each first in turn
					k := (i + j) % len(ways)
					n := 0
					counted.bytes = 0
					began := time.Now()
					if _, err := client.QueryRangeSeries(b.Context(), way.query, way.rng, func(s *model.SampleStream) error {
						n += len(s.Values)
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					took[k] += time.Since(began)
					points[k], bytes[k] = n, counted.bytes
				}
			}
			for k, way := range ways {
				b.ReportMetric(took[k].Seconds()/float64(b.N), way.name+"-s/op")
				b.ReportMetric(float64(points[k]), way.name+"-points")
				b.ReportMetric(float64(bytes[k])/(1<<20), way.name+"-MiB")
			}
			b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "maxby-1m/5m")
			b.ReportMetric(took[2].Seconds()/took[1].Seconds(), "maxby-source/maxby")
			b.ReportMetric(took[3].Seconds()/took[0].Seconds(), "rates-1m/5m")
		})
	}
}

// countingTransport counts the bytes of the answers' bodies as they came
// over the wire, compressed or not.
type countingTransport struct {
	base  *http.Transport
	bytes int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !c.base.DisableCompression {
		// Asked for here, so that the body is counted before it is
		// inflated; the transport inflates only what it asked for itself.
		r = r.Clone(r.Context())
		r.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		resp.Body, err = newGzipBody(resp.Body)
		if err != nil {
			return nil, err
		}
		resp.Header.Del("Content-Encoding")
	}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	*c.n += int64(n)
	return n, err
}

// gzipBody inflates a body and closes both.
type gzipBody struct {
	*gzip.Reader
	body io.ReadCloser
}

func newGzipBody(body io.ReadCloser) (io.ReadCloser, error) {
	z, err := gzip.NewReader(body)
	if err != nil {
		body.Close()
		return nil, err
	}
	return &gzipBody{Reader: z, body: body}, nil
}

func (g *gzipBody) Close() error {
	g.Reader.Close()
	return g.body.Close()
}
