package usage

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

func TestPodNamePattern(t *testing.T) {
	tests := []struct {
		kind, name string
		match      []string
		noMatch    []string
	}{
		{kind: "Deployment", name: "web",
			match: []string{"web-7d9f8c6b5-x2k4p", "web-5f6d-b2c4d"},
			noMatch: []string{"web-api-7d9f8c6b5-x2k4p", "web-x2k4p", "web", "aweb-7d9f8c6b5-x2k4p", "web-7d9f8c6b5-x2k4p-extra",
				"web-migrate-x2k4p", "web-28312345-x2k4p", "web-5f6d-abcde"}},
		{kind: "Deployment", name: "my.app",
			match:   []string{"my.app-7d9f8c6b5-x2k4p"},
			noMatch: []string{"myxapp-7d9f8c6b5-x2k4p"}},
		{kind: "StatefulSet", name: "db",
			match:   []string{"db-0", "db-12"},
			noMatch: []string{"db-a", "db-0-x2k4p", "db-primary-0"}},
		{kind: "DaemonSet", name: "agent",
			match:   []string{"agent-x2k4p"},
			noMatch: []string{"agent-7d9f8c6b5-x2k4p", "agent-1"}},
		{kind: "CronJob", name: "report",
			match:   []string{"report-29012345-x2k4p"},
			noMatch: []string{"report-x2k4p", "report-daily-29012345-x2k4p"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			re := regexp.MustCompile("^(?:" + PodNamePattern(tt.kind, tt.name) + ")$")
			for _, p := range tt.match {
				if !re.MatchString(p) {
					t.Errorf("%s does not match %s", re, p)
				}
			}
			for _, p := range tt.noMatch {
				if re.MatchString(p) {
					t.Errorf("%s matches %s", re, p)
				}
			}
		})
	}
}

// recordingAPI answers range queries from canned matrices and records them.
type recordingAPI struct {
	queries []string
	ranges  []promv1.Range
	answer  func(query string) model.Matrix
}

func (r *recordingAPI) QueryRange(_ context.Context, query string, rng promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	r.queries = append(r.queries, query)
	r.ranges = append(r.ranges, rng)
	return r.answer(query), nil, nil, nil
}

func series(pod, container string, values ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(pod), "container": model.LabelValue(container)}}
	for i, v := range values {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(i * 60000), Value: model.SampleValue(v)})
	}
	return s
}

func TestReaderBatchesPerNamespace(t *testing.T) {
	api := &recordingAPI{answer: func(q string) model.Matrix {
		if strings.Contains(q, "kube_pod_owner") || strings.Contains(q, "OOMKilled") {
			return nil
		}
		if strings.Contains(q, "cpu") {
			return model.Matrix{
				series("web-bbbb-22222", "app", 0.1, 0.2),
				series("web-cccc-44444", "app", 0.3), // an older ReplicaSet's pod
				series("web-api-dddd-55555", "app", 9),
				series("api-ffff-66666", "api", 0.5),
			}
		}
		return model.Matrix{series("web-bbbb-22222", "app", 100)}
	}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := NewReader(api, WithWindow(48*time.Hour), WithStep(time.Minute), WithClock(func() time.Time { return now }))
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	apiRef := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "api"}

	got, err := r.Read(context.Background(), "shop", []WorkloadRef{web, apiRef})
	if err != nil {
		t.Fatalf("Read() error = %v", err)
	}
	if len(api.queries) != 5 {
		t.Errorf("Read() made %d queries, want 5 (ownership, cpu, memory, OOM kills and startup peaks for the namespace)", len(api.queries))
	}
	for i, q := range api.queries {
		if !strings.Contains(q, `namespace="shop"`) {
			t.Errorf("query %s is not for the namespace", q)
		}
		if i > 0 && (!strings.Contains(q, `pod=~"api-`) || !strings.Contains(q, `|web-`)) {
			t.Errorf("query %s does not select both workloads of the namespace", q)
		}
	}
	if rng := api.ranges[1]; !rng.End.Equal(now) || !rng.Start.Equal(now.Add(-48*time.Hour)) || rng.Step != time.Minute {
		t.Errorf("range = %+v, want the last 48h at 1m", rng)
	}
	cpu := got[web]["app"][corev1.ResourceCPU]
	if cpu == nil || len(cpu.Values) != 3 {
		t.Fatalf("web cpu history = %+v, want the 3 samples of both web pods and none of web-api", cpu)
	}
	if !cpu.End.Equal(now) || cpu.Window != 48*time.Hour {
		t.Errorf("web cpu window = %s ending %v, want 48h ending %v", cpu.Window, cpu.End, now)
	}
	// Samples are a minute apart from the epoch: the first at 0, the last at 1m.
	if cpu.Span() != time.Minute || !cpu.First.Equal(time.Unix(0, 0)) {
		t.Errorf("web cpu span = %v from %v, want 1m from the epoch", cpu.Span(), cpu.First)
	}
	if mem := got[web]["app"][corev1.ResourceMemory]; mem == nil || len(mem.Values) != 1 || mem.Values[0] != 100 {
		t.Errorf("web memory history = %+v, want [100]", mem)
	}
	if cpu := got[apiRef]["api"][corev1.ResourceCPU]; cpu == nil || len(cpu.Values) != 1 || cpu.Values[0] != 0.5 {
		t.Errorf("api cpu history = %+v, want [0.5]", cpu)
	}
}

func TestReaderGivesAPodToTheMostSpecificWorkload(t *testing.T) {
	// web-db-x2k4p could be a pod of Deployment web (hash "db") or of
	// DaemonSet web-db; the longer name wins.
	api := &recordingAPI{answer: func(string) model.Matrix {
		return model.Matrix{series("web-db-x2k4p", "c", 1), series("web-7c9d5-x2k4p", "c", 2)}
	}}
	web := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"}
	webDB := WorkloadRef{Kind: "DaemonSet", Namespace: "ns", Name: "web-db"}
	got, err := NewReader(api, WithWindow(time.Hour)).Read(context.Background(), "ns", []WorkloadRef{web, webDB})
	if err != nil {
		t.Fatal(err)
	}
	if h := got[webDB]["c"][corev1.ResourceCPU]; h == nil || len(h.Values) != 1 || h.Values[0] != 1 {
		t.Errorf("web-db history = %+v, want its own pod's [1]", h)
	}
	if h := got[web]["c"][corev1.ResourceCPU]; h == nil || len(h.Values) != 1 || h.Values[0] != 2 {
		t.Errorf("web history = %+v, want [2] only", h)
	}
}

func TestReaderSplitsLongWindows(t *testing.T) {
	api := &recordingAPI{answer: func(string) model.Matrix { return nil }}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// 14 days at 1m are 20,161 points: two ranges of at most 11,000.
	r := NewReader(api, WithWindow(14*24*time.Hour), WithStep(time.Minute), WithClock(func() time.Time { return now }))
	if _, err := r.Read(context.Background(), "ns", []WorkloadRef{{Kind: "Deployment", Namespace: "ns", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	// Ownership, 2 ranges of cpu, 1 of hourly memory peaks (337 points),
	// OOM kills, startup peaks.
	if len(api.ranges) != 6 {
		t.Fatalf("made %d queries, want 6", len(api.ranges))
	}
	if api.ranges[3].Step != time.Hour || !api.ranges[3].Start.Equal(now.Add(-14*24*time.Hour)) || !api.ranges[3].End.Equal(now) {
		t.Errorf("memory range = %+v, want the whole window at 1h", api.ranges[3])
	}
	cpu := api.ranges[1:3]
	if !cpu[0].Start.Equal(now.Add(-14*24*time.Hour)) || !cpu[1].End.Equal(now) {
		t.Errorf("ranges span %v to %v, want the whole window", cpu[0].Start, cpu[2].End)
	}
	points := 0
	for i, rng := range cpu {
		n := int(rng.End.Sub(rng.Start)/time.Minute) + 1
		if n > maxPointsPerSeries {
			t.Errorf("range %d has %d points, more than %d", i, n, maxPointsPerSeries)
		}
		if i > 0 && !rng.Start.Equal(cpu[i-1].End.Add(time.Minute)) {
			t.Errorf("range %d starts at %v, want one step after %v", i, rng.Start, cpu[i-1].End)
		}
		points += n
	}
	if points != 14*24*60+1 {
		t.Errorf("ranges hold %d points, want %d", points, 14*24*60+1)
	}
}

func TestReaderRejectsOtherNamespace(t *testing.T) {
	r := NewReader(&recordingAPI{answer: func(string) model.Matrix { return nil }})
	if _, err := r.Read(context.Background(), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "other", Name: "x"}}); err == nil {
		t.Error("Read() with a workload of another namespace: error = nil")
	}
}

func TestReaderMergesPeaksAndFindsOOMKills(t *testing.T) {
	// Two pods of web at the same hours: the peak per hour is the higher.
	at := func(pod string, values ...float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(pod), "container": "app"}}
		for i, v := range values {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(int64(i) * 3600000), Value: model.SampleValue(v)})
		}
		return s
	}
	api := &recordingAPI{answer: func(q string) model.Matrix {
		switch {
		case strings.Contains(q, "OOMKilled"):
			return model.Matrix{at("web-bbbb-22222", 1)}
		case strings.Contains(q, "working_set"):
			return model.Matrix{at("web-bbbb-22222", 100, 300), at("web-bbbb-55555", 200, 50), at("web-bbbb-44444", 0, 0, 70)}
		}
		return nil
	}}
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	got, err := NewReader(api, WithLabelFilter(`cluster="prod"`)).Read(context.Background(), "shop", []WorkloadRef{web})
	if err != nil {
		t.Fatal(err)
	}
	mem := got[web]["app"][corev1.ResourceMemory]
	// Hour 0: max(100, 200, 0) = 200; hour 1: max(300, 50, 0) = 300; hour 2: 70.
	if mem == nil || !slices.Equal(mem.Values, []float64{200, 300, 70}) || !mem.OOMKilled || mem.Span() != 2*time.Hour {
		t.Fatalf("web memory = %+v, want peaks [200 300 70] over 2h with an OOM kill", mem)
	}
	if !mem.Time(1).Equal(time.UnixMilli(3600000)) {
		t.Errorf("second peak at %v, want 1h after the epoch", mem.Time(1))
	}
	for _, q := range api.queries {
		if !strings.Contains(q, `cluster="prod"`) {
			t.Errorf("query %s lacks the label filter", q)
		}
	}
}

func TestReaderOwnership(t *testing.T) {
	owner := func(m model.Metric) *model.SampleStream {
		return &model.SampleStream{Metric: m, Values: []model.SamplePair{{Timestamp: 0, Value: 1}}}
	}
	api := &recordingAPI{answer: func(q string) model.Matrix {
		switch {
		case strings.Contains(q, "kube_pod_owner"):
			return model.Matrix{
				// web-db-x2k4p fits Deployment web's pattern, but belongs to
				// the DaemonSet web-db, which is not in the batch.
				owner(model.Metric{"pod": "web-db-x2k4p", "owner_kind": "DaemonSet", "owner_name": "web-db"}),
				owner(model.Metric{"pod": "web-7c9d5-x2k4p", "owner_kind": "ReplicaSet", "owner_name": "web-7c9d5"}),
				owner(model.Metric{"replicaset": "web-7c9d5", "owner_kind": "Deployment", "owner_name": "web"}),
			}
		case strings.Contains(q, "cpu"):
			// web-8f8f8-x2k4p has no ownership series: its pattern decides.
			return model.Matrix{series("web-db-x2k4p", "c", 1), series("web-7c9d5-x2k4p", "c", 2), series("web-8f8f8-x2k4p", "c", 3)}
		}
		return nil
	}}
	web := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"}
	got, err := NewReader(api, WithWindow(time.Hour)).Read(context.Background(), "ns", []WorkloadRef{web})
	if err != nil {
		t.Fatal(err)
	}
	if h := got[web]["c"][corev1.ResourceCPU]; h == nil || !slices.Equal(h.Values, []float64{2, 3}) {
		t.Errorf("web cpu = %+v, want [2 3]: its own pod and the unowned one, not web-db's", h)
	}
}

func TestReaderReadsStartupPeaks(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	sel := `container!="",container!="POD",namespace="shop",pod=~` + strconv.Quote(PodNamePattern("Deployment", "web"))
	tests := []struct {
		name        string
		window      time.Duration
		wantQueries int
		wantQuery   string
		wantPeak    float64
	}{
		{name: "default window", window: DefaultStartupWindow, wantQueries: 4, wantPeak: 700,
			wantQuery: `max by (pod, container, job, metrics_path) (max_over_time((max_over_time(container_memory_working_set_bytes{` + sel + `}[5m])` +
				` and on (pod, container) (container_start_time_seconds{` + sel + `} > time() - 600))[1h:5m]))`},
		{name: "an hour, looked at hourly", window: time.Hour, wantQueries: 4, wantPeak: 700, wantQuery: `}[1h]) and on (pod, container) (container_start_time_seconds{` + sel + `} > time() - 7200))[1h:1h]))`},
		{name: "30s, looked at every minute", window: 30 * time.Second, wantQueries: 4, wantPeak: 700, wantQuery: `}[1m]) and on (pod, container) (container_start_time_seconds{` + sel + `} > time() - 90))[1h:1m]))`},
		{name: "off", window: 0, wantQueries: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &recordingAPI{answer: func(q string) model.Matrix {
				switch {
				case strings.Contains(q, "container_start_time_seconds"):
					// Two pods' first minutes, in two hours.
					return model.Matrix{series("web-bbbb-22222", "app", 500, 700), series("web-cccc-44444", "app", 600)}
				case strings.Contains(q, "working_set"):
					return model.Matrix{series("web-bbbb-22222", "app", 200)}
				}
				return nil
			}}
			r := NewReader(api, WithWindow(48*time.Hour), WithOwnership(false), WithStartupWindow(tt.window), WithClock(func() time.Time { return now }))
			got, err := r.Read(context.Background(), "shop", []WorkloadRef{web})
			if err != nil {
				t.Fatal(err)
			}
			if len(api.queries) != tt.wantQueries {
				t.Errorf("Read() made %d queries, want %d", len(api.queries), tt.wantQueries)
			}
			if tt.wantQuery != "" && !strings.HasSuffix(api.queries[len(api.queries)-1], tt.wantQuery) {
				t.Errorf("startup query = %s, want it to end in %s", api.queries[len(api.queries)-1], tt.wantQuery)
			}
			mem := got[web]["app"][corev1.ResourceMemory]
			if peak := mem.StartupPeak(); peak != tt.wantPeak {
				t.Errorf("StartupPeak() = %v, want %v", peak, tt.wantPeak)
			}
			if tt.wantPeak > 0 && len(mem.StartupPeaks) != 2 {
				t.Errorf("StartupPeaks = %v, want the highest of each hour, 2", mem.StartupPeaks)
			}
		})
	}
}
