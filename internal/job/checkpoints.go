package job

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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
// a run reads only the CPU history that is new; checkpoint.Store is one.
type Checkpoints interface {
	Load(ctx context.Context) (*checkpoint.Checkpoint, error)
	Save(ctx context.Context, entries []checkpoint.Entry, at time.Time) (int, error)
}

// incremental is a run's use of the checkpoint: which targets start from
// it, the day slots each container's CPU is folded into, and the entries
// to save. Namespaces are read concurrently, each by one goroutine.
type incremental struct {
	cfg   Config
	items []collect.Item
	// byNamespace are the items of each namespace that have a want of
	// their own.
	byNamespace map[string][]int
	old         *checkpoint.Checkpoint
	loadErr     string

	mu    sync.Mutex
	state map[usage.Want]*targetState
	save  []checkpoint.Entry
	read  map[string]bool // namespaces read
}

// targetState is what one target's read starts from and folds into.
type targetState struct {
	// from is where its window starts, kept how much of it came from the
	// checkpoint, why why none did.
	from time.Time
	kept time.Duration
	why  string
	// anchor is the start of a slot, length theirs (recommend.PeriodOf).
	anchor time.Time
	length time.Duration
	slots  map[string]*recommend.Slots // by container
	res    usage.Resolution
}

func newIncremental(ctx context.Context, cfg Config, items []collect.Item, byWant map[usage.Want][]int, log *slog.Logger) *incremental {
	in := &incremental{cfg: cfg, items: items, byNamespace: map[string][]int{}, state: map[usage.Want]*targetState{}, read: map[string]bool{}}
	for w, is := range byWant {
		if len(is) == 1 {
			in.byNamespace[w.Ref.Namespace] = append(in.byNamespace[w.Ref.Namespace], is[0])
		}
	}
	old, err := cfg.Checkpoints.Load(ctx)
	if err != nil {
		log.WarnContext(ctx, "cannot read the checkpoints: every target is read cold", "error", err)
		in.loadErr = "checkpoints unreadable"
		old = &checkpoint.Checkpoint{Entries: map[string]checkpoint.Entry{}}
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

// settingsOf identifies what shapes a target's folds: the half-life and
// the resolution its CPU was read at.
func settingsOf(item collect.Item, run recommend.Options, res usage.Resolution) string {
	return fmt.Sprintf("half-life=%s step=%s rate-window=%s", recommend.OptionsFor(run, item.Extensions).HalfLife, res.Step, res.RateWindow)
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
// targets start from the checkpoint: all of them, or none (its CPU is one
// query). Warm, it reads the new history since the checkpoint's end and
// the part of the window's first day slot that the slot shares with the
// time before the window.
func (in *incremental) spans(namespace string, res usage.Resolution, start, end time.Time) []usage.Span {
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
		length := recommend.PeriodOf(end.Sub(start))
		st := &targetState{from: start, anchor: recommend.AnchorOf(end, length), length: length, slots: map[string]*recommend.Slots{}, res: res}
		in.state[w] = st
		all = append(all, warm{w, st})
		e, ok := in.old.Entries[keyOf(item)]
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
		}
		if m := e.Mismatch(checkpoint.Want{UID: item.Workload.UID, Settings: settingsOf(item, in.cfg.Algorithm, res),
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
			if (!anchor.IsZero() && !anchor.Equal(s.Anchor)) || s.Resource != corev1.ResourceCPU {
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
		// The first whole slot of the window: what comes before it is
		// read again, the slot that straddles the window's start dropped.
		length := recommend.PeriodOf(end.Sub(start))
		d := start.Sub(anchor)
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
					s.DropBefore(start)
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
// window they make, adds a history for a container the checkpoint holds
// but the read found nothing new of, and keeps the entry to save. It
// returns what the evidence says of the history.
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
			end = h.End
		}
		if h := resources[corev1.ResourceCPU]; h != nil {
			end, window = h.End, h.Window
			break
		}
	}
	if end.IsZero() {
		return u, ""
	}
	if window == 0 {
		window = end.Sub(st.from)
	}
	entry := checkpoint.Entry{Namespace: item.Namespace, Kind: item.Workload.Kind, Name: item.Workload.Name, UID: item.Workload.UID,
		Settings: settingsOf(item, in.cfg.Algorithm, st.res), End: end, Containers: containersOf(item), Folds: map[string][]byte{}}
	out := usage.Usage{}
	for c, resources := range u {
		out[c] = map[corev1.ResourceName]*usage.History{}
		for res, h := range resources {
			out[c][res] = h
		}
	}
	from := end.Add(-window)
	for key, s := range st.slots {
		c := key[:len(key)-len("/cpu")]
		h := out[c][corev1.ResourceCPU]
		if h == nil {
			h = &usage.History{Window: window, End: end, Step: st.res.Step, Resolution: st.res}
			if out[c] == nil {
				out[c] = map[corev1.ResourceName]*usage.History{}
			}
			out[c][corev1.ResourceCPU] = h
		}
		cp := *h
		f := s.Fold(from, from)
		cp.Fold = f
		out[c][corev1.ResourceCPU] = &cp
		if data, err := s.MarshalBinary(); err == nil {
			entry.Folds[key] = data
		}
	}
	in.save = append(in.save, entry)
	in.read[item.Namespace] = true
	return out, checkpoint.Evidence(window, st.kept, st.why)
}

// withHistory writes how the CPU history came about into the evidence of
// p's CPU resources.
func withHistory(p *plan.Item, history string) {
	if history == "" {
		return
	}
	for ci := range p.Containers {
		for ri := range p.Containers[ci].Resources {
			r := &p.Containers[ci].Resources[ri]
			if r.Resource == corev1.ResourceCPU && r.Evidence != nil {
				r.Evidence.History = history
			}
		}
	}
}

// store saves the run's entries, and those of namespaces it did not read
// as they were, as a new generation of the checkpoint.
func (in *incremental) store(ctx context.Context, log *slog.Logger) {
	in.mu.Lock()
	entries := slices.Clone(in.save)
	for _, e := range in.old.Entries {
		if !in.read[e.Namespace] {
			entries = append(entries, e)
		}
	}
	in.mu.Unlock()
	size, err := in.cfg.Checkpoints.Save(ctx, entries, time.Now())
	if err != nil {
		log.WarnContext(ctx, "cannot write the checkpoints: the next run reads cold", "error", err)
		return
	}
	log.InfoContext(ctx, "checkpoints written", "targets", len(entries), "bytes", size)
}
