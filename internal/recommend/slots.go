package recommend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DaySlot is the length of a slot of Slots: a checkpoint keeps a fold per
// day, so that the days leaving the window drop out whole.
const DaySlot = 24 * time.Hour

// Slots is a fold kept in slots of time (days), each its own fold, so that
// a checkpoint can drop the slots that left the window and fold in only
// what is new: the Fold of the slots from a time on equals, to the float
// rounding of its weights, a Fold of the same samples folded in one go.
// Slot k holds the samples taken in [Anchor + k*Length, Anchor +
// (k+1)*Length).
type Slots struct {
	Resource corev1.ResourceName
	HalfLife time.Duration
	Length   time.Duration
	Anchor   time.Time
	slots    map[int64]*slot
	// buckets and logGrowth are found once, not per sample: the number of
	// buckets of opts() and the log of its Growth.
	buckets   int
	logGrowth float64
}

// slot is the fold of one slot's samples; its weights decay from the
// slot's own start, so that they mean the same whichever window the slot
// is later folded into.
type slot struct {
	weights     map[int]float64
	counts      map[int]uint32
	samples     int
	first, last time.Time
	peak        float64
	// ooms and startups are memory's OOM kills and startup peaks seen in
	// the slot, at the times a read gives them.
	ooms     []time.Time
	startups []Sample
}

// NewSlots returns empty slots of length from anchor, of res decaying with
// halfLife.
func NewSlots(res corev1.ResourceName, halfLife, length time.Duration, anchor time.Time) *Slots {
	return &Slots{Resource: res, HalfLife: halfLife, Length: length, Anchor: anchor, slots: map[int64]*slot{}}
}

func (s *Slots) opts() HistogramOptions {
	if s.Resource == corev1.ResourceMemory {
		return MemoryHistogram
	}
	return CPUHistogram
}

// index is the slot of t.
func (s *Slots) index(t time.Time) int64 {
	d := t.Sub(s.Anchor)
	k := int64(d / s.Length)
	if d < 0 && d%s.Length != 0 {
		k--
	}
	return k
}

// start is the start of slot k.
func (s *Slots) start(k int64) time.Time {
	return s.Anchor.Add(time.Duration(k) * s.Length)
}

// Add folds in the sample v taken at t, as Fold.Add does.
func (s *Slots) Add(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return
	}
	k := s.index(t)
	sl := s.slot(k)
	if sl.samples == 0 || t.Before(sl.first) {
		sl.first = t
	}
	if sl.samples == 0 || t.After(sl.last) {
		sl.last = t
	}
	if sl.samples == 0 || v > sl.peak {
		sl.peak = v
	}
	sl.samples++
	w := sampleWeight(s.Resource, v)
	opts := s.opts()
	if s.buckets == 0 {
		s.buckets, s.logGrowth = opts.numBuckets(), math.Log(opts.Growth)
	}
	b := opts.bucketOf(v, s.buckets, s.logGrowth)
	if s.HalfLife > 0 {
		w *= math.Exp2(float64(t.Sub(s.start(k))) / float64(s.HalfLife))
	}
	sl.weights[b] += w
	sl.counts[b]++
}

// slot returns slot k, creating it.
func (s *Slots) slot(k int64) *slot {
	sl := s.slots[k]
	if sl == nil {
		sl = &slot{weights: map[int]float64{}, counts: map[int]uint32{}}
		s.slots[k] = sl
	}
	return sl
}

// AddOOMKills keeps the OOM kills one read saw, one a pod, several pods'
// at the same time (memory only): at each time as many as the most one
// read saw there, so that a time two runs read (the overlap of their
// windows) is not counted twice.
func (s *Slots) AddOOMKills(kills []time.Time) {
	for _, t := range kills {
		s.slot(s.index(t)).addOOMKills(t, countFunc(kills, t.Equal))
	}
}

func (sl *slot) addOOMKills(t time.Time, n int) {
	for range n - countFunc(sl.ooms, t.Equal) {
		sl.ooms = append(sl.ooms, t)
	}
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}

// AddStartupPeak keeps v as the startup peak at t, or raises the one of
// t to v (memory only).
func (s *Slots) AddStartupPeak(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return
	}
	sl := s.slot(s.index(t))
	for i, p := range sl.startups {
		if p.Time.Equal(t) {
			sl.startups[i].Value = max(p.Value, v)
			return
		}
	}
	sl.startups = append(sl.startups, Sample{Time: t, Value: v})
}

// OOMKills are the OOM kills kept in the slots from from on (as Fold
// counts them), in time order.
func (s *Slots) OOMKills(from time.Time) []time.Time {
	var out []time.Time
	for k, sl := range s.slots {
		if s.start(k + 1).After(from) {
			out = append(out, sl.ooms...)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// StartupPeaks are the startup peaks kept in the slots from from on (as
// Fold counts them), in time order.
func (s *Slots) StartupPeaks(from time.Time) []Sample {
	var out []Sample
	for k, sl := range s.slots {
		if s.start(k + 1).After(from) {
			out = append(out, sl.startups...)
		}
	}
	slices.SortFunc(out, func(a, b Sample) int { return a.Time.Compare(b.Time) })
	return out
}

// Latest is the time of the latest sample, OOM kill or startup peak in
// the slots; zero when they hold none.
func (s *Slots) Latest() time.Time {
	var latest time.Time
	for _, sl := range s.slots {
		if sl.samples > 0 && sl.last.After(latest) {
			latest = sl.last
		}
		for _, t := range sl.ooms {
			if t.After(latest) {
				latest = t
			}
		}
		for _, p := range sl.startups {
			if p.Time.After(latest) {
				latest = p.Time
			}
		}
	}
	return latest
}

// Straddles reports whether a slot holding samples begins before from and
// ends after it: its samples from from on cannot be told from the others,
// so they must be read again.
func (s *Slots) Straddles(from time.Time) bool {
	k := s.index(from)
	return s.start(k).Before(from) && s.slots[k] != nil
}

// DropBefore drops the slots that begin before from, a straddling one
// too: what remains are the whole slots from from on.
func (s *Slots) DropBefore(from time.Time) {
	for k := range s.slots {
		if s.start(k).Before(from) {
			delete(s.slots, k)
		}
	}
}

// Len is how many slots hold samples.
func (s *Slots) Len() int { return len(s.slots) }

// Merge adds o's slots to s's; both must have the same resource,
// half-life, length and anchor, and their samples must not overlap.
func (s *Slots) Merge(o *Slots) error {
	if s.Resource != o.Resource || s.HalfLife != o.HalfLife || s.Length != o.Length || !s.Anchor.Equal(o.Anchor) {
		return errors.New("slots of other settings")
	}
	for k, from := range o.slots {
		s.slot(k).merge(from)
	}
	return nil
}

func (sl *slot) merge(o *slot) {
	for _, t := range o.ooms {
		sl.addOOMKills(t, countFunc(o.ooms, t.Equal))
	}
	for _, p := range o.startups {
		i := slices.IndexFunc(sl.startups, func(q Sample) bool { return q.Time.Equal(p.Time) })
		if i < 0 {
			sl.startups = append(sl.startups, p)
			continue
		}
		sl.startups[i].Value = max(sl.startups[i].Value, p.Value)
	}
	if o.samples == 0 {
		return
	}
	if sl.samples == 0 || o.first.Before(sl.first) {
		sl.first = o.first
	}
	if sl.samples == 0 || o.last.After(sl.last) {
		sl.last = o.last
	}
	if sl.samples == 0 || o.peak > sl.peak {
		sl.peak = o.peak
	}
	sl.samples += o.samples
	for b, w := range o.weights {
		sl.weights[b] += w
	}
	for b, n := range o.counts {
		sl.counts[b] += n
	}
}

// Fold is the fold of the samples of the slots from from on (a slot that
// straddles from included whole: see Straddles), decayed from reference
// as NewFold's are.
func (s *Slots) Fold(from, reference time.Time) *Fold {
	f := NewFold(s.Resource, s.HalfLife, reference)
	keys := make([]int64, 0, len(s.slots))
	for k := range s.slots {
		if !s.start(k + 1).After(from) {
			continue
		}
		keys = append(keys, k)
	}
	// In time order, so that the sums are the same whatever the map's.
	slices.Sort(keys)
	for _, k := range keys {
		sl := s.slots[k]
		if sl.samples == 0 {
			continue
		}
		scale := 1.0
		if s.HalfLife > 0 {
			if f.hist.reference.IsZero() {
				f.hist.reference = s.start(k).Round(s.HalfLife)
			}
			scale = math.Exp2(float64(s.start(k).Sub(f.hist.reference)) / float64(s.HalfLife))
		}
		buckets := make([]int, 0, len(sl.weights))
		for b := range sl.weights {
			buckets = append(buckets, b)
		}
		slices.Sort(buckets)
		for _, b := range buckets {
			w := sl.weights[b] * scale
			f.hist.weights[b] += w
			f.hist.total += w
			f.counts[b] += sl.counts[b]
		}
		if f.samples == 0 || sl.first.Before(f.first) {
			f.first = sl.first
		}
		if f.samples == 0 || sl.last.After(f.last) {
			f.last = sl.last
		}
		if f.samples == 0 || sl.peak > f.peak {
			f.peak = sl.peak
		}
		f.samples += sl.samples
	}
	f.hist.bounds()
	f.points, f.period = s.Points(from), s.Length
	return f
}

// bounds sets the lowest and highest bucket holding a weight of epsilon
// or more, after weights were set directly.
func (h *Histogram) bounds() {
	last := len(h.weights) - 1
	h.minBucket, h.maxBucket = last, 0
	for b, w := range h.weights {
		if w >= h.opts.Epsilon {
			h.minBucket = min(h.minBucket, b)
			h.maxBucket = max(h.maxBucket, b)
		}
	}
}

// slotsVersion is the first byte of MarshalBinary's encoding: 2 added
// each slot's OOM kills and startup peaks; 3 keeps an OOM kill per pod,
// where 2 kept one per time and so counted the pods killed at one time
// as one.
const slotsVersion = 3

// ErrSlotsVersion is the error of an encoding of slots of another version
// than this one writes.
var ErrSlotsVersion = errors.New("slots of another format")

// MarshalBinary encodes the slots: their settings, then per slot its
// samples, first and last time, peak, the buckets it holds, its OOM kills
// and its startup peaks.
func (s *Slots) MarshalBinary() ([]byte, error) {
	b := []byte{slotsVersion}
	b = binary.AppendUvarint(b, uint64(len(s.Resource)))
	b = append(b, s.Resource...)
	b = binary.AppendVarint(b, int64(s.HalfLife))
	b = binary.AppendVarint(b, int64(s.Length))
	b = binary.AppendVarint(b, s.Anchor.UnixNano())
	keys := make([]int64, 0, len(s.slots))
	for k := range s.slots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		sl := s.slots[k]
		b = binary.AppendVarint(b, k)
		b = binary.AppendUvarint(b, uint64(sl.samples))
		b = binary.AppendVarint(b, sl.first.UnixNano())
		b = binary.AppendVarint(b, sl.last.UnixNano())
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sl.peak))
		buckets := make([]int, 0, len(sl.weights))
		for bucket := range sl.weights {
			buckets = append(buckets, bucket)
		}
		slices.Sort(buckets)
		b = binary.AppendUvarint(b, uint64(len(buckets)))
		for _, bucket := range buckets {
			b = binary.AppendUvarint(b, uint64(bucket))
			b = binary.AppendUvarint(b, uint64(sl.counts[bucket]))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sl.weights[bucket]))
		}
		ooms := slices.SortedFunc(slices.Values(sl.ooms), time.Time.Compare)
		b = binary.AppendUvarint(b, uint64(len(ooms)))
		for _, t := range ooms {
			b = binary.AppendVarint(b, t.UnixNano())
		}
		startups := slices.SortedFunc(slices.Values(sl.startups), func(a, b Sample) int { return a.Time.Compare(b.Time) })
		b = binary.AppendUvarint(b, uint64(len(startups)))
		for _, p := range startups {
			b = binary.AppendVarint(b, p.Time.UnixNano())
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Value))
		}
	}
	return b, nil
}

// errSlots is the error of an encoding that is not one of MarshalBinary.
var errSlots = errors.New("not an encoding of slots")

// UnmarshalBinary decodes what MarshalBinary encoded. The bytes come from
// the cluster: every count, bucket and weight is checked.
func (s *Slots) UnmarshalBinary(data []byte) error {
	d := slotsDecoder{b: data}
	if v := d.byte(); v != slotsVersion {
		return fmt.Errorf("%w: version %d, not %d", ErrSlotsVersion, v, slotsVersion)
	}
	n := d.uvarint()
	if n > 64 || n > uint64(len(d.b)) {
		return fmt.Errorf("%w: resource name of %d bytes", errSlots, n)
	}
	out := Slots{Resource: corev1.ResourceName(d.bytes(int(n))), slots: map[int64]*slot{}}
	if out.Resource != corev1.ResourceCPU && out.Resource != corev1.ResourceMemory {
		return fmt.Errorf("%w: resource %q", errSlots, out.Resource)
	}
	out.HalfLife, out.Length = time.Duration(d.varint()), time.Duration(d.varint())
	out.Anchor = time.Unix(0, d.varint()).UTC()
	if out.HalfLife < 0 || out.Length < time.Minute {
		return fmt.Errorf("%w: half-life %s, slots of %s", errSlots, out.HalfLife, out.Length)
	}
	buckets := out.opts().numBuckets()
	slotCount := d.uvarint()
	if slotCount > uint64(len(d.b)) {
		return fmt.Errorf("%w: %d slots", errSlots, slotCount)
	}
	// A slot's start must be a time: slots as far as 10,000 lengths from
	// the anchor (27 years of days, a year of hours).
	const farthest = 10_000
	for range slotCount {
		k := d.varint()
		if k > farthest || k < -farthest {
			return fmt.Errorf("%w: slot %d", errSlots, k)
		}
		sl := &slot{weights: map[int]float64{}, counts: map[int]uint32{}}
		sl.samples = int(min(d.uvarint(), math.MaxInt32))
		sl.first, sl.last = time.Unix(0, d.varint()).UTC(), time.Unix(0, d.varint()).UTC()
		sl.peak = d.float()
		held := d.uvarint()
		if held > uint64(buckets) {
			return fmt.Errorf("%w: %d buckets", errSlots, held)
		}
		var counted uint64
		next := uint64(0) // the buckets come in increasing order, each once
		for range held {
			b, c, w := d.uvarint(), d.uvarint(), d.float()
			if b < next || b >= uint64(buckets) || c > math.MaxUint32 || !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("%w: bucket %d of %d samples, weight %v", errSlots, b, c, w)
			}
			next = b + 1
			sl.weights[int(b)], sl.counts[int(b)] = w, uint32(c)
			counted += c
		}
		if err := sl.decodeMemory(&d, out.start(k), out.Length); err != nil {
			return err
		}
		if d.err != nil {
			break
		}
		start, end := out.start(k), out.start(k+1)
		outside := sl.samples > 0 && (sl.first.Before(start) || !sl.last.Before(end))
		if _, dup := out.slots[k]; dup || counted != uint64(sl.samples) || !(sl.peak >= 0) || math.IsInf(sl.peak, 0) || sl.last.Before(sl.first) || outside {
			return fmt.Errorf("%w: slot %d does not add up", errSlots, k)
		}
		out.slots[k] = sl
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("%w: truncated or trailing bytes", errSlots)
	}
	*s = out
	return nil
}

// decodeMemory reads the OOM kills and startup peaks of a slot that
// starts at start, each within the slot: at most one startup peak a
// minute, and OOM kills, one a pod, no more than the bytes left.
func (sl *slot) decodeMemory(d *slotsDecoder, start time.Time, length time.Duration) error {
	most := uint64(length / time.Minute)
	within := func(t time.Time) bool { return !t.Before(start) && t.Before(start.Add(length)) }
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		return fmt.Errorf("%w: %d OOM kills in a slot", errSlots, n)
	}
	for range n {
		t := time.Unix(0, d.varint()).UTC()
		if d.err == nil && !within(t) {
			return fmt.Errorf("%w: an OOM kill out of its slot", errSlots)
		}
		sl.ooms = append(sl.ooms, t)
	}
	n = d.uvarint()
	if n > most || n > uint64(len(d.b)) {
		return fmt.Errorf("%w: %d startup peaks in a slot", errSlots, n)
	}
	for range n {
		p := Sample{Time: time.Unix(0, d.varint()).UTC(), Value: d.float()}
		if d.err == nil && (!within(p.Time) || !(p.Value >= 0) || math.IsInf(p.Value, 0)) {
			return fmt.Errorf("%w: a startup peak of %v out of its slot", errSlots, p.Value)
		}
		sl.startups = append(sl.startups, p)
	}
	return nil
}

// slotsDecoder reads what MarshalBinary wrote, remembering the first
// error; a read past the end gives zeros.
type slotsDecoder struct {
	b   []byte
	err error
}

func (d *slotsDecoder) fail() {
	if d.err == nil {
		d.err = errSlots
	}
	d.b = nil
}

func (d *slotsDecoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *slotsDecoder) bytes(n int) []byte {
	if len(d.b) < n {
		d.fail()
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *slotsDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *slotsDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *slotsDecoder) float() float64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
