package recommend

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestSlotsWarmEqualsCold folds eight days of bursty samples in two
// ways: cold, the last seven days in one fold; warm, the first seven days
// in day slots (a checkpoint, through its encoding), the first day
// dropped as it leaves the window, and the eighth folded in as new. Both
// give the same fold.
func TestSlotsWarmEqualsCold(t *testing.T) {
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	from := day0.Add(DaySlot) // the window of the warm run: days 1 to 7
	rng := rand.New(rand.NewPCG(1, 2))
	type sample struct {
		t time.Time
		v float64
	}
	var samples []sample
	for at := day0.Add(7 * time.Second); at.Before(day0.Add(8 * DaySlot)); at = at.Add(time.Minute) {
		v := 0.15 * (1 + 0.05*rng.NormFloat64())
		if at.Minute()%15 < 2 {
			v = 2
		}
		samples = append(samples, sample{at, v})
	}
	for _, tt := range []struct {
		name     string
		res      corev1.ResourceName
		halfLife time.Duration
	}{
		{"cpu, a day's half-life", corev1.ResourceCPU, 24 * time.Hour},
		{"cpu, no decay", corev1.ResourceCPU, 0},
		{"memory, an hour's half-life", corev1.ResourceMemory, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scale := 1.0
			if tt.res == corev1.ResourceMemory {
				scale = 1e9
			}
			cold := NewFold(tt.res, tt.halfLife, from)
			first := NewSlots(tt.res, tt.halfLife, DaySlot, day0)
			fresh := NewSlots(tt.res, tt.halfLife, DaySlot, day0)
			for _, s := range samples {
				if !s.t.Before(from) {
					cold.Add(s.t, s.v*scale)
				}
				if s.t.Before(day0.Add(7 * DaySlot)) {
					first.Add(s.t, s.v*scale)
				} else {
					fresh.Add(s.t, s.v*scale)
				}
			}
			data, err := first.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seven day slots: %d bytes", len(data))
			var warm Slots
			if err := warm.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if warm.Straddles(from) {
				t.Fatal("a slot straddles a day's start")
			}
			warm.DropBefore(from)
			if err := warm.Merge(fresh); err != nil {
				t.Fatal(err)
			}
			got := warm.Fold(from, from)
			if got.Samples() != cold.Samples() || !got.first.Equal(cold.first) || !got.last.Equal(cold.last) || got.Peak() != cold.Peak() {
				t.Errorf("warm: %d samples from %s to %s, peak %v; cold: %d from %s to %s, peak %v", got.Samples(), got.first, got.last, got.Peak(),
					cold.Samples(), cold.first, cold.last, cold.Peak())
			}
			for _, p := range []float64{0.5, 0.9, 0.95, 0.99} {
				if g, c := got.hist.Percentile(p), cold.hist.Percentile(p); g != c {
					t.Errorf("p%v: warm %v, cold %v", p*100, g, c)
				}
				if g, c := got.Observed(p), cold.Observed(p); g != c {
					t.Errorf("observed p%v: warm %v, cold %v", p*100, g, c)
				}
			}
			// A long window moves the cold fold's reference (rescaling its
			// weights): the weights are compared as shares of the total.
			for b, w := range cold.hist.weights {
				g, c := got.hist.weights[b]/got.hist.total, w/cold.hist.total
				if math.Abs(g-c) > 1e-12 || got.counts[b] != cold.counts[b] {
					t.Fatalf("bucket %d: warm %v of the weight (%d samples), cold %v (%d)", b, g, got.counts[b], c, cold.counts[b])
				}
			}
		})
	}
}

func TestSlotsStraddle(t *testing.T) {
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s := NewSlots(corev1.ResourceCPU, time.Hour, DaySlot, day0)
	s.Add(day0.Add(30*time.Hour), 1)
	if !s.Straddles(day0.Add(25 * time.Hour)) {
		t.Error("a slot with samples around 25h does not straddle it")
	}
	if s.Straddles(day0.Add(24 * time.Hour)) {
		t.Error("a slot straddles its own start")
	}
	if s.Straddles(day0.Add(49 * time.Hour)) {
		t.Error("an empty slot straddles")
	}
	s.DropBefore(day0.Add(25 * time.Hour))
	if s.Len() != 0 {
		t.Errorf("%d slots left after dropping the straddling one", s.Len())
	}
}

// TestSlotsUnmarshalRejects checks that bytes not written by
// MarshalBinary, cut short or changed, are refused or decode to slots
// that add up, never a panic.
func TestSlotsUnmarshalRejects(t *testing.T) {
	s := NewSlots(corev1.ResourceCPU, time.Hour, DaySlot, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	for i := range 300 {
		s.Add(s.Anchor.Add(time.Duration(i)*7*time.Minute), float64(i%7)/3)
	}
	data, _ := s.MarshalBinary()
	for n := range len(data) {
		var got Slots
		if err := got.UnmarshalBinary(data[:n]); err == nil {
			t.Fatalf("%d of %d bytes decoded", n, len(data))
		}
	}
	for i := range data {
		changed := append([]byte(nil), data...)
		changed[i] ^= 0x5a
		var got Slots
		_ = got.UnmarshalBinary(changed) // must not panic
	}
	var got Slots
	if err := got.UnmarshalBinary(data); err != nil || got.Len() != s.Len() {
		t.Fatalf("round trip: %v, %d slots of %d", err, got.Len(), s.Len())
	}
}

// TestSlotsMemory checks that memory's slots keep their OOM kills and
// startup peaks through an encoding, those of the slots dropped leaving,
// and that the older encodings, the first without either, the second
// with one kill a time, are told apart.
func TestSlotsMemory(t *testing.T) {
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s := NewSlots(corev1.ResourceMemory, 24*time.Hour, DaySlot, day0)
	for h := range 72 {
		s.Add(day0.Add(time.Duration(h)*time.Hour), float64(200<<20+h<<20))
	}
	s.AddOOMKills([]time.Time{day0.Add(5 * time.Hour), day0.Add(50 * time.Hour), day0.Add(50 * time.Hour)}) // two pods at 50h
	s.AddOOMKills([]time.Time{day0.Add(50 * time.Hour)})                                                    // read again, by a run that saw one of them
	s.AddOOMKills([]time.Time{day0.Add(50 * time.Hour), day0.Add(50 * time.Hour)})                          // and by one that saw both
	s.AddStartupPeak(day0.Add(30*time.Hour), 400<<20)
	s.AddStartupPeak(day0.Add(30*time.Hour), 500<<20)
	s.AddStartupPeak(day0.Add(60*time.Hour), 300<<20)

	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Slots
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if kills := got.OOMKills(day0); len(kills) != 3 || !kills[1].Equal(day0.Add(50*time.Hour)) || !kills[2].Equal(day0.Add(50*time.Hour)) {
		t.Errorf("OOM kills after a round trip: %v, want at 5h, and two at 50h", kills)
	}
	if peaks := got.StartupPeaks(day0); len(peaks) != 2 || peaks[0].Value != 500<<20 || peaks[1].Value != 300<<20 {
		t.Errorf("startup peaks after a round trip: %v, want 500Mi at 30h and 300Mi at 60h", peaks)
	}
	got.DropBefore(day0.Add(24 * time.Hour))
	if kills := got.OOMKills(day0); len(kills) != 2 {
		t.Errorf("OOM kills after the first day left: %v, want the two at 50h", kills)
	}
	if f := got.Fold(day0, day0); f.Samples() != 48 {
		t.Errorf("%d peaks after the first day left, want 48", f.Samples())
	}

	for _, version := range []byte{1, 2} {
		old := append([]byte{version}, data[1:]...)
		if err := (&Slots{}).UnmarshalBinary(old); !errors.Is(err, ErrSlotsVersion) {
			t.Errorf("encoding %d: %v, want ErrSlotsVersion", version, err)
		}
	}
}

// TestSlotsUnmarshalRejectsWhatCannotBe checks encodings that are well
// formed but describe slots no fold makes: they are refused, never folded.
func TestSlotsUnmarshalRejectsWhatCannotBe(t *testing.T) {
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		change func(s *Slots)
	}{
		{"an infinite peak", func(s *Slots) { s.slots[0].peak = math.Inf(1) }},
		{"a slot past any time", func(s *Slots) { s.slots[1<<40] = s.slots[0]; delete(s.slots, 0) }},
		{"a sample before its slot", func(s *Slots) { s.slots[0].first = day0.Add(-time.Minute) }},
		{"a sample after its slot", func(s *Slots) { s.slots[0].last = day0.Add(DaySlot) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSlots(corev1.ResourceCPU, time.Hour, DaySlot, day0)
			for i := range 10 {
				s.Add(day0.Add(time.Duration(i)*time.Hour), 0.5)
			}
			if data, _ := s.MarshalBinary(); (&Slots{}).UnmarshalBinary(data) != nil {
				t.Fatal("the slots as made do not decode")
			}
			tc.change(s)
			data, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if err := (&Slots{}).UnmarshalBinary(data); !errors.Is(err, errSlots) {
				t.Errorf("decoded: %v, want errSlots", err)
			}
		})
	}
}
