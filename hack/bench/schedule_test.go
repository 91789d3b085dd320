package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeScale is a scale whose cold measurement is steps of a given length,
// Options.Between called after each, and whose warm run records itself.
type fakeScale struct {
	res    *Result
	at     time.Time
	log    *[]string
	closed bool
}

func (f *fakeScale) Result() *Result   { return f.res }
func (f *fakeScale) WarmAt() time.Time { return f.at }
func (f *fakeScale) Close()            { f.closed = true }
func (f *fakeScale) Warm(ctx context.Context) error {
	time.Sleep(time.Until(f.at))
	*f.log = append(*f.log, fmt.Sprintf("warm %d", f.res.N))
	return nil
}

func TestRunScales(t *testing.T) {
	const warm = 200 * time.Millisecond
	for _, tc := range []struct {
		name string
		warm time.Duration
		// steps are each scale's cold steps.
		steps map[int][]time.Duration
		want  []string
	}{{
		name:  "no warm run: one scale after the other",
		steps: map[int][]time.Duration{100: {time.Millisecond}, 120: {time.Millisecond}},
		want:  []string{"cold 100 step 1", "done 100", "cold 120 step 1", "done 120"},
	}, {
		name:  "the second scale runs cold while the first one's warm run is not due",
		warm:  warm,
		steps: map[int][]time.Duration{100: {time.Millisecond}, 120: {time.Millisecond}},
		want:  []string{"cold 100 step 1", "cold 120 step 1", "warm 100", "done 100", "warm 120", "done 120"},
	}, {
		name: "a warm run due during another scale's cold measurement runs after its step",
		warm: warm,
		steps: map[int][]time.Duration{
			100: {time.Millisecond},
			120: {50 * time.Millisecond, 2 * warm},
		},
		want: []string{"cold 100 step 1", "cold 120 step 1", "cold 120 step 2", "warm 100", "done 100", "warm 120", "done 120"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var scales []*fakeScale
			start := func(ctx context.Context, o Options) (warmable, error) {
				for i, d := range tc.steps[o.N] {
					time.Sleep(d)
					log = append(log, fmt.Sprintf("cold %d step %d", o.N, i+1))
					if err := o.Between(ctx); err != nil {
						return nil, err
					}
				}
				s := &fakeScale{res: &Result{N: o.N}, at: time.Now().Add(o.Warm), log: &log}
				scales = append(scales, s)
				return s, nil
			}
			opts := []Options{{N: 100, Warm: tc.warm}, {N: 120, Warm: tc.warm}}
			err := runScales(t.Context(), opts, start, func(r *Result) error {
				log = append(log, fmt.Sprintf("done %d", r.N))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, tc.want) {
				t.Errorf("order:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, s := range scales {
				if !s.closed {
					t.Errorf("scale %d: bed not stopped", s.res.N)
				}
			}
		})
	}
}

func TestCheckPages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []string
		want  Pages
	}{{
		name: "pages, discovery, the record and writes",
		calls: []string{
			"GET /version", "GET /api", "GET /apis", "GET /apis/apps/v1",
			"GET /apis/apps/v1/deployments?limit=500", "GET /apis/apps/v1/deployments?continue&limit=500",
			"GET /api/v1/namespaces?limit=500",
			"GET /api/v1/namespaces/recommend-job/configmaps?limit=100",
			"GET /api/v1/namespaces/recommend-job/configmaps/recommend-job-record",
			"POST /api/v1/namespaces/recommend-job/configmaps",
			"DELETE /api/v1/namespaces/recommend-job/configmaps/checkpoint-1",
		},
		want: Pages{Pages: 4, Discovery: 4, Objects: 1, Writes: 2},
	}, {
		name: "an unpaged list, cluster-wide and of a namespace",
		calls: []string{
			"GET /apis/recommendation.katalyst.kubewharf.io/v1alpha1/resourcerecommends",
			"GET /api/v1/namespaces/a/pods",
			"GET /api/v1/namespaces/a",
		},
		want: Pages{Objects: 1, Unpaged: []string{
			"GET /apis/recommendation.katalyst.kubewharf.io/v1alpha1/resourcerecommends",
			"GET /api/v1/namespaces/a/pods",
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkPages(tc.calls)
			if got.String() != tc.want.String() {
				t.Errorf("checkPages = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	res := &Result{
		Total:    Row{PeakRSS: 212 << 20},
		Ratios:   Ratios{RunOverFloor: 0.79},
		APICalls: []string{"GET /apis/apps/v1/deployments?limit=500"},
		Warm: &Warm{
			Total:           Row{PeakRSS: 500 << 20},
			Ratios:          Ratios{RunOverFloor: 1.2, BaselineOverHistory: 12},
			APICalls:        []string{"GET /api/v1/namespaces/recommend-job/configmaps"},
			ScannedOverCold: 0.36, Values: 800, Differ: 0, CheckpointBytes: 13 << 10, CheckpointPages: 1,
		},
	}
	met := map[string]bool{}
	for _, tg := range res.targets() {
		met[tg.Name] = tg.Met
	}
	want := map[string]bool{
		"peak RSS": true, "run/floor": true, "apiserver requests pages only": true,
		"warm peak RSS": false, "warm run/floor": true, "warm apiserver requests pages only": false,
		"baseline/warm history": true, "warm scanned/cold scanned": false,
		"warm values equal to a stateless run's at the same moment": true, "checkpoints": true,
	}
	for name, w := range want {
		if got, ok := met[name]; !ok || got != w {
			t.Errorf("target %q: met %v (reported %v), want %v", name, got, ok, w)
		}
	}
	if len(met) != len(want) {
		t.Errorf("targets %v, want %d", met, len(want))
	}
}
