package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// Checkpoints keep the folds of a shard's targets between runs, so that
// a run reads only the history that is new; checkpoint.Store is one.
type Checkpoints interface {
	Load(ctx context.Context) (*checkpoint.Checkpoint, error)
	Save(ctx context.Context, entries []checkpoint.Packed, at time.Time) (checkpoint.Saved, error)
}

// incremental is a run's use of the checkpoint: which targets start from
// it, the day slots each container's CPU and memory are folded into, and
// the entries to save. Namespaces are read concurrently, each by one goroutine.
type incremental struct {
	cfg   Config
	items []collect.Item
	// byNamespace are the items of each namespace that have a want of
	// their own.
	byNamespace map[string][]int
	// byKey is the index of each of those items by its checkpoint's key,
	// kept as the items are let go.
	byKey   map[string]int
	old     *checkpoint.Checkpoint
	loadErr string

	mu    sync.Mutex
	state map[usage.Want]*targetState
	save  []checkpoint.Packed
	read  map[string]bool // namespaces read
}

// targetState is what one target's read starts from and folds into.
type targetState struct {
	// from is where its window starts, earliest where the earliest of
	// its queries does (memory's may start before CPU's), kept how much
	// of it came from the checkpoint, why why none did.
	from, earliest time.Time
	kept           time.Duration
	why            string
	// read is the namespace's read: its resolution, end and window (for
	// a target it found nothing new of), and what its settings name.
	read usage.Window
	// anchor is the start of a slot, length theirs (recommend.PeriodOf).
	anchor time.Time
	length time.Duration
	slots  map[string]*recommend.Slots // by container/resource
}

func newIncremental(ctx context.Context, cfg Config, items []collect.Item, byWant map[usage.Want][]int, log *slog.Logger) *incremental {
	in := &incremental{cfg: cfg, items: items, byNamespace: map[string][]int{}, byKey: map[string]int{}, state: map[usage.Want]*targetState{}, read: map[string]bool{}}
	for w, is := range byWant {
		if len(is) == 1 {
			in.byNamespace[w.Ref.Namespace] = append(in.byNamespace[w.Ref.Namespace], is[0])
			in.byKey[keyOf(items[is[0]])] = is[0]
		}
	}
	// In the items' order, not the map's: the first target that cannot
	// start warm names the reason for its namespace, the same every run.
	for _, is := range in.byNamespace {
		slices.Sort(is)
	}
	old, err := cfg.Checkpoints.Load(ctx)
	if err != nil {
		log.WarnContext(ctx, "cannot read the checkpoints: every target is read cold", "error", err)
		in.loadErr = "checkpoints unreadable"
		old = &checkpoint.Checkpoint{Entries: map[string]checkpoint.Packed{}}
	}
	for _, s := range old.Skipped {
		log.WarnContext(ctx, "a checkpoint page is ignored, its targets read cold", "page", s)
	}
	in.old = old
	return in
}

func keyOf(item collect.Item) string {
	return item.Namespace + "/" + item.Workload.Kind + "/" + item.Workload.Name
}

// settingsOf identifies what shapes a target's folds: the half-life, the
// resolution its CPU was read at, how its memory was, and the label filter
// that chose its series (named only when set, so that checkpoints of runs
// without one stay valid).
func settingsOf(item collect.Item, run recommend.Options, win usage.Window) string {
	s := fmt.Sprintf("half-life=%s step=%s rate-window=%s %s", recommend.OptionsFor(run, item.Extensions).HalfLife, win.Resolution.Step, win.Resolution.RateWindow, win.Memory)
	if win.Filter != "" {
		s += " filter=" + strconv.Quote(win.Filter)
	}
	return s
}

func containersOf(item collect.Item) []string {
	var out []string
	for _, c := range item.Workload.Containers {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// spans decides, once the resolution of namespace is known, whether its
// targets start from the checkpoint: all of them, or none (each of its
// resources is one query). Warm, it reads the new history since the
// checkpoint's end and the window's first day slot that starts before
// every query's window does (CPU's, memory's, the hourly ones'), from
// the earliest start on.
func (in *incremental) spans(namespace string, win usage.Window) []usage.Span {
	start, end := win.Earliest, win.End
	in.mu.Lock()
	defer in.mu.Unlock()
	type warm struct {
		w     usage.Want
		state *targetState
	}
	var all []warm
	var why string
	var last, anchor time.Time
	for _, i := range in.byNamespace[namespace] {
		item := in.items[i]
		w := recommend.WantOf(item)
		length := recommend.PeriodOf(win.Window)
		st := &targetState{from: start, earliest: start, anchor: recommend.AnchorOf(end, length), length: length, slots: map[string]*recommend.Slots{}, read: win}
		in.state[w] = st
		all = append(all, warm{w, st})
		packed, ok := in.old.Entries[keyOf(item)]
		switch {
		case why != "":
			continue
		case in.loadErr != "":
			why = in.loadErr
			continue
		case !ok && len(in.old.Skipped) > 0:
			// It may have been on a page that was ignored.
			why = "checkpoint unreadable"
			continue
		case !ok:
			why = "no checkpoint"
			continue
		case w.Settings.Window != 0:
			why = "a window of its own is read whole"
			continue
		case w.Settings.PeakInterval != 0:
			// Its peaks are cut from the namespace's finer ones.
			why = "a peak interval of its own is read whole"
			continue
		}
		e, err := packed.Entry()
		switch {
		case err != nil:
			why = "checkpoint unreadable"
			continue
		case olderFormat(e):
			why = "checkpoint of an older format"
			continue
		}
		if m := e.Mismatch(checkpoint.Want{UID: item.Workload.UID, Settings: settingsOf(item, in.cfg.Algorithm, win),
			Containers: containersOf(item), Window: end.Sub(start)}, end); m != "" {
			why = m
			continue
		}
		if !last.IsZero() && !last.Equal(e.End) {
			why = "checkpoints of several ends"
			continue
		}
		last = e.End
		for key, data := range e.Folds {
			s := &recommend.Slots{}
			if err := s.UnmarshalBinary(data); err != nil {
				why = "checkpoint unreadable"
				break
			}
			// Slots that hold what came after the entry's end would be
			// read again, and count twice.
			if (!anchor.IsZero() && !anchor.Equal(s.Anchor)) || !strings.HasSuffix(key, "/"+string(s.Resource)) || s.Latest().After(e.End) {
				why = "checkpoint unreadable"
				break
			}
			// Slots of another length, or not at a whole UTC day or hour,
			// would cut the usage chart's periods otherwise than a cold run.
			if s.Length != st.length || !s.Anchor.Equal(recommend.AnchorOf(s.Anchor, s.Length)) {
				why = "checkpoint of other slots"
				break
			}
			anchor = s.Anchor
			st.slots[key] = s
		}
	}
	if why == "" && !anchor.IsZero() {
		// The first slot that starts within every query's window: what
		// comes before it is read again, from the earliest start, the
		// slots before it dropped.
		length := recommend.PeriodOf(win.Window)
		d := win.Latest.Sub(anchor)
		k := d / length
		if d%length != 0 && d > 0 {
			k++
		}
		boundary := anchor.Add(k * length)
		if !boundary.Before(last) {
			why = "checkpoint within the window's first day"
		} else {
			var out []usage.Span
			if boundary.After(start) {
				out = append(out, usage.Span{From: start, To: boundary.Add(-time.Nanosecond)})
			}
			out = append(out, usage.Span{From: last.Add(time.Nanosecond), To: end})
			for _, t := range all {
				t.state.anchor = anchor
				t.state.kept = last.Sub(boundary)
				for _, s := range t.state.slots {
					s.DropBefore(win.Latest)
				}
			}
			return out
		}
	}
	if why == "" {
		why = "no checkpoint"
	}
	for _, t := range all {
		t.state.why, t.state.kept, t.state.anchor = why, 0, recommend.AnchorOf(end, t.state.length)
		t.state.slots = map[string]*recommend.Slots{}
	}
	return nil
}

// olderFormat reports whether e's folds are of an encoding older than
// this version's (one of them tells: a run writes all alike): the first
// held CPU alone, the second counted the pods killed at one time as one.
func olderFormat(e checkpoint.Entry) bool {
	for _, data := range e.Folds {
		return errors.Is((&recommend.Slots{}).UnmarshalBinary(data), recommend.ErrSlotsVersion)
	}
	return false
}

// fold is the FoldFunc of a checkpointed run: the container's day slots,
// from the checkpoint or new.
func (in *incremental) fold(w usage.Want, container string, h *usage.History) usage.Fold {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.state[w]
	if st == nil {
		return nil // items that share a want keep their samples
	}
	key := container + "/" + string(corev1.ResourceCPU)
	s := st.slots[key]
	if s == nil {
		item := in.items[in.byWant(w)]
		s = recommend.NewSlots(corev1.ResourceCPU, recommend.OptionsFor(in.cfg.Algorithm, item.Extensions).HalfLife, st.length, st.anchor)
		st.slots[key] = s
	}
	return s
}

func (in *incremental) byWant(w usage.Want) int {
	for _, i := range in.byNamespace[w.Ref.Namespace] {
		if recommend.WantOf(in.items[i]) == w {
			return i
		}
	}
	return -1
}

// folded replaces the day slots in u's CPU histories by the folds of the
// window they make, folds u's memory peaks, OOM kills and startup peaks
// into day slots of their own and replaces them by what those slots hold
// of the window, adds a history for a container the checkpoint holds but
// the read found nothing new of, and keeps the entry to save. It returns
// what the evidence says of the history.
func (in *incremental) folded(item collect.Item, u usage.Usage) (usage.Usage, string) {
	w := recommend.WantOf(item)
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.state[w]
	if st == nil {
		return u, ""
	}
	var end time.Time
	var window time.Duration
	for _, resources := range u {
		if h := resources[corev1.ResourceMemory]; h != nil {
			end, window = h.End, h.Window
		}
		if h := resources[corev1.ResourceCPU]; h != nil {
			end, window = h.End, h.Window
			break
		}
	}
	if end.IsZero() {
		// Nothing new was read: the checkpoint may hold the window.
		if len(st.slots) == 0 || st.read.Window == 0 {
			return u, ""
		}
		end, window = st.read.End, st.read.Window
	}
	if window == 0 {
		window = end.Sub(st.from)
	}
	// Series another job wrote under a container's labels are in its
	// slots: the entry is not saved, so that they never outlive this
	// read, and the target is read cold next time.
	refused := false
	for c := range u {
		refused = refused || u.Refusal(c) != nil
	}
	entry := checkpoint.Entry{Namespace: item.Namespace, Kind: item.Workload.Kind, Name: item.Workload.Name, UID: item.Workload.UID,
		Settings: settingsOf(item, in.cfg.Algorithm, st.read), End: end, Containers: containersOf(item), Folds: map[string][]byte{}}
	out := usage.Usage{}
	halfLife := recommend.OptionsFor(in.cfg.Algorithm, item.Extensions).HalfLife
	for c, resources := range u {
		out[c] = map[corev1.ResourceName]*usage.History{}
		for res, h := range resources {
			out[c][res] = h
		}
		// What was read of memory joins the slots: each peak, kill and
		// startup peak is read once, in the run that first saw its time.
		h := resources[corev1.ResourceMemory]
		if h == nil {
			continue
		}
		key := c + "/" + string(corev1.ResourceMemory)
		s := st.slots[key]
		if s == nil {
			s = recommend.NewSlots(corev1.ResourceMemory, halfLife, st.length, st.anchor)
			st.slots[key] = s
		}
		for i, v := range h.Values {
			s.Add(h.Time(i), v)
		}
		s.AddOOMKills(h.OOMKills)
		for _, p := range h.StartupPeaks {
			s.AddStartupPeak(p.Time, p.Value)
		}
	}
	from := end.Add(-window)
	for key, s := range st.slots {
		c, res, _ := strings.Cut(key, "/")
		h := out[c][s.Resource]
		if h == nil {
			h = &usage.History{Window: window, End: end, Step: st.read.Resolution.Step, Resolution: st.read.Resolution}
			if s.Resource == corev1.ResourceMemory {
				h.Step, h.Resolution = 0, usage.Resolution{}
			}
			if out[c] == nil {
				out[c] = map[corev1.ResourceName]*usage.History{}
			}
		}
		cp := *h
		if res == string(corev1.ResourceMemory) {
			// Each fold takes its own window: memory's may start before
			// CPU's, on the grid of its peaks.
			cp.Values, cp.Times = nil, nil
			cp.Fold = s.Fold(st.earliest, from)
			cp.OOMKills = s.OOMKills(st.earliest)
			cp.OOMKilled = len(cp.OOMKills) > 0
			cp.StartupPeaks = nil
			for _, p := range s.StartupPeaks(st.earliest) {
				cp.StartupPeaks = append(cp.StartupPeaks, usage.Point{Time: p.Time, Value: p.Value})
			}
		} else {
			cp.Fold = s.Fold(from, from)
		}
		out[c][s.Resource] = &cp
		if data, err := s.MarshalBinary(); err == nil {
			entry.Folds[key] = data
		}
	}
	// The entry holds the slots encoded and packed, a hundred bytes or so
	// a container where their maps take kilobytes: the slots are let go,
	// so that a run holds those of the namespaces it is reading, not of
	// every target. An entry that cannot be packed is not saved, and its
	// target is read cold next time.
	if packed, err := checkpoint.Pack(entry); err == nil && !refused {
		in.save = append(in.save, packed)
	}
	in.read[item.Namespace] = true
	delete(in.state, w)
	return out, checkpoint.Evidence(window, st.kept, st.why)
}

// withHistory writes how the history came about into the evidence of p's
// resources.
func withHistory(p *plan.Item, history string) {
	if history == "" {
		return
	}
	for r := range p.AllResources() {
		if r.Evidence != nil {
			r.Evidence.History = history
		}
	}
}

// store saves the run's entries, and those of namespaces it did not read
// as they were, as a new generation of the checkpoint. It logs and returns
// the entries left out as larger than a page: their targets read cold
// next run.
func (in *incremental) store(ctx context.Context, log *slog.Logger) []checkpoint.LeftOut {
	in.mu.Lock()
	entries := slices.Clone(in.save)
	for _, e := range in.old.Entries {
		if !in.read[e.Namespace] {
			entries = append(entries, e)
		}
	}
	in.mu.Unlock()
	saved, err := in.cfg.Checkpoints.Save(ctx, entries, time.Now())
	if err != nil {
		log.WarnContext(ctx, "cannot write the checkpoints: the next run reads cold", "error", err)
		return nil
	}
	for _, l := range saved.LeftOut {
		log.WarnContext(ctx, "a checkpoint larger than a page is left out: its target is read cold next run",
			"target", l.Key, "bytes", l.Bytes, "unpacked", l.Unpacked, "reason", l.Why())
	}
	log.InfoContext(ctx, "checkpoints written", "targets", len(entries)-len(saved.LeftOut), "leftOut", len(saved.LeftOut), "bytes", saved.Bytes)
	return saved.LeftOut
}

// noteLeftOut adds to the history of each item of p whose checkpoint was
// left out why it was.
func (in *incremental) noteLeftOut(p *plan.Plan, leftOut []checkpoint.LeftOut) {
	for _, l := range leftOut {
		i, ok := in.byKey[l.Key]
		if !ok {
			continue // an entry kept of a namespace not read: no item of this run
		}
		for r := range p.Items[i].AllResources() {
			if r.Evidence != nil {
				r.Evidence.History = strings.TrimPrefix(r.Evidence.History+"; "+l.Why(), "; ")
			}
		}
	}
}
