package plan

import (
	"slices"
	"strings"
)

// Partial reports whether the run left something undone: a run cut short,
// an invalid ResourceRecommend, a resource without a recommendation
// because its history could not be read or was too short, or a target that
// could not be rendered. Values held back on purpose do not count.
func (p *Plan) Partial() bool {
	return p.lacks(func(r Resource) bool { return r.Recommended == nil && r.Reason != "" && !r.HeldBack })
}

// Incomplete reports whether this run could not do everything it usually
// would: a run cut short, an invalid ResourceRecommend, history that could
// not be read, merged changes that could not be checked, or a change that
// could not be rendered. Such a run proves nothing about changes it did
// not make.
func (p *Plan) Incomplete() bool {
	return p.Unverified != "" || p.lacks(func(r Resource) bool { return strings.HasPrefix(r.Reason, ReasonHistoryUnavailable) })
}

// NothingRendered reports whether the run had values to write and none of
// them could be rendered: every valid item with a value to write has a
// source error (not found, ambiguous, refused, proof failed). Such a run
// changed nothing and must not pass for one that had nothing to change. A
// run cut short, or that never reached the repository, is not one.
func (p *Plan) NothingRendered() bool {
	if p.Interrupted != "" {
		return false
	}
	writes := 0
	for _, it := range p.Items {
		if !it.Valid || !slices.ContainsFunc(it.Containers, func(c Container) bool { return c.Writes() }) {
			continue
		}
		if it.Source == nil || it.Source.Error == "" {
			return false
		}
		writes++
	}
	return writes > 0
}

// lacks reports whether the run was cut short, an item is invalid or not
// rendered, or missing holds for one of the resources.
func (p *Plan) lacks(missing func(Resource) bool) bool {
	if p.Interrupted != "" {
		return true
	}
	for i := range p.Items {
		it := &p.Items[i]
		if it.Error != nil || (it.Source != nil && it.Source.Error != "") {
			return true
		}
		for r := range it.AllResources() {
			if missing(*r) {
				return true
			}
		}
	}
	return false
}
