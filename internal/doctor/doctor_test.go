package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/job"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// item is a valid ResourceRecommend on Deployment name with one container,
// app, and the extensions given as JSON.
func item(t *testing.T, namespace, name, extensions string) collect.Item {
	t.Helper()
	it := collect.Item{Namespace: namespace, Name: name,
		Target: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
		Workload: &collect.Workload{ObjectRef: collect.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: namespace, Name: name},
			Containers: []collect.Container{{Name: "app"}}},
		Policies: []collect.ContainerPolicy{{ContainerName: "app", Resources: []collect.ResourcePolicy{
			{Resource: corev1.ResourceCPU, BufferPercent: 10}, {Resource: corev1.ResourceMemory, BufferPercent: 10}}}},
	}
	it.Extensions, it.Invalid = collect.ParseExtensions(&runtime.RawExtension{Raw: []byte(extensions)})
	if it.Invalid != nil {
		t.Fatalf("extensions %s: %v", extensions, it.Invalid)
	}
	return it
}

// items are those of a cluster with two namespaces: in shop, web on the
// run's window, batch on 240h and greedy, invalid; in api, gateway with a
// memory peak interval of its own.
func items(t *testing.T) []collect.Item {
	greedy := item(t, "shop", "greedy", `{}`)
	greedy.Invalid = &collect.ValidationError{Code: "ResourceBuffersUnsupported", Message: "buffer too large"}
	return []collect.Item{
		item(t, "shop", "web", `{}`), item(t, "shop", "batch", `{"window": "240h"}`), greedy,
		item(t, "api", "gateway", `{"memoryPeakInterval": "30m"}`),
	}
}

// collector hands out fixed items, or fails.
type collector struct {
	items []collect.Item
	err   error
}

func (c collector) Collect(context.Context) ([]collect.Item, error) { return c.items, c.err }

func (collector) WriteStatus(context.Context, plan.Item) error { return nil }

// prometheus answers every CPU and memory query with one series per pod
// of the namespace it selects, sampled at the range's start and end, and
// no OOM kill. It records what it is sent.
type prometheus struct {
	pods  map[string][]string // namespace to pods
	err   error
	mu    sync.Mutex
	calls []string
}

var namespaceMatcher = regexp.MustCompile(`namespace=("[^"]*")`)

func (p *prometheus) QueryRange(_ context.Context, q string, r promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	p.mu.Lock()
	p.calls = append(p.calls, q)
	p.mu.Unlock()
	if p.err != nil {
		return nil, nil, nil, p.err
	}
	m := model.Matrix{}
	if strings.Contains(q, "OOMKilled") {
		return m, nil, nil, nil
	}
	ns, _ := strconv.Unquote(namespaceMatcher.FindStringSubmatch(q)[1])
	for _, pod := range p.pods[ns] {
		m = append(m, &model.SampleStream{
			Metric: model.Metric{"pod": model.LabelValue(pod), "container": "app"},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(r.Start.UnixNano()), Value: 0.1},
				{Timestamp: model.TimeFromUnixNano(r.End.UnixNano()), Value: 0.2}},
		})
	}
	return m, nil, nil, nil
}

// listingPrometheus is prometheus that lists series too: every listing is
// answered with a kube_pod_owner series of no owner for each pod of the
// namespace, and recorded as "series" and its selectors.
type listingPrometheus struct{ *prometheus }

func (p listingPrometheus) Series(_ context.Context, matches []string, start, end time.Time, _ ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	q := "series " + strings.Join(matches, " ")
	p.mu.Lock()
	p.calls = append(p.calls, q)
	p.mu.Unlock()
	if p.err != nil {
		return nil, nil, nil, p.err
	}
	ns, _ := strconv.Unquote(namespaceMatcher.FindStringSubmatch(q)[1])
	var sets []model.LabelSet
	for _, pod := range p.pods[ns] {
		sets = append(sets, model.LabelSet{"__name__": "kube_pod_owner", "namespace": model.LabelValue(ns), "pod": model.LabelValue(pod),
			"owner_kind": "<none>", "owner_name": "<none>"})
	}
	return sets, nil, nil, nil
}

// byNamespace groups queries under the namespace they select.
func byNamespace(queries []string) map[string][]string {
	out := map[string][]string{}
	for _, q := range queries {
		ns, _ := strconv.Unquote(namespaceMatcher.FindStringSubmatch(q)[1])
		out[ns] = append(out[ns], q)
	}
	return out
}

// apiserver answers its version, or fails, and reviews access: every verb
// is allowed but those denied.
type apiserver struct {
	err    error
	denied map[string]string // verb to reason
	mu     sync.Mutex
	asked  []string
}

func (a *apiserver) ServerVersionWithContext(context.Context) (*version.Info, error) {
	if a.err != nil {
		return nil, a.err
	}
	return &version.Info{GitVersion: "v1.33.1"}, nil
}

func (a *apiserver) Create(_ context.Context, r *authorizationv1.SelfSubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error) {
	attrs := r.Spec.ResourceAttributes
	a.mu.Lock()
	a.asked = append(a.asked, attrs.Verb+" "+attrs.Resource+"/"+attrs.Subresource)
	a.mu.Unlock()
	out := r.DeepCopy()
	reason, denied := a.denied[attrs.Verb]
	out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: !denied, Reason: reason}
	return out, nil
}

var _ authorizationclient.SelfSubjectAccessReviewInterface = (*apiserver)(nil)

var (
	now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// readerOptions are a run's reader settings, on a fixed clock and
	// without the ownership query.
	readerOptions = []usage.Option{usage.WithClock(func() time.Time { return now }), usage.WithOwnership(false)}
	pods          = map[string][]string{"shop": {"web-6d4b9c8f6d-bcdfg", "batch-7f8c9d-xzwvb"}, "api": {"gateway-5c6d7f-qwrtz"}}
)

// sentLine is a line of doctor's output naming a query.
var sentLine = regexp.MustCompile(`^ {8}namespace (\S+): (\d+) series over (\S+)(?: at (\S+))? <- (.*)$`)

// TestQueriesAreARunsQueries runs doctor and a dry run on the same
// cluster: doctor shows, namespace by namespace and sorted, exactly the
// queries the run sends, with the longest window a ResourceRecommend of
// the namespace asks for.
func TestQueriesAreARunsQueries(t *testing.T) {
	tests := []struct {
		name string
		// api is a Prometheus of pods recording what it is sent.
		api func(*prometheus) usage.RangeQuerier
		// ownership reads kube-state-metrics' ownership.
		ownership bool
		// listed is the ownership listing shown per namespace, if any.
		listed bool
	}{
		{name: "without ownership", api: func(p *prometheus) usage.RangeQuerier { return p }},
		{name: "ownership queried", ownership: true, api: func(p *prometheus) usage.RangeQuerier { return p }},
		{name: "ownership listed", ownership: true, listed: true, api: func(p *prometheus) usage.RangeQuerier { return listingPrometheus{p} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testQueriesAreARunsQueries(t, tt.api, tt.ownership, tt.listed)
		})
	}
}

func testQueriesAreARunsQueries(t *testing.T, api func(*prometheus) usage.RangeQuerier, ownership, listed bool) {
	ctx := context.Background()
	options := append(slices.Clone(readerOptions), usage.WithOwnership(ownership))
	runProm := &prometheus{pods: pods}
	if _, err := job.Run(ctx, job.Config{DryRun: true}, collector{items: items(t)}, usage.NewReader(api(runProm), options...),
		slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("job.Run() error = %v", err)
	}
	ran := byNamespace(runProm.calls)

	var out bytes.Buffer
	doctorProm := &prometheus{pods: pods}
	err := Run(ctx, Config{APIServer: "https://apiserver:6443", Version: &apiserver{}, Access: &apiserver{},
		Collector: collector{items: items(t)}, PrometheusURL: "https://user:s3cr3t@prometheus.example", Prometheus: api(doctorProm),
		ReaderOptions: options}, &out)
	if err != nil {
		t.Fatalf("Run() error = %v\n%s", err, out.String())
	}
	if !slices.Equal(doctorProm.calls, runProm.calls) {
		t.Errorf("doctor sent\n%s\nwant what the run sent\n%s", strings.Join(doctorProm.calls, "\n"), strings.Join(runProm.calls, "\n"))
	}
	listings := 0
	for _, c := range runProm.calls {
		if strings.HasPrefix(c, "series ") {
			listings++
		}
	}
	if want := map[bool]int{false: 0, true: 2}[listed]; listings != want {
		t.Errorf("the run sent %d series listings, want %d:\n%s", listings, want, strings.Join(runProm.calls, "\n"))
	}

	shown := map[string][]string{}
	spans := map[string]string{}
	var order []string
	for _, line := range strings.Split(out.String(), "\n") {
		m := sentLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !slices.Contains(order, m[1]) {
			order = append(order, m[1])
		}
		shown[m[1]] = append(shown[m[1]], m[5])
		if strings.Contains(m[5], "rate(container_cpu_usage_seconds_total") {
			spans[m[1]] = m[3] + " at " + m[4]
		}
	}
	if want := []string{"api", "shop"}; !slices.Equal(order, want) {
		t.Errorf("namespaces shown in order %v, want %v", order, want)
	}
	for ns, queries := range ran {
		distinct := slices.Compact(slices.Sorted(slices.Values(queries)))
		if !slices.Equal(shown[ns], distinct) {
			t.Errorf("namespace %s: doctor shows\n%s\nwant the run's queries, sorted\n%s", ns, strings.Join(shown[ns], "\n"), strings.Join(distinct, "\n"))
		}
		want := "ok    namespace " + ns + ": " + strconv.Itoa(len(queries)) + " queries\n"
		if listed {
			want = "ok    namespace " + ns + ": " + strconv.Itoa(len(queries)-1) + " queries and a series listing\n"
			// The pods' ownership and the CPU series, over the namespace's
			// longest window and the CPU's first rate window and step before it.
			window := map[string]string{"shop": "10d10m", "api": "7d10m"}[ns]
			line := fmt.Sprintf(`namespace %s: %d series over %s <- series {__name__=~"kube_pod_owner|kube_replicaset_owner|kube_job_owner",namespace="%s"} container_cpu_usage_seconds_total{`,
				ns, len(pods[ns]), window, ns)
			if !strings.Contains(out.String(), line) {
				t.Errorf("output lacks %q:\n%s", line, out.String())
			}
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// batch's 240h in shop; the run's week in api; both at the 5m step.
	if want := map[string]string{"shop": "10d at 5m", "api": "1w at 5m"}; spans["shop"] != want["shop"] || spans["api"] != want["api"] {
		t.Errorf("CPU queries over %v, want %v", spans, want)
	}
	for _, want := range []string{
		"\nprometheus https://prometheus.example\n",
		"ok    4 ResourceRecommends in scope, 1 invalid, targets listed",
		"shop/greedy  invalid: ResourceBuffersUnsupported: buffer too large",
		"shop/batch  Deployment batch, containers app, window 240h0m0s",
		"api/gateway  Deployment gateway, containers app, memory peak interval 30m0s",
		"shop/web app cpu: ",
		"api/gateway app memory: ",
		"no git-url set",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "s3cr3t") {
		t.Errorf("output shows a credential:\n%s", out.String())
	}
}

// TestFailures checks that each failing check says so, goes on with what
// it can, and returns the cause.
func TestFailures(t *testing.T) {
	refused := errors.New("connection refused")
	tests := []struct {
		name        string
		api         *apiserver
		writeStatus bool
		collect     collector
		prom        *prometheus
		want        []string
		wantErr     error // nil: any error
		wantNone    bool  // no failure at all
	}{
		{name: "all well", api: &apiserver{}, collect: collector{items: items(t)}, prom: &prometheus{pods: pods}, wantNone: true,
			want: []string{"ok    reachable, Kubernetes v1.33.1", "ok    allowed: list resourcerecommends.recommendation.katalyst.kubewharf.io"}},
		{name: "apiserver unreachable", api: &apiserver{err: refused}, collect: collector{items: items(t)}, prom: &prometheus{pods: pods}, wantErr: refused,
			want: []string{"FAIL  reaching the apiserver: connection refused", "no valid ResourceRecommend: nothing to query"}},
		{name: "list not allowed", api: &apiserver{denied: map[string]string{"list": "no RBAC rule"}}, collect: collector{items: items(t)}, prom: &prometheus{pods: pods},
			want: []string{"FAIL  list resourcerecommends.recommendation.katalyst.kubewharf.io: not allowed: no RBAC rule"}},
		{name: "status not writable", api: &apiserver{denied: map[string]string{"patch": ""}}, writeStatus: true, collect: collector{items: items(t)}, prom: &prometheus{pods: pods},
			want: []string{"FAIL  patch resourcerecommends/status.recommendation.katalyst.kubewharf.io: not allowed\n"}},
		{name: "listing fails", api: &apiserver{}, collect: collector{err: refused}, prom: &prometheus{pods: pods}, wantErr: refused,
			want: []string{"FAIL  listing ResourceRecommends and their targets: connection refused"}},
		{name: "prometheus unreachable", api: &apiserver{}, collect: collector{items: items(t)}, prom: &prometheus{err: refused}, wantErr: refused,
			want: []string{"FAIL  reading the history of namespace api: querying cpu in namespace api: connection refused",
				"FAIL  reading the history of namespace shop:", "namespace shop: 0 series over"}},
		{name: "no series", api: &apiserver{}, collect: collector{items: items(t)}, prom: &prometheus{pods: map[string][]string{"shop": pods["shop"]}},
			want: []string{"FAIL  api/gateway: no series matched its pods", "ok    namespace shop: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(context.Background(), Config{APIServer: "https://apiserver:6443", Version: tt.api, Access: tt.api, WriteStatus: tt.writeStatus,
				Collector: tt.collect, PrometheusURL: "http://prometheus:9090", Prometheus: tt.prom, ReaderOptions: readerOptions}, &out)
			switch {
			case tt.wantNone && err != nil:
				t.Errorf("Run() error = %v, want none", err)
			case !tt.wantNone && err == nil:
				t.Errorf("Run() error = nil, want one")
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Run() error = %v, want it to wrap %v", err, tt.wantErr)
			}
			if got := strings.Count(out.String(), "FAIL"); tt.wantNone != (got == 0) {
				t.Errorf("%d failures shown:\n%s", got, out.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestRepository clones the base branch as a run would.
func TestRepository(t *testing.T) {
	url := testbedtest.FileRemote(t, map[string]string{"apps/web.yaml": "cpu: 1\n"})
	tests := []struct {
		name string
		git  gitops.Options
		want []string
	}{
		{name: "cloned", git: gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main"},
			want: []string{"\nrepository " + url + "\n", "ok    cloned base branch main at ", "push branch recommend-job/main does not exist yet"}},
		{name: "no such branch", git: gitops.Options{URL: url, BaseBranch: "production", PushBranch: "recommend-job/production"},
			want: []string{"FAIL  cloning: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(context.Background(), Config{Version: &apiserver{}, Access: &apiserver{}, Collector: collector{},
				Prometheus: &prometheus{}, Git: tt.git}, &out)
			if wantErr := strings.Contains(strings.Join(tt.want, ""), "FAIL"); (err != nil) != wantErr {
				t.Errorf("Run() error = %v, want an error: %v", err, wantErr)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
