package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
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
// the queries of one read. Reader is one.
type SettingsReader interface {
	ReadEach(ctx context.Context, namespace string, groups map[Settings][]WorkloadRef) (map[Settings]map[WorkloadRef]Usage, error)
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
	perWant bool
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

// Workloads is how many workloads' histories were read.
func (h *Histories) Workloads() int { return len(h.usage) }

// ReadAll reads the history of every want, one read per namespace
// whatever windows and peak intervals the wants set, so that the number of
// queries grows with namespaces, not with workloads, containers or
// settings. Namespaces are read in order. A namespace whose read fails is
// logged and its wants answer that error; when every namespace fails, the
// error wraps ErrUnavailable and the histories still say why for each.
func ReadAll(ctx context.Context, reader NamespaceReader, wants []Want, log *slog.Logger) (*Histories, error) {
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

	var errs []error
	for _, ns := range namespaces {
		var (
			got map[Settings]map[WorkloadRef]Usage
			err error
		)
		if perWant {
			got, err = settingsReader.ReadEach(ctx, ns, groups[ns])
		} else {
			var u map[WorkloadRef]Usage
			u, err = reader.Read(ctx, ns, groups[ns][Settings{}])
			got = map[Settings]map[WorkloadRef]Usage{{}: u}
		}
		if err != nil {
			log.ErrorContext(ctx, "cannot read usage history", "namespace", ns, "error", err)
			h.failed[ns] = err
			errs = append(errs, err)
			continue
		}
		for s, byRef := range got {
			for ref, u := range byRef {
				h.usage[Want{Ref: ref, Settings: s}] = u
			}
		}
	}
	if len(errs) > 0 && len(errs) == len(namespaces) {
		return h, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
	}
	return h, nil
}
