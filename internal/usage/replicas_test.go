package usage

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// TestReadAllAverageReplicas checks that the average replica counts of
// the targets an HPA scales are read in their namespace's read, in one
// more query for all of them, one selector per kind with a regular
// expression of the names, and none in a namespace without any; each
// answer goes back to its workload with the window it is over.
func TestReadAllAverageReplicas(t *testing.T) {
	api := &recordingAPI{answer: func(q string) model.Matrix {
		if !strings.Contains(q, "avg_over_time") {
			return nil
		}
		return model.Matrix{
			{Metric: model.Metric{"deployment": "web"}, Values: []model.SamplePair{{Value: 3.25}}},
			{Metric: model.Metric{"statefulset": "db"}, Values: []model.SamplePair{{Value: 2}}},
			{Metric: model.Metric{"deployment": "other"}, Values: []model.SamplePair{{Value: 9}}},
			// No count: api.v2 falls back as without series.
			{Metric: model.Metric{"deployment": "api.v2"}, Values: []model.SamplePair{{Value: model.SampleValue(math.NaN())}}},
		}
	}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := NewReader(api, WithWindow(7*24*time.Hour), WithStep(time.Minute), WithRateWindow(2*time.Minute), WithClock(func() time.Time { return now }),
		WithOwnership(false), WithStartupWindow(0))
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	apiRef := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "api.v2"}
	db := WorkloadRef{Kind: "StatefulSet", Namespace: "shop", Name: "db"}
	cache := WorkloadRef{Kind: "Deployment", Namespace: "misc", Name: "cache"}
	wants := []Want{{Ref: web}, {Ref: apiRef}, {Ref: db}, {Ref: cache}}

	base := len(readAllQueries(t, r, api, wants, nil))
	queries := readAllQueries(t, r, api, wants, map[WorkloadRef]time.Duration{web: 0, apiRef: 0, db: 0})
	var replicas []string
	for _, q := range queries {
		if strings.Contains(q, "avg_over_time") {
			replicas = append(replicas, q)
		}
	}
	if len(queries) != base+1 || len(replicas) != 1 {
		t.Fatalf("ReadAll made %d queries, %d of replicas; want %d and 1: one more, in shop alone", len(queries), len(replicas), base+1)
	}
	want := `max by (deployment) (avg_over_time(kube_deployment_status_replicas{namespace="shop",deployment=~"api\\.v2|web"}[1w])) or ` +
		`max by (statefulset) (avg_over_time(kube_statefulset_status_replicas{namespace="shop",statefulset=~"db"}[1w]))`
	if replicas[0] != want {
		t.Errorf("replicas query\n%s\nwant\n%s", replicas[0], want)
	}

	var got *Histories
	api.queries = nil
	if _, err := ReadAll(context.Background(), r, wants, slog.New(slog.DiscardHandler),
		WithAverageReplicas(map[WorkloadRef]time.Duration{web: 0, apiRef: 0, db: 0}),
		WithEach(func(ns string, h *Histories) {
			if ns == "shop" {
				got = h
			}
		})); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  WorkloadRef
		want Replicas
		ok   bool
	}{
		{web, Replicas{Average: 3.25, Window: 7 * 24 * time.Hour}, true},
		{db, Replicas{Average: 2, Window: 7 * 24 * time.Hour}, true},
		{apiRef, Replicas{}, false},
		{cache, Replicas{}, false},
	} {
		if v, ok := got.AverageReplicas(tt.ref); v != tt.want || ok != tt.ok {
			t.Errorf("AverageReplicas(%s) = %+v, %v; want %+v, %v", tt.ref.Name, v, ok, tt.want, tt.ok)
		}
	}
}

// readAllQueries are the queries ReadAll of wants makes with scaled.
func readAllQueries(t *testing.T, r *Reader, api *recordingAPI, wants []Want, scaled map[WorkloadRef]time.Duration) []string {
	t.Helper()
	api.queries = nil
	if _, err := ReadAll(context.Background(), r, wants, slog.New(slog.DiscardHandler), WithAverageReplicas(scaled)); err != nil {
		t.Fatal(err)
	}
	return api.queries
}
