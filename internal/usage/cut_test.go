package usage

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// simPod is one pod of simAPI: a sample a minute from from to to.
type simPod struct {
	name     string
	from, to time.Time
	cpu, mem func(time.Time) float64
	oomAt    time.Time // zero: never killed
}

// simAPI answers the reader's queries from per-minute samples as
// Prometheus would: CPU at each point, memory as the highest sample within
// the query's range before each point, and an OOM kill at each point whose
// range holds the kill; startup peaks as the highest sample of the first
// five minutes of a pod within the hour before each point.
type simAPI struct {
	pods    []simPod
	queries int
}

// rangeSelector finds the range of a range vector selector, e.g. [1h5m].
var rangeSelector = regexp.MustCompile(`\[([0-9]+[smhdwy][0-9smhdwy]*)\]`)

func (s *simAPI) QueryRange(_ context.Context, q string, rng promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	s.queries++
	var lookback time.Duration
	if m := rangeSelector.FindStringSubmatch(q); m != nil {
		d, err := model.ParseDuration(m[1])
		if err != nil {
			return nil, nil, nil, err
		}
		lookback = time.Duration(d)
	}
	out := model.Matrix{}
	for _, p := range s.pods {
		series := &model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(p.name), "container": "app"}}
		for t := rng.Start; !t.After(rng.End); t = t.Add(rng.Step) {
			var v float64
			ok := false
			switch {
			case strings.Contains(q, "kube_pod_owner"):
			case strings.Contains(q, "OOMKilled"):
				ok = !p.oomAt.IsZero() && p.oomAt.After(t.Add(-lookback)) && !p.oomAt.After(t)
				v = 1
			case strings.Contains(q, "container_start_time_seconds"):
				for m := t.Truncate(time.Minute); m.After(t.Add(-time.Hour)); m = m.Add(-time.Minute) {
					if !m.Before(p.from) && m.Before(p.from.Add(5*time.Minute)) && !m.After(p.to) && (!ok || p.mem(m) > v) {
						v, ok = p.mem(m), true
					}
				}
			case strings.Contains(q, "working_set"):
				for m := t.Truncate(time.Minute); m.After(t.Add(-lookback)); m = m.Add(-time.Minute) {
					if !m.Before(p.from) && !m.After(p.to) && (!ok || p.mem(m) > v) {
						v, ok = p.mem(m), true
					}
				}
			default:
				v, ok = p.cpu(t), !t.Before(p.from) && !t.After(p.to)
			}
			if ok {
				series.Values = append(series.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
			}
		}
		if len(series.Values) > 0 {
			out = append(out, series)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metric.Before(out[j].Metric) })
	return out, nil, nil, nil
}

// shopSim is namespace shop over 12 days to now: web, whose current pod
// was killed for memory 50 hours ago and whose other pod ended four days
// ago, and api, started five days ago.
func shopSim(now time.Time) *simAPI {
	day := 24 * time.Hour
	minutes := func(t time.Time) float64 { return float64(t.Unix() / 60) }
	return &simAPI{pods: []simPod{
		{name: "web-bbbb-22222", from: now.Add(-12 * day), to: now, oomAt: now.Add(-50 * time.Hour),
			cpu: func(t time.Time) float64 { return float64(int(minutes(t))%97) / 100 },
			mem: func(t time.Time) float64 { return 100 + float64(int(minutes(t))%89) }},
		{name: "web-dddd-44444", from: now.Add(-12 * day), to: now.Add(-4 * day),
			cpu: func(time.Time) float64 { return 2 }, mem: func(t time.Time) float64 { return 500 + float64(int(minutes(t))%53) }},
		{name: "api-cccc-55555", from: now.Add(-5 * day), to: now,
			cpu: func(time.Time) float64 { return 0.3 }, mem: func(t time.Time) float64 { return float64(int(minutes(t)) % 1013) }},
	}}
}

func TestReadEachReadsOnceAndCutsEachGroupAsIfReadAlone(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 7, 0, 0, time.UTC)
	day := 24 * time.Hour
	sim := shopSim(now)
	// The CPU step of these tests: 10 days are two ranges.
	clock := WithClock(func() time.Time { return now })
	minute := WithStep(time.Minute)
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	groups := map[Settings][]WorkloadRef{
		{}:                               {web, api},
		{Window: 48 * time.Hour}:         {web},
		{Window: 10 * day}:               {api},
		{PeakInterval: 10 * time.Minute}: {web},
		// Neither the window nor the peak interval a multiple of the hour.
		{Window: 100*time.Hour + 30*time.Minute, PeakInterval: 7*time.Hour + 10*time.Minute}: {web, api},
	}
	got, err := NewReader(sim, clock, minute).ReadEach(context.Background(), "shop", groups, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As many queries as one read of the longest window, 10 days, at the
	// finest peak interval, 10 minutes: ownership, 2 ranges of CPU (14,401
	// points), memory (1,565 points back to the oldest 7h10m peak), OOM,
	// startup peaks.
	shared := sim.queries
	sim.queries = 0
	if _, err := NewReader(sim, clock, minute, WithWindow(10*day), WithPeakInterval(10*time.Minute)).Read(context.Background(), "shop", []WorkloadRef{web, api}); err != nil {
		t.Fatal(err)
	}
	if shared != 6 || shared != sim.queries {
		t.Errorf("ReadEach() made %d queries, want 6, those of one read of 10 days at 10m peaks (%d)", shared, sim.queries)
	}

	for s, ws := range groups {
		own := Settings{Window: 7 * day, PeakInterval: time.Hour}
		if s.Window > 0 {
			own.Window = s.Window
		}
		if s.PeakInterval > 0 {
			own.PeakInterval = s.PeakInterval
		}
		alone, err := NewReader(sim, clock, minute, WithWindow(own.Window), WithPeakInterval(own.PeakInterval)).Read(context.Background(), "shop", ws)
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
	// What makes the groups differ: the kill and web's old pod lie
	// outside 48 hours, and 7h10m peaks are 7h10m apart.
	if mem := got[Settings{}][web]["app"][corev1.ResourceMemory]; !mem.OOMKilled || mem.Values[0] < 500 {
		t.Errorf("web's week: OOM killed %v, oldest peak %v; want the kill and the old pod's peaks", mem.OOMKilled, mem.Values[0])
	}
	if mem := got[Settings{Window: 48 * time.Hour}][web]["app"][corev1.ResourceMemory]; mem.OOMKilled || mem.Values[0] >= 500 || mem.First.Before(now.Add(-48*time.Hour)) {
		t.Errorf("web's 48 hours: OOM killed %v, oldest peak %v at %v; want neither the kill nor the old pod", mem.OOMKilled, mem.Values[0], mem.First)
	}
	if mem := got[Settings{Window: 100*time.Hour + 30*time.Minute, PeakInterval: 7*time.Hour + 10*time.Minute}][web]["app"][corev1.ResourceMemory]; len(mem.Values) != 15 || mem.Time(1).Sub(mem.Time(0)) != 7*time.Hour+10*time.Minute {
		t.Errorf("web's 7h10m peaks = %d, %v apart; want 15, 7h10m apart", len(mem.Values), mem.Time(1).Sub(mem.Time(0)))
	}
	// api started five days ago: its first minutes are within a week and
	// within 10 days, not within 100h30m; web's pods started before all.
	for s, want := range map[Settings]bool{{}: true, {Window: 10 * day}: true, {Window: 100*time.Hour + 30*time.Minute, PeakInterval: 7*time.Hour + 10*time.Minute}: false} {
		if got := got[s][api]["app"][corev1.ResourceMemory].StartupPeak() > 0; got != want {
			t.Errorf("group %+v: api has a startup peak %v, want %v", s, got, want)
		}
		if peak := got[s][web]["app"][corev1.ResourceMemory].StartupPeak(); peak != 0 {
			t.Errorf("group %+v: web's startup peak = %v, want none", s, peak)
		}
	}
}

func TestHistoryCut(t *testing.T) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// Hourly peaks over a week: 1, 2, ... from the oldest, and a kill seen
	// 30 hours ago.
	week := &History{Window: 7 * 24 * time.Hour, End: end, Step: time.Hour, OOMKills: []time.Time{end.Add(-30 * time.Hour)}, OOMKilled: true}
	for i := 168; i >= 0; i-- {
		week.add(end.Add(-time.Duration(i)*time.Hour), float64(169-i))
	}
	tests := []struct {
		name         string
		window, step time.Duration
		wantValues   []float64
		wantOOM      bool
		wantErr      string
	}{
		{name: "last day", window: 24 * time.Hour, step: time.Hour, wantValues: seq(145, 169)},
		{name: "last day and a half, with the kill", window: 36 * time.Hour, step: time.Hour, wantValues: seq(133, 169), wantOOM: true},
		// 4h peaks counted back from the end: 169, max(165..168), ...
		{name: "4h peaks of the last day", window: 24 * time.Hour, step: 4 * time.Hour,
			wantValues: []float64{145, 149, 153, 157, 161, 165, 169}},
		{name: "90m is not a multiple of 1h", window: 24 * time.Hour, step: 90 * time.Minute,
			wantErr: "cannot cut samples 1h0m0s apart into steps of 1h30m0s"},
		{name: "longer than the history", window: 8 * 24 * time.Hour, step: time.Hour,
			wantErr: "cannot cut 192h0m0s at 1h0m0s from a history of 168h0m0s"},
		// The oldest 2h peak of a week would need a peak from before it.
		{name: "oldest peak not covered", window: 7 * 24 * time.Hour, step: 2 * time.Hour,
			wantErr: "cannot cut 168h0m0s at 2h0m0s from a history of 168h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := week.Cut(tt.window, tt.step)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Cut() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantValues, got.Values); diff != "" {
				t.Errorf("Cut() values (-want +got):\n%s", diff)
			}
			if got.OOMKilled != tt.wantOOM || got.Window != tt.window || got.Step != tt.step || !got.Last.Equal(end) {
				t.Errorf("Cut() = OOM %v window %s step %s last %v, want OOM %v window %s step %s last %v",
					got.OOMKilled, got.Window, got.Step, got.Last, tt.wantOOM, tt.window, tt.step, end)
			}
		})
	}
	t.Run("nothing left", func(t *testing.T) {
		old := &History{Window: 7 * 24 * time.Hour, End: end, Step: time.Minute}
		old.add(end.Add(-3*24*time.Hour), 1)
		if got, err := old.Cut(24*time.Hour, time.Minute); got != nil || err != nil {
			t.Errorf("Cut() = %+v, %v; want nil", got, err)
		}
	})
}

// seq is from, from+1, ..., to.
func seq(from, to float64) []float64 {
	var out []float64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

func TestReadEachCostsAtMostTwelveQueries(t *testing.T) {
	// The most a namespace's extensions can ask for: the longest window,
	// with peaks of a minute and of a day. CPU over 30 days at 1m is 43,201
	// points, 4 ranges; memory at 1m back to the oldest day's peak, 31 days
	// less a minute, is 44,640 points, 5 ranges; then ownership, OOM kills
	// and startup peaks (721 hours each).
	api := &recordingAPI{answer: func(string) model.Matrix { return nil }}
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	groups := map[Settings][]WorkloadRef{
		{Window: 720 * time.Hour, PeakInterval: time.Minute}:    {web},
		{Window: 720 * time.Hour, PeakInterval: 24 * time.Hour}: {web},
		{}: {web},
	}
	if _, err := NewReader(api, WithStep(time.Minute)).ReadEach(context.Background(), "shop", groups, nil); err != nil {
		t.Fatal(err)
	}
	if len(api.queries) != 12 {
		t.Errorf("ReadEach() made %d queries, want 12", len(api.queries))
	}
}
