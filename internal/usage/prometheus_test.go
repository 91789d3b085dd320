//go:build integration

package usage_test

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

const mib = 1 << 20

// now is the end of the loaded week; the reader's clock stands there.
var now = time.Now().UTC().Truncate(time.Minute)

var (
	promOnce sync.Once
	prom     *testbed.Prometheus
	promErr  error
)

// weekPrometheus starts one real Prometheus for the package's tests, with a
// week of history at one-minute resolution:
//   - shop/web, a Deployment rolled over three times (four ReplicaSets of
//     two pods, owned through kube_pod_owner and kube_replicaset_owner),
//     CPU 0.1 cores and memory 200Mi;
//   - shop/web-api, whose much larger usage must not reach web;
//   - shop/web-db, a DaemonSet whose pod web-db-x2k4p fits web's naming
//     pattern (hash "db"), told apart by kube_pod_owner;
//   - shop/step, 1 core for the first half of the week, 0.2 after;
//   - shop/oom, memory 200Mi and an OOM kill two days ago;
//   - other/web, same name in another namespace, 2 cores.
func weekPrometheus(t *testing.T) *testbed.Prometheus {
	t.Helper()
	promOnce.Do(func() {
		root, err := testbed.RepoRoot()
		if err != nil {
			promErr = err
			return
		}
		tools, err := testbed.EnsureTools(context.Background(), root)
		if err != nil {
			promErr = err
			return
		}
		dir, err := os.MkdirTemp("", "usage-prometheus-")
		if err != nil {
			promErr = err
			return
		}
		prom, promErr = testbed.StartPrometheusWithHistory(context.Background(), tools, dir, weekOfHistory())
	})
	if promErr != nil {
		t.Fatalf("start prometheus: %v", promErr)
	}
	return prom
}

func TestMain(m *testing.M) {
	code := m.Run()
	if prom != nil {
		prom.Stop()
		os.RemoveAll(prom.DataDir)
	}
	os.Exit(code)
}

func weekOfHistory() []testbed.Series {
	start := now.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	add := func(ns string, spans []history.Span, cpu, mem func(time.Time) float64) {
		for _, s := range spans {
			for _, pod := range s.Pods {
				containers = append(containers, history.Container{Namespace: ns, Pod: pod, Container: "app",
					Start: s.Start, End: s.End, CPU: cpu, Memory: mem})
			}
		}
	}
	webRollouts := history.Rollouts("web", 2, 4, start, now)
	add("shop", webRollouts, history.Constant(0.1), history.Constant(200*mib))
	add("shop", history.Rollouts("web-api", 2, 1, start, now), history.Constant(5), history.Constant(4096*mib))
	add("shop", []history.Span{{Start: start, End: now, Pods: []string{"web-db-x2k4p"}}}, history.Constant(3), history.Constant(2048*mib))
	add("shop", history.Rollouts("step", 1, 1, start, now), history.Step(1, 0.2, now.Add(-84*time.Hour)), history.Constant(100*mib))
	oom := history.Rollouts("oom", 1, 1, start, now)
	add("shop", oom, history.Constant(0.1), history.Constant(200*mib))
	add("other", history.Rollouts("web", 2, 1, start, now), history.Constant(2), history.Constant(1024*mib))
	series := history.Series(containers, time.Minute)
	series = append(series, history.OOMKill("shop", oom[0].Pods[0], "app", start, now.Add(-48*time.Hour), now, time.Minute)...)
	series = append(series, history.PodOwner("shop", "web-db-x2k4p", "DaemonSet", "web-db", start, now, time.Minute))
	// web's pods belong to it through their ReplicaSets, while they lived.
	for _, span := range webRollouts {
		rs := span.Pods[0][:strings.LastIndex(span.Pods[0], "-")]
		series = append(series, history.ReplicaSetOwner("shop", rs, "Deployment", "web", span.Start, span.End, time.Minute))
		for _, pod := range span.Pods {
			series = append(series, history.PodOwner("shop", pod, "ReplicaSet", rs, span.Start, span.End, time.Minute))
		}
	}
	return series
}

// countingClient counts the queries the job's own client sends, whole or
// streamed, and its series listings, and keeps the queries and the label
// sets each listing answered.
type countingClient struct {
	*usage.Client
	mu       sync.Mutex
	queries  int
	sent     []string
	listings [][]model.LabelSet
}

func (c *countingClient) count(q string) {
	c.mu.Lock()
	c.queries++
	c.sent = append(c.sent, q)
	c.mu.Unlock()
}

func (c *countingClient) QueryRange(ctx context.Context, q string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	c.count(q)
	return c.Client.QueryRange(ctx, q, r, opts...)
}

func (c *countingClient) QueryRangeSeries(ctx context.Context, q string, r promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	c.count(q)
	return c.Client.QueryRangeSeries(ctx, q, r, each)
}

func (c *countingClient) Series(ctx context.Context, matches []string, start, end time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	sets, warnings, infos, err := c.Client.Series(ctx, matches, start, end, opts...)
	c.mu.Lock()
	c.listings = append(c.listings, sets)
	c.mu.Unlock()
	return sets, warnings, infos, err
}

func newClient(tb testing.TB, address string) *countingClient {
	tb.Helper()
	client, err := usage.NewClient(address, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &countingClient{Client: client}
}

// TestPrometheusClientReadsTheSameWeek reads the week through the job's
// client, which streams, and through Prometheus's client library: the
// same histories, in as many queries.
func TestPrometheusClientReadsTheSameWeek(t *testing.T) {
	library, client := newAPI(t), newClient(t, weekPrometheus(t).URL)
	refs := []usage.WorkloadRef{}
	for _, name := range []string{"web", "web-api", "step", "oom"} {
		refs = append(refs, usage.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: name})
	}
	clock := usage.WithClock(func() time.Time { return now })
	want, err := usage.NewReader(library, clock).Read(t.Context(), "shop", refs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := usage.NewReader(client, clock).Read(t.Context(), "shop", refs)
	if err != nil {
		t.Fatalf("Read() through the client error = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("histories read through the client differ (-client library +client):\n%s", diff)
	}
	if len(got) != len(refs) || client.queries != library.Queries || len(client.listings) != library.Listings || library.Listings != 1 {
		t.Errorf("client read %d workloads in %d queries and %d series listings, want %d in %d and %d (1)",
			len(got), client.queries, len(client.listings), len(refs), library.Queries, library.Listings)
	}
}

// TestPrometheusListsOwnership reads shop/web through the job's client with
// kube-state-metrics' ownership, which it lists from Prometheus's series
// endpoint: no ownership query is sent, the listing covers the read's
// window only, and web-db-x2k4p, which fits web's naming pattern but
// belongs to the DaemonSet web-db by its kube_pod_owner, goes to none.
func TestPrometheusListsOwnership(t *testing.T) {
	address := weekPrometheus(t).URL
	web := usage.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	read := func(t *testing.T, window time.Duration, ownership bool) (map[usage.WorkloadRef]usage.Usage, *countingClient) {
		t.Helper()
		client := newClient(t, address)
		got, err := usage.NewReader(client, usage.WithClock(func() time.Time { return now }), usage.WithWindow(window), usage.WithOwnership(ownership)).
			Read(t.Context(), "shop", []usage.WorkloadRef{web})
		if err != nil {
			t.Fatalf("Read() error = %v", err)
		}
		return got, client
	}
	week, client := read(t, 7*24*time.Hour, true)
	if len(client.listings) != 1 || client.queries != 4 {
		t.Fatalf("Read() sent %d queries and %d series listings, want 4 and 1", client.queries, len(client.listings))
	}
	for _, q := range client.sent {
		if strings.Contains(q, "owner") {
			t.Errorf("Read() sent the ownership query %s, want it listed", q)
		}
	}
	// The same listing counts the CPU series; the ownership series are
	// the others.
	owners := func(sets []model.LabelSet) int {
		n := 0
		for _, s := range sets {
			if s[model.MetricNameLabel] != "container_cpu_usage_seconds_total" {
				n++
			}
		}
		return n
	}
	// web's 8 pods and 4 ReplicaSets, web-db's pod.
	if n := owners(client.listings[0]); n != 13 {
		t.Errorf("the week's listing answered %d ownership series, want 13: %v", n, client.listings[0])
	}
	if cpu := week[web]["app"][corev1.ResourceCPU]; cpu == nil || slices.Contains(cpu.Values, 3) || slices.Max(cpu.Values) > 0.1+1e-9 {
		t.Errorf("web cpu has a sample of web-db's 3 cores, or none at all")
	}
	if unowned, _ := read(t, 7*24*time.Hour, false); !slices.Contains(unowned[web]["app"][corev1.ResourceCPU].Values, 3) {
		t.Error("web without ownership has no sample of web-db's 3 cores; the listing above proves nothing")
	}
	// A day holds the last ReplicaSet's pods and web-db's, not those of
	// the rollouts before it.
	_, day := read(t, 24*time.Hour, true)
	if n := owners(day.listings[0]); n == 0 || n >= 13 {
		t.Errorf("the day's listing answered %d ownership series, want fewer than the week's 13", n)
	}
}

func newAPI(t *testing.T) *testbedtest.CountingAPI {
	t.Helper()
	return testbedtest.NewCountingAPI(t, weekPrometheus(t).URL)
}

func compute(t *testing.T, h *usage.History, res corev1.ResourceName, opts recommend.Options) recommend.Result {
	t.Helper()
	if h == nil {
		t.Fatalf("no %s history", res)
	}
	in := recommend.Input{Resource: res, BufferPercent: 30, Window: h.Window, Now: h.End, OOMKilled: h.OOMKilled, First: h.First, Last: h.Last}
	for i, v := range h.Values {
		in.Samples = append(in.Samples, recommend.Sample{Time: h.Time(i), Value: v})
	}
	out, err := recommend.Compute(in, opts)
	if err != nil || out.Request == nil {
		t.Fatalf("Compute(%s) = %+v, %v; want a request", res, out, err)
	}
	return out
}

func TestPrometheusWeek(t *testing.T) {
	promAPI := newAPI(t)
	reader := usage.NewReader(promAPI, usage.WithClock(func() time.Time { return now }))
	ref := func(kind, name string) usage.WorkloadRef {
		return usage.WorkloadRef{Kind: kind, Namespace: "shop", Name: name}
	}
	web, webAPI, step, oom := ref("Deployment", "web"), ref("Deployment", "web-api"), ref("Deployment", "step"), ref("Deployment", "oom")
	got, err := reader.Read(t.Context(), "shop", []usage.WorkloadRef{web, webAPI, step, oom})
	if err != nil {
		t.Fatalf("Read() error = %v", err)
	}
	// One namespace: ownership listed, and CPU (2,017 points at 5m, one
	// range), memory peaks, OOM kills, startup peaks queried.
	if promAPI.Queries != 4 || promAPI.Listings != 1 {
		t.Errorf("Read() made %d queries and %d series listings, want 4 and 1", promAPI.Queries, promAPI.Listings)
	}

	t.Run("rollouts", func(t *testing.T) {
		cpu := got[web]["app"][corev1.ResourceCPU]
		// Two pods at a time for a week, across four ReplicaSets: about
		// 2 x 2,016 rates (the first minutes of each pod have none yet).
		if cpu == nil || len(cpu.Values) < 2*2000 || cpu.Span() < 7*24*time.Hour-10*time.Minute {
			t.Fatalf("web cpu = %d samples over %s, want the whole week of both pods of all rollouts", len(cpu.Values), cpu.Span())
		}
		mem := got[web]["app"][corev1.ResourceMemory]
		// One peak per hour of the week, the two pods merged: 168 or 169.
		if mem == nil || len(mem.Values) < 168 || len(mem.Values) > 169 {
			t.Fatalf("web memory = %+v, want 168 hourly peaks", mem)
		}
	})
	t.Run("web is not web-api nor web-db", func(t *testing.T) {
		for _, v := range got[web]["app"][corev1.ResourceCPU].Values {
			if v > 0.1+1e-9 {
				t.Fatalf("web has a CPU sample of %v cores, from web-api (5) or web-db (3)", v)
			}
		}
		for _, v := range got[web]["app"][corev1.ResourceMemory].Values {
			if v != 200*mib {
				t.Fatalf("web has a memory peak of %v, want only 200Mi", v)
			}
		}
		// Rates ramp up over the first minutes of a pod, then hold.
		if h := got[webAPI]["app"][corev1.ResourceCPU]; h == nil || slices.Max(h.Values) != 5 {
			t.Errorf("web-api cpu = %d samples, want its own 5 cores", len(h.Values))
		}
	})
	t.Run("without ownership series the pattern takes web-db's pod", func(t *testing.T) {
		// What kube_pod_owner prevents above: web-db-x2k4p fits web's
		// pattern, and web-db is not in the batch to claim it.
		got, err := usage.NewReader(promAPI, usage.WithClock(func() time.Time { return now }), usage.WithOwnership(false)).
			Read(t.Context(), "shop", []usage.WorkloadRef{web})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got[web]["app"][corev1.ResourceCPU].Values, 3) {
			t.Error("web without ownership has no sample of web-db's 3 cores; the ownership case above proves nothing")
		}
	})
	t.Run("constant usage", func(t *testing.T) {
		// 0.1 cores: bucket end 0.110266, above every sample, so the
		// highest sample counts: 0.1 x 1.3 -> 130m. 200Mi likewise
		// (bucket end 205.79Mi): 200Mi x 1.3 -> 260Mi.
		if r := compute(t, got[web]["app"][corev1.ResourceCPU], corev1.ResourceCPU, recommend.Options{}); r.Request.String() != "130m" {
			t.Errorf("web cpu = %s, want 130m", r.Request)
		}
		if r := compute(t, got[web]["app"][corev1.ResourceMemory], corev1.ResourceMemory, recommend.Options{}); r.Request.String() != "260Mi" || r.Evidence.OOMKilled {
			t.Errorf("web memory = %s (oom %v), want 260Mi without an OOM kill", r.Request, r.Evidence.OOMKilled)
		}
	})
	t.Run("step change", func(t *testing.T) {
		// 1 core for 84h, then 0.2: each old sample is 84h older than a new
		// one, so the old level weighs 1 x 2^(-84/24) = 0.0884 against 0.2:
		// 30.6% of the weight, p90 stays in 1 core's bucket, whose end
		// 1.016281 is above the highest sample: 1 x 1.3 -> 1300m. With a
		// 12h half-life it weighs 2^-7 = 0.0078 against 0.2, 3.8%: p90 is
		// 0.2 cores' 0.215786 (below the 1-core samples) x 1.3 -> 285m.
		cpu := got[step]["app"][corev1.ResourceCPU]
		for halfLife, want := range map[time.Duration]string{24 * time.Hour: "1300m", 12 * time.Hour: "285m"} {
			if r := compute(t, cpu, corev1.ResourceCPU, recommend.Options{HalfLife: halfLife}); r.Request.String() != want {
				t.Errorf("step cpu with half-life %s = %s, want %s", halfLife, r.Request, want)
			}
		}
	})
	t.Run("oom", func(t *testing.T) {
		// Peak 200Mi: max(200Mi + 100Mi, 240Mi) = 300Mi, above the 268Mi the
		// percentile gives.
		mem := got[oom]["app"][corev1.ResourceMemory]
		if r := compute(t, mem, corev1.ResourceMemory, recommend.Options{}); r.Request.String() != "300Mi" || !r.Evidence.OOMKilled {
			t.Errorf("oom memory = %s (oom %v), want 300Mi after the OOM kill", r.Request, r.Evidence.OOMKilled)
		}
	})
	t.Run("other namespace", func(t *testing.T) {
		other := usage.WorkloadRef{Kind: "Deployment", Namespace: "other", Name: "web"}
		got, err := reader.Read(t.Context(), "other", []usage.WorkloadRef{other})
		if err != nil {
			t.Fatal(err)
		}
		if h := got[other]["app"][corev1.ResourceCPU]; h == nil || slices.Max(h.Values) != 2 {
			t.Errorf("other/web cpu = %d samples, want its own 2 cores", len(h.Values))
		}
	})
}

func TestPrometheusReadEachCutsAsIfReadAlone(t *testing.T) {
	promAPI := newAPI(t)
	clock := usage.WithClock(func() time.Time { return now })
	ref := func(name string) usage.WorkloadRef {
		return usage.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: name}
	}
	web, step, oom := ref("web"), ref("step"), ref("oom")
	groups := map[usage.Settings][]usage.WorkloadRef{
		{}:                               {web, step, oom},
		{Window: 72 * time.Hour}:         {step, oom},
		{Window: 24 * time.Hour}:         {oom},
		{PeakInterval: 30 * time.Minute}: {web},
		{Window: 72 * time.Hour, PeakInterval: 2 * time.Hour}: {web, oom},
	}
	got, err := usage.NewReader(promAPI, clock).ReadEach(t.Context(), "shop", groups, nil)
	if err != nil {
		t.Fatalf("ReadEach() error = %v", err)
	}
	// One read of the week at 30m peaks: ownership listed, CPU (2,017
	// points), memory (337 peaks), OOM kills, startup peaks; as many as a
	// week at the run's settings, not one read per group.
	if promAPI.Queries != 4 || promAPI.Listings != 1 {
		t.Errorf("ReadEach() made %d queries and %d series listings, want 4 and 1", promAPI.Queries, promAPI.Listings)
	}
	for s, ws := range groups {
		opts := []usage.Option{clock}
		if s.Window > 0 {
			opts = append(opts, usage.WithWindow(s.Window))
		}
		if s.PeakInterval > 0 {
			opts = append(opts, usage.WithPeakInterval(s.PeakInterval))
		}
		alone, err := usage.NewReader(promAPI, opts...).Read(t.Context(), "shop", ws)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[s]) != len(ws) {
			t.Errorf("group %+v has the history of %d workloads, want %d", s, len(got[s]), len(ws))
		}
		if diff := cmp.Diff(alone, got[s]); diff != "" {
			t.Errorf("group %+v differs from a read of its own (-alone +cut):\n%s", s, diff)
		}
	}

	// What makes the cut matter: step used 1 core until 84 hours ago, oom
	// was killed 48 hours ago.
	for _, tt := range []struct {
		settings usage.Settings
		maxCPU   float64
		oom      bool
	}{
		{settings: usage.Settings{}, maxCPU: 1, oom: true},
		{settings: usage.Settings{Window: 72 * time.Hour}, maxCPU: 0.2, oom: true},
		{settings: usage.Settings{Window: 24 * time.Hour}, oom: false},
	} {
		u := got[tt.settings]
		if tt.maxCPU != 0 {
			if h := u[step]["app"][corev1.ResourceCPU]; h == nil || math.Abs(slices.Max(h.Values)-tt.maxCPU) > 1e-9 {
				t.Errorf("step over %s: no CPU history or a highest other than %v", tt.settings.Window, tt.maxCPU)
			}
		}
		if h := u[oom]["app"][corev1.ResourceMemory]; h == nil || h.OOMKilled != tt.oom {
			t.Errorf("oom over %s: no memory history or OOM killed other than %v", tt.settings.Window, tt.oom)
		}
	}
	if h := got[usage.Settings{Window: 72 * time.Hour, PeakInterval: 2 * time.Hour}][web]["app"][corev1.ResourceMemory]; h == nil || len(h.Values) != 37 {
		t.Errorf("web's 2h peaks over 72h: no memory history or not 37 peaks")
	}
}
