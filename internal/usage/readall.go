package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// ErrUnavailable is returned by ReadAll when no namespace's history could
// be read.
var ErrUnavailable = errors.New("usage history unavailable")

// NamespaceReader reads the history of one namespace's workloads, with the
// reader's own settings.
type NamespaceReader interface {
	Read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error)
}

// SettingsReader is a NamespaceReader that can also read groups of
// workloads with other windows or memory peak intervals than its own, in
// the queries of one read, and fold their CPU samples as they are read
// when fold is not nil. Reader is one.
type SettingsReader interface {
	ReadEach(ctx context.Context, namespace string, groups map[Settings][]WorkloadRef, fold FoldFunc) (map[Settings]map[WorkloadRef]Usage, error)
}

// Want is a workload whose history a run needs, and the settings to read
// it with; zero settings are the reader's own.
type Want struct {
	Ref      WorkloadRef
	Settings Settings
}

// Histories is what ReadAll found.
type Histories struct {
	usage  map[Want]Usage
	failed map[string]error
	// perWant says whether each want was read with its own settings; a
	// reader that cannot honour them reads all with its own.
	perWant   bool
	workloads int
	// replicas are the average replica counts read (WithAverageReplicas).
	replicas map[WorkloadRef]Replicas
}

// Replicas is a workload's average replica count over a window.
type Replicas struct {
	Average float64
	Window  time.Duration
}

// AverageReplicas is the average replica count of ref over its window,
// when WithAverageReplicas asked for it and kube-state-metrics had it.
func (h *Histories) AverageReplicas(ref WorkloadRef) (Replicas, bool) {
	v, ok := h.replicas[ref]
	return v, ok
}

// Of returns the history of w, or why its namespace could not be read. A
// workload of a namespace that was read but without samples has none.
func (h *Histories) Of(w Want) (Usage, error) {
	if err := h.failed[w.Ref.Namespace]; err != nil {
		return nil, err
	}
	if !h.perWant {
		w.Settings = Settings{}
	}
	return h.usage[w], nil
}

// Workloads is how many workloads' histories were read, handed to
// WithEach or kept.
func (h *Histories) Workloads() int { return h.workloads }

// ReadAllOption configures ReadAll.
type ReadAllOption func(*readAllOptions)

type readAllOptions struct {
	concurrency int
	fold        FoldFunc
	each        func(namespace string, h *Histories)
	spans       SpansFunc
	// scaled are the workloads whose average replica count is read, and
	// over which window.
	scaled map[WorkloadRef]time.Duration
}

// WithAverageReplicas has the average replica count of each of scaled
// (the targets an HPA scales) read over its window, where the reader is
// a ReplicaReader: one more query in a namespace that holds any, none in
// the others. A failed query is logged and leaves the counts out; the
// history stands.
func WithAverageReplicas(scaled map[WorkloadRef]time.Duration) ReadAllOption {
	return func(o *readAllOptions) { o.scaled = scaled }
}

// WithSpans has the history of each namespace read only in the spans
// fn returns, where the reader is a SpanReader: the rest of the window is
// in the folds already (a checkpoint's).
func WithSpans(fn SpansFunc) ReadAllOption {
	return func(o *readAllOptions) { o.spans = fn }
}

// DefaultConcurrency is how many namespaces ReadAll reads at a time unless
// told otherwise: one after the other.
const DefaultConcurrency = 1

// WithConcurrency reads up to n namespaces at a time, each with its own
// queries; n below 1 counts as 1. The reader must then be safe for
// concurrent use, as Reader is.
func WithConcurrency(n int) ReadAllOption {
	return func(o *readAllOptions) { o.concurrency = max(n, 1) }
}

// WithFolds has the CPU samples of each want folded as they are read, by
// the folds fn returns, where the reader is a SettingsReader; see
// FoldFunc.
func WithFolds(fn FoldFunc) ReadAllOption {
	return func(o *readAllOptions) { o.fold = fn }
}

// WithEach hands the histories of each namespace to fn as soon as they
// are read, instead of keeping them until ReadAll returns, so that a run
// holds no more history than that of the namespaces being read. fn is
// called from the goroutine that read the namespace, up to
// WithConcurrency at a time; a namespace whose read failed answers its
// error. The Histories ReadAll returns then holds no history, only the
// namespaces that failed.
func WithEach(fn func(namespace string, h *Histories)) ReadAllOption {
	return func(o *readAllOptions) { o.each = fn }
}

// ReadAll reads the history of every want, one read per namespace
// whatever windows and peak intervals the wants set, so that the number of
// queries grows with namespaces, not with workloads, containers or
// settings. Namespaces are read in the order of their names, up to
// WithConcurrency at a time; what ReadAll returns does not depend on the
// order in which the reads end. A namespace whose read fails is logged
// and its wants answer that error; when every namespace fails, the error
// wraps ErrUnavailable, joining the namespaces' errors in the order of
// their names, and the histories still say why for each.
func ReadAll(ctx context.Context, reader NamespaceReader, wants []Want, log *slog.Logger, opts ...ReadAllOption) (*Histories, error) {
	o := readAllOptions{concurrency: DefaultConcurrency}
	for _, opt := range opts {
		opt(&o)
	}
	settingsReader, perWant := reader.(SettingsReader)
	h := &Histories{usage: map[Want]Usage{}, failed: map[string]error{}, perWant: perWant}
	groups := map[string]map[Settings][]WorkloadRef{}
	for _, w := range wants {
		if !perWant {
			w.Settings = Settings{}
		}
		ns := w.Ref.Namespace
		if groups[ns] == nil {
			groups[ns] = map[Settings][]WorkloadRef{}
		}
		if !slices.Contains(groups[ns][w.Settings], w.Ref) {
			groups[ns][w.Settings] = append(groups[ns][w.Settings], w.Ref)
		}
	}
	namespaces := make([]string, 0, len(groups))
	for ns := range groups {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)

	// Each namespace's outcome has its own slot, filled by whichever
	// goroutine reads it, and is merged below in the order of names.
	outcomes := make([]outcome, len(namespaces))
	read := func(i int) {
		ns := namespaces[i]
		var out outcome
		spanReader, spans := reader.(SpanReader)
		switch {
		case spans && o.spans != nil:
			out.got, out.err = spanReader.ReadSpans(ctx, ns, groups[ns], o.fold, o.spans)
		case perWant:
			out.got, out.err = settingsReader.ReadEach(ctx, ns, groups[ns], o.fold)
		default:
			var u map[WorkloadRef]Usage
			u, out.err = reader.Read(ctx, ns, groups[ns][Settings{}])
			out.got = map[Settings]map[WorkloadRef]Usage{{}: u}
		}
		if out.err != nil {
			log.ErrorContext(ctx, "cannot read usage history", "namespace", ns, "error", out.err)
		} else {
			out.replicas = averageReplicas(ctx, reader, ns, o.scaled, log)
		}
		if o.each != nil {
			o.each(ns, out.histories(perWant, ns))
			out.got = nil // handed over
		}
		outcomes[i] = out
	}
	if workers := min(o.concurrency, len(namespaces)); workers <= 1 {
		for i := range namespaces {
			read(i)
		}
	} else {
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range next {
					read(i)
				}
			})
		}
		for i := range namespaces {
			next <- i
		}
		close(next)
		wg.Wait()
	}

	var errs []error
	for i, ns := range namespaces {
		out := outcomes[i]
		if out.err != nil {
			h.failed[ns] = out.err
			errs = append(errs, out.err)
			continue
		}
		h.workloads += out.workloads + h.keep(out.got)
		if o.each == nil {
			if h.replicas == nil {
				h.replicas = map[WorkloadRef]Replicas{}
			}
			maps.Copy(h.replicas, out.replicas)
		}
	}
	if len(errs) > 0 && len(errs) == len(namespaces) {
		return h, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
	}
	return h, nil
}

// outcome is what the read of one namespace found.
type outcome struct {
	got       map[Settings]map[WorkloadRef]Usage
	err       error
	workloads int
	replicas  map[WorkloadRef]Replicas
}

// averageReplicas reads the average replica counts of the workloads of
// scaled in namespace, over the longest of their windows; nil when there
// are none, or the reader cannot.
func averageReplicas(ctx context.Context, reader NamespaceReader, namespace string, scaled map[WorkloadRef]time.Duration, log *slog.Logger) map[WorkloadRef]Replicas {
	rr, ok := reader.(ReplicaReader)
	if !ok {
		return nil
	}
	var refs []WorkloadRef
	var window time.Duration
	for ref, w := range scaled {
		if ref.Namespace == namespace {
			refs = append(refs, ref)
			window = max(window, w)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	got, window, err := rr.AverageReplicas(ctx, namespace, refs, window)
	if err != nil {
		log.WarnContext(ctx, "cannot read the average replicas: the HPAs' current counts stand for them", "namespace", namespace, "error", err)
		return nil
	}
	out := make(map[WorkloadRef]Replicas, len(got))
	for ref, v := range got {
		out[ref] = Replicas{Average: v, Window: window}
	}
	return out
}

// histories are the outcome's alone, for WithEach.
func (out *outcome) histories(perWant bool, namespace string) *Histories {
	h := &Histories{usage: map[Want]Usage{}, failed: map[string]error{}, perWant: perWant}
	if out.err != nil {
		h.failed[namespace] = out.err
		return h
	}
	h.workloads = h.keep(out.got)
	h.replicas = out.replicas
	out.workloads = h.workloads
	return h
}

// keep adds what a namespace's read got, and says how many histories.
func (h *Histories) keep(got map[Settings]map[WorkloadRef]Usage) int {
	n := 0
	for s, byRef := range got {
		for ref, u := range byRef {
			h.usage[Want{Ref: ref, Settings: s}] = u
			n++
		}
	}
	return n
}
