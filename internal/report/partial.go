package report

import "strings"

// Partial reports whether the run left something undone: a run cut short,
// an invalid ResourceRecommend, a resource without a recommendation
// because its history could not be read or was too short, or a target that
// could not be rendered. Values held back on purpose do not count.
func (r *Report) Partial() bool {
	if r.Interrupted != "" {
		return true
	}
	for _, e := range r.ResourceRecommends {
		if e.Error != nil || (e.Source != nil && e.Source.Error != "") {
			return true
		}
		for _, c := range e.Containers {
			for _, res := range c.Resources {
				if res.Recommended == "" && res.Reason != "" && !res.HeldBack {
					return true
				}
			}
		}
	}
	return false
}

// ReasonHistoryUnavailable starts the reason of a resource whose history
// could not be read in this run.
const ReasonHistoryUnavailable = "usage history unavailable: "

// Incomplete reports whether this run could not do everything it usually
// would: a run cut short, an invalid ResourceRecommend, history that could
// not be read, or a change that could not be rendered. Such a run proves nothing about
// changes it did not make.
func (r *Report) Incomplete() bool {
	if r.Interrupted != "" {
		return true
	}
	for _, e := range r.ResourceRecommends {
		if e.Error != nil || (e.Source != nil && e.Source.Error != "") {
			return true
		}
		for _, c := range e.Containers {
			for _, res := range c.Resources {
				if strings.HasPrefix(res.Reason, ReasonHistoryUnavailable) {
					return true
				}
			}
		}
	}
	return false
}
