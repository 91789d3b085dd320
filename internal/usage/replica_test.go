//go:build integration

package usage_test

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestReplicasAreMergedNotCounted reads a store that holds the series of
// two Prometheus replicas (label prometheus_replica), as Thanos without
// deduplication or a remote-write target of both does: each container's
// history must be the one replica's, each sample once.
func TestReplicasAreMergedNotCounted(t *testing.T) {
	start := now.Add(-24 * time.Hour)
	pod := history.Rollouts("web", 1, 1, start, now)[0].Pods[0]
	one := history.Series([]history.Container{{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: now,
		CPU: history.DailyPeak(0.1, 0.3, 9, 12), Memory: history.Constant(200 * mib)}}, time.Minute)
	var both []testbed.Series
	for _, replica := range []string{"a", "b"} {
		for _, s := range one {
			labels := maps.Clone(s.Labels)
			labels["prometheus_replica"] = replica
			both = append(both, testbed.Series{Name: s.Name, Labels: labels, Samples: s.Samples})
		}
	}
	read := func(series []testbed.Series) usage.Usage {
		client, err := usage.NewClient(testbedtest.VictoriaMetrics(t, series), nil)
		if err != nil {
			t.Fatal(err)
		}
		w := usage.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
		got, err := usage.NewReader(client, usage.WithWindow(24*time.Hour), usage.WithClock(func() time.Time { return now })).
			Read(context.Background(), "shop", []usage.WorkloadRef{w})
		if err != nil {
			t.Fatal(err)
		}
		return got[w]
	}
	single, replicated := read(one), read(both)
	for _, res := range []string{"cpu", "memory"} {
		s, r := single["app"][corev1.ResourceName(res)], replicated["app"][corev1.ResourceName(res)]
		if s == nil || r == nil || len(s.Values) == 0 || !s.Equal(r) {
			t.Errorf("app %s: %d samples from two replicas, want the %d of one, the same", res, samples(r), samples(s))
		}
	}
}
