package plan

import "strings"

// Partial reports whether the run left something undone: a run cut short,
// an invalid ResourceRecommend, a resource without a recommendation
// because its history could not be read or was too short, or a target that
// could not be rendered. Values held back on purpose do not count.
func (p *Plan) Partial() bool {
	return p.lacks(func(r Resource) bool { return r.Recommended == nil && r.Reason != "" && !r.HeldBack })
}

// Incomplete reports whether this run could not do everything it usually
// would: a run cut short, an invalid ResourceRecommend, history that could
// not be read, or a change that could not be rendered. Such a run proves
// nothing about changes it did not make.
func (p *Plan) Incomplete() bool {
	return p.lacks(func(r Resource) bool { return strings.HasPrefix(r.Reason, ReasonHistoryUnavailable) })
}

// lacks reports whether the run was cut short, an item is invalid or not
// rendered, or missing holds for one of the resources.
func (p *Plan) lacks(missing func(Resource) bool) bool {
	if p.Interrupted != "" {
		return true
	}
	for _, it := range p.Items {
		if it.Error != nil || (it.Source != nil && it.Source.Error != "") {
			return true
		}
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if missing(r) {
					return true
				}
			}
		}
	}
	return false
}
