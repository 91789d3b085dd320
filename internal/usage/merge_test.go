package usage

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

func TestCPUQuery(t *testing.T) {
	for _, c := range []struct {
		merged bool
		want   string
	}{
		{false, `max by (pod, container, job, metrics_path) (rate(container_cpu_usage_seconds_total{namespace="a"}[2m]))`},
		{true, `rate(container_cpu_usage_seconds_total{namespace="a"}[2m])`},
	} {
		if got := cpuQuery(`namespace="a"`, 2*60e9, c.merged); got != c.want {
			t.Errorf("cpuQuery(merged %v) = %s, want %s", c.merged, got, c.want)
		}
	}
}

// TestMergerTakesTheHighestOfAContainersSeries hands a merger one query's
// series: those of a container listed with one go on as they come, those
// of a container listed with several are merged into one, at each time the
// highest value (a NaN giving way), as max by (pod, container) answers.
func TestMergerTakesTheHighestOfAContainersSeries(t *testing.T) {
	nan := model.SampleValue(math.NaN())
	stream := func(pod, id string, points ...model.SamplePair) *model.SampleStream {
		return &model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(pod), "container": "app", "id": model.LabelValue(id)}, Values: points}
	}
	at := func(ts model.Time, v model.SampleValue) model.SamplePair {
		return model.SamplePair{Timestamp: ts, Value: v}
	}
	type handed struct {
		Pod    string
		Points []model.SamplePair
	}
	for _, c := range []struct {
		name    string
		counted cpuSeries
		in      []*model.SampleStream
		want    []handed
		wantErr string
	}{
		{
			name: "nothing listed: every series as it comes", counted: nil,
			in:   []*model.SampleStream{stream("a", "1", at(1, 1)), stream("a", "2", at(1, 2))},
			want: []handed{{"a", []model.SamplePair{at(1, 1)}}, {"a", []model.SamplePair{at(1, 2)}}},
		},
		{
			name:    "one series each",
			counted: cpuSeries{{"a", "app"}: 1, {"b", "app"}: 1},
			in:      []*model.SampleStream{stream("b", "1", at(1, 1), at(2, 2)), stream("a", "2", at(1, 3))},
			want:    []handed{{"b", []model.SamplePair{at(1, 1), at(2, 2)}}, {"a", []model.SamplePair{at(1, 3)}}},
		},
		{
			name:    "two series of one container, overlapping in time",
			counted: cpuSeries{{"a", "app"}: 2, {"b", "app"}: 1},
			in: []*model.SampleStream{
				stream("a", "old", at(1, 5), at(2, 1), at(3, nan)),
				stream("b", "1", at(1, 7)),
				stream("a", "new", at(2, 4), at(3, 2), at(4, 3)),
			},
			want: []handed{{"b", []model.SamplePair{at(1, 7)}}, {"a", []model.SamplePair{at(1, 5), at(2, 4), at(3, 2), at(4, 3)}}},
		},
		{
			name:    "listed with one, answered with two",
			counted: cpuSeries{{"a", "app"}: 1},
			in:      []*model.SampleStream{stream("a", "1", at(1, 1)), stream("a", "2", at(1, 2))},
			want:    []handed{{"a", []model.SamplePair{at(1, 1)}}},
			wantErr: "pod a container app answered with more CPU series than the series listing named",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []handed
			each := func(s *model.SampleStream) {
				got = append(got, handed{Pod: string(s.Metric["pod"]), Points: append([]model.SamplePair(nil), s.Values...)})
			}
			m := c.counted.merger()
			for _, s := range c.in {
				m.take(s, each)
				// The decoder reuses a series' points once each returns.
				for i := range s.Values {
					s.Values[i].Value = -1
				}
			}
			err := m.flush(each)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("flush() error = %v, want %q", err, c.wantErr)
			}
			if c.wantErr != "" {
				return
			}
			if diff := cmp.Diff(c.want, got, cmp.Comparer(func(a, b model.SampleValue) bool { return a == b || a != a && b != b })); diff != "" {
				t.Errorf("handed on (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReaderMergesTheCPUSeriesItListed reads a namespace whose listing
// names two CPU series for one container: the CPU query asks for the rates
// alone, and the container's history is the higher of its two series at
// each time; without a listing the query merges them itself.
func TestReaderMergesTheCPUSeriesItListed(t *testing.T) {
	cpu := func(pod, id string) model.LabelSet {
		return model.LabelSet{model.MetricNameLabel: cpuMetric, "namespace": "ns", "pod": model.LabelValue(pod), "container": "app", "id": model.LabelValue(id)}
	}
	web := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"}
	pod := "web-7c9d5-x2k4p"
	for _, c := range []struct {
		name   string
		owners bool
		query  string
		want   []float64
	}{
		{name: "listed", owners: true, query: "rate(container_cpu_usage_seconds_total{", want: []float64{3, 2, 5}},
		{name: "not listed", owners: false, query: "max by (pod, container, job, metrics_path) (rate(container_cpu_usage_seconds_total{", want: []float64{3, 2, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := &listingAPI{sets: []model.LabelSet{cpu(pod, "a"), cpu(pod, "b")}}
			var cpuQueries []string
			api.answer = func(q string) model.Matrix {
				if !strings.Contains(q, "rate(container_cpu_usage_seconds_total") {
					return nil
				}
				cpuQueries = append(cpuQueries, q)
				if strings.HasPrefix(q, "max by") {
					return model.Matrix{series(pod, "app", 3, 2, 5)}
				}
				a, b := series(pod, "app", 3, 1, 5), series(pod, "app", 0, 2)
				a.Metric["id"], b.Metric["id"] = "a", "b"
				return model.Matrix{a, b}
			}
			got, err := NewReader(api, WithOwnership(c.owners)).Read(t.Context(), "ns", []WorkloadRef{web})
			if err != nil {
				t.Fatal(err)
			}
			if len(cpuQueries) != 1 || !strings.HasPrefix(cpuQueries[0], c.query) {
				t.Errorf("CPU queries %q, want one starting %q", cpuQueries, c.query)
			}
			if h := got[web]["app"][corev1.ResourceCPU]; h == nil || !slices.Equal(h.Values, c.want) {
				t.Errorf("web cpu = %+v, want %v", h, c.want)
			}
		})
	}
}
