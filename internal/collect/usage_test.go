package collect

import (
	"context"
	"regexp"
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
			match:   []string{"web-7d9f8c6b5-x2k4p", "web-5f6d-abcde"},
			noMatch: []string{"web-api-7d9f8c6b5-x2k4p", "web-x2k4p", "web", "aweb-7d9f8c6b5-x2k4p", "web-7d9f8c6b5-x2k4p-extra"}},
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

func TestUsageReaderBatchesPerNamespace(t *testing.T) {
	api := &recordingAPI{answer: func(q string) model.Matrix {
		if strings.Contains(q, "cpu") {
			return model.Matrix{
				series("web-aaaa-11111", "app", 0.1, 0.2),
				series("web-bbbb-22222", "app", 0.3), // an older ReplicaSet's pod
				series("web-api-cccc-33333", "app", 9),
				series("api-dddd-44444", "api", 0.5),
			}
		}
		return model.Matrix{series("web-aaaa-11111", "app", 100)}
	}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := NewUsageReader(api, WithWindow(48*time.Hour), WithClock(func() time.Time { return now }))
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	apiRef := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "api"}

	got, err := r.Read(context.Background(), "shop", []WorkloadRef{web, apiRef})
	if err != nil {
		t.Fatalf("Read() error = %v", err)
	}
	if len(api.queries) != 2 {
		t.Errorf("Read() made %d queries, want 2 (cpu and memory for the namespace)", len(api.queries))
	}
	for _, q := range api.queries {
		if !strings.Contains(q, `namespace="shop"`) || !strings.Contains(q, `api-[a-z0-9]+-[a-z0-9]{5}|web-`) {
			t.Errorf("query %s does not select both workloads of the namespace", q)
		}
	}
	if rng := api.ranges[0]; !rng.End.Equal(now) || !rng.Start.Equal(now.Add(-48*time.Hour)) || rng.Step != time.Minute {
		t.Errorf("range = %+v, want the last 48h at 1m", rng)
	}
	if cpu := got[web]["app"][corev1.ResourceCPU]; len(cpu) != 3 {
		t.Errorf("web cpu samples = %v, want the 3 samples of both web pods and none of web-api", cpu)
	}
	if mem := got[web]["app"][corev1.ResourceMemory]; len(mem) != 1 || mem[0] != 100 {
		t.Errorf("web memory samples = %v, want [100]", mem)
	}
	if cpu := got[apiRef]["api"][corev1.ResourceCPU]; len(cpu) != 1 || cpu[0] != 0.5 {
		t.Errorf("api cpu samples = %v, want [0.5]", cpu)
	}
}

func TestUsageReaderRejectsOtherNamespace(t *testing.T) {
	r := NewUsageReader(&recordingAPI{answer: func(string) model.Matrix { return nil }})
	if _, err := r.Read(context.Background(), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "other", Name: "x"}}); err == nil {
		t.Error("Read() with a workload of another namespace: error = nil")
	}
}
