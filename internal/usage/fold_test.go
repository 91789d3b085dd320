package usage

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// recordingFold keeps what it is given, to compare with a History.
type recordingFold struct {
	want      Want
	container string
	samples   []sample
}

type sample struct {
	t time.Time
	v float64
}

func (f *recordingFold) Add(t time.Time, v float64) { f.samples = append(f.samples, sample{t, v}) }

func TestReadEachFoldsEachGroupsWindow(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 7, 0, 0, time.UTC)
	day := 24 * time.Hour
	sim := shopSim(now)
	clock := WithClock(func() time.Time { return now })
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	groups := map[Settings][]WorkloadRef{
		{}:                               {web, api},
		{Window: 48 * time.Hour}:         {web},
		{Window: 10 * day}:               {api},
		{PeakInterval: 10 * time.Minute}: {web},
	}
	// api's 10 days keep their samples: a nil fold.
	kept := Want{Ref: api, Settings: Settings{Window: 10 * day}}
	folds := map[Want]*recordingFold{}
	got, err := NewReader(sim, clock).ReadEach(context.Background(), "shop", groups, func(w Want, container string, h *History) Fold {
		if h.End != now || h.Step != DefaultStep {
			t.Errorf("fold of %+v for a history ending %v at %v, want %v at %v", w, h.End, h.Step, now, DefaultStep)
		}
		if w == kept {
			return nil
		}
		if folds[w] != nil {
			t.Errorf("fold of %+v %s asked for twice", w, container)
		}
		f := &recordingFold{want: w, container: container}
		folds[w] = f
		return f
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(folds) != 4 {
		t.Errorf("%d folds made, want 4, one per want but the kept one", len(folds))
	}
	for s, ws := range groups {
		own := Settings{Window: 7 * day, PeakInterval: time.Hour}
		if s.Window > 0 {
			own.Window = s.Window
		}
		if s.PeakInterval > 0 {
			own.PeakInterval = s.PeakInterval
		}
		alone, err := NewReader(sim, clock, WithWindow(own.Window), WithPeakInterval(own.PeakInterval)).Read(context.Background(), "shop", ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			want, have := alone[w]["app"], got[s][w]["app"]
			if diff := cmp.Diff(want[corev1.ResourceMemory], have[corev1.ResourceMemory]); diff != "" {
				t.Errorf("%+v %s: memory differs from a read of its own (-alone +folded):\n%s", s, w.Name, diff)
			}
			cpu, h := want[corev1.ResourceCPU], have[corev1.ResourceCPU]
			if h == nil || h.First != cpu.First || h.Last != cpu.Last || h.Window != cpu.Window || h.End != cpu.End {
				t.Errorf("%+v %s: CPU history %+v, want first %v, last %v, window %v as read alone", s, w.Name, h, cpu.First, cpu.Last, cpu.Window)
				continue
			}
			if (Want{Ref: w, Settings: s}) == kept {
				if h.Fold != nil || !h.Equal(cpu) {
					t.Errorf("%+v %s: kept CPU differs from a read of its own", s, w.Name)
				}
				continue
			}
			f, ok := h.Fold.(*recordingFold)
			if !ok || f.want != (Want{Ref: w, Settings: s}) || len(h.Values) != 0 {
				t.Fatalf("%+v %s: CPU history holds fold %+v and %d values, want its own fold and none", s, w.Name, h.Fold, len(h.Values))
			}
			folded := slices.Clone(f.samples)
			slices.SortStableFunc(folded, func(a, b sample) int { return a.t.Compare(b.t) })
			var read []sample
			for i, v := range cpu.Values {
				read = append(read, sample{cpu.Time(i), v})
			}
			if diff := cmp.Diff(read, folded, cmp.AllowUnexported(sample{})); diff != "" {
				t.Errorf("%+v %s: folded samples differ from a read of its own (-alone +folded):\n%s", s, w.Name, diff)
			}
		}
	}
}
