//go:build integration

package usage_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// TestReaderMeasuresScrapeInterval reads a bursty gateway (0.15 cores,
// four 2-minute bursts to 2 cores an hour) scraped every 60s in one
// namespace and every 15s in another, 7s off the minute as a real
// Prometheus is, with the step and rate window left to the reader: each
// namespace is read at its own scrape interval, a rate over two of them,
// and every interval's rate is seen as it was, bursts included; the
// defaults of before (5m/5m) average the bursts away.
func TestReaderMeasuresScrapeInterval(t *testing.T) {
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools, err := testbed.EnsureTools(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-24*time.Hour - 30*time.Minute + 7*time.Second)
	var series []testbed.Series
	scrapes := map[string]time.Duration{"minute": time.Minute, "quarter": 15 * time.Second}
	for ns, scrape := range scrapes {
		series = append(series, history.Series([]history.Container{{Namespace: ns, Pod: "gateway-7d9f8c6b5-x2k4p", Container: "app",
			Start: start, End: end, CPU: history.Bursts(0.15, 2, 4, 2*time.Minute)}}, scrape)...)
	}
	dir, err := os.MkdirTemp("", "usage-resolution-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	prom, err := testbed.StartPrometheusWithHistory(context.Background(), tools, dir, series)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prom.Stop() })
	client, err := usage.NewClient(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		ns         string
		step, rate time.Duration
		want       usage.Resolution
		wantBusy   float64 // share of samples at 2 cores
	}{
		{ns: "minute", want: usage.Resolution{Step: time.Minute, RateWindow: 2 * time.Minute, Scrape: time.Minute}, wantBusy: 8.0 / 60},
		{ns: "quarter", want: usage.Resolution{Step: 15 * time.Second, RateWindow: 30 * time.Second, Scrape: 15 * time.Second}, wantBusy: 8.0 / 60},
		{ns: "minute", step: 5 * time.Minute, rate: 5 * time.Minute,
			want: usage.Resolution{Step: 5 * time.Minute, RateWindow: 5 * time.Minute, StepSet: true, RateWindowSet: true}, wantBusy: 0},
	} {
		t.Run(fmt.Sprintf("%s at %s/%s", tt.ns, tt.step, tt.rate), func(t *testing.T) {
			ref := usage.WorkloadRef{Kind: "Deployment", Namespace: tt.ns, Name: "gateway"}
			reader := usage.NewReader(client, usage.WithWindow(24*time.Hour), usage.WithStep(tt.step), usage.WithRateWindow(tt.rate),
				usage.WithOwnership(false), usage.WithStartupWindow(0), usage.WithClock(func() time.Time { return end }))
			got, err := reader.Read(context.Background(), tt.ns, []usage.WorkloadRef{ref})
			if err != nil {
				t.Fatal(err)
			}
			h := got[ref]["app"][corev1.ResourceCPU]
			if h == nil {
				t.Fatal("no cpu history")
			}
			if h.Resolution != tt.want || h.Step != tt.want.Step {
				t.Errorf("resolution %+v at step %s, want %+v", h.Resolution, h.Step, tt.want)
			}
			busy, other := 0, 0
			for _, v := range h.Values {
				switch {
				case v > 1.99 && v < 2.01:
					busy++
				case v > 0.149 && v < 0.151:
				default:
					other++
				}
			}
			share := float64(busy) / float64(len(h.Values))
			t.Logf("%s: %d samples, %.3f at 2 cores, %d neither at 2 nor at 0.15 cores; %s", tt.ns, len(h.Values), share, other, h.Resolution)
			if tt.wantBusy > 0 && (other > 0 || share < tt.wantBusy*0.95 || share > tt.wantBusy*1.05) {
				t.Errorf("%.3f of the samples at 2 cores and %d at neither, want %.3f and none: each interval's own rate", share, other, tt.wantBusy)
			}
			if tt.wantBusy == 0 && busy > 0 {
				t.Errorf("%d samples at 2 cores at 5m/5m: the bursts should average away", busy)
			}
		})
	}
}
