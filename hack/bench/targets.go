package bench

import (
	"fmt"
	"strings"
)

// Issue 25's targets, which the summary checks.
const (
	// maxPeakRSS is the job's peak resident set size, cold and warm.
	maxPeakRSS = 400 << 20
	// maxRunOverFloor is the run's wall time over its floor's.
	maxRunOverFloor = 1.5
	// minBaselineOverWarmHistory is the baseline's wall time over the warm
	// history stage's.
	minBaselineOverWarmHistory = 10
	// maxWarmScannedOverCold is the warm run's samples scanned over the
	// cold run's.
	maxWarmScannedOverCold = 0.2
	// maxCheckpointBytes is the checkpoints' data, all pages together.
	maxCheckpointBytes = 20 << 20
)

// Target is one of the targets, as a scale's figures meet it or
// not. The issue sets each at some scales (At); the benchmark checks it
// at every scale it has the figure for.
type Target struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Want is the bound, e.g. "<= 1.5".
	Want string `json:"want"`
	Met  bool   `json:"met"`
	// At names the scales the issue sets the target at.
	At string `json:"at"`
}

// targets checks the figures measured so far against the targets;
// a target whose figure was not measured is left out.
func (r *Result) targets() []Target {
	var out []Target
	add := func(name, value, want, at string, met bool) {
		out = append(out, Target{Name: name, Value: value, Want: want, Met: met, At: at})
	}
	rss := func(name string, peak int64) {
		if peak > 0 {
			add(name, formatBytes(peak), "<= "+formatBytes(maxPeakRSS), "N = 5,000 and 20,000", peak <= maxPeakRSS)
		}
	}
	runOverFloor := func(name string, v float64, at string) {
		if v > 0 {
			add(name, formatRatio(v), fmt.Sprintf("<= %gx", maxRunOverFloor), at, v <= maxRunOverFloor)
		}
	}
	pages := func(name string, calls []string) {
		if len(calls) > 0 {
			p := checkPages(calls)
			add(name, p.String(), "every list paged", "N = 20,000", len(p.Unpaged) == 0)
		}
	}
	rss("peak RSS", r.Total.PeakRSS)
	runOverFloor("run/floor", r.Ratios.RunOverFloor, "N = 5,000 and 20,000")
	pages("apiserver requests pages only", r.APICalls)
	w := r.Warm
	if w == nil {
		return out
	}
	rss("warm peak RSS", w.Total.PeakRSS)
	runOverFloor("warm run/floor", w.Ratios.RunOverFloor, "N = 20,000")
	pages("warm apiserver requests pages only", w.APICalls)
	if v := w.Ratios.BaselineOverHistory; v > 0 {
		add("baseline/warm history", formatRatio(v), fmt.Sprintf(">= %dx", minBaselineOverWarmHistory), "N = 5,000", v >= minBaselineOverWarmHistory)
	}
	if v := w.ScannedOverCold; v > 0 {
		add("warm scanned/cold scanned", formatRatio(v), fmt.Sprintf("<= %gx", maxWarmScannedOverCold), "N = 5,000", v <= maxWarmScannedOverCold)
	}
	add("warm values equal to a stateless run's at the same moment", fmt.Sprintf("%s of %s differ", formatCount(int64(w.Differ)), formatCount(int64(w.Values))),
		"none differs", "N = 5,000", w.Values > 0 && w.Differ == 0)
	add("checkpoints", fmt.Sprintf("%s (%d ConfigMaps)", formatBytes(w.CheckpointBytes), w.CheckpointPages), "<= "+formatBytes(maxCheckpointBytes), "N = 5,000",
		w.CheckpointPages > 0 && w.CheckpointBytes <= maxCheckpointBytes)
	return out
}

// formatTargets writes targets on one line, each met or missed.
func formatTargets(targets []Target) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		verdict := "MISSED"
		if t.Met {
			verdict = "met"
		}
		parts[i] = fmt.Sprintf("%s %s (target %s, set at %s): %s", t.Name, t.Value, t.Want, t.At, verdict)
	}
	return strings.Join(parts, "; ")
}

// Pages sorts a run's apiserver requests, as Result.APICalls writes them
// ("GET /apis/apps/v1/deployments?continue&limit=500"): pages of lists,
// which carry limit= (and continue on every page after the first);
// discovery; reads of one named object; writes. Unpaged are the reads of
// a collection without limit=, whose answers grow with the cluster.
type Pages struct {
	Pages, Discovery, Objects, Writes int
	Unpaged                           []string
}

// String is the count of each kind, and the unpaged reads.
func (p Pages) String() string {
	s := fmt.Sprintf("%d list pages, %d discovery, %d reads of one object, %d writes", p.Pages, p.Discovery, p.Objects, p.Writes)
	if len(p.Unpaged) > 0 {
		s += "; unpaged: " + strings.Join(p.Unpaged, ", ")
	}
	return s
}

// checkPages sorts calls.
func checkPages(calls []string) Pages {
	var p Pages
	for _, c := range calls {
		method, target, _ := strings.Cut(c, " ")
		path, query, _ := strings.Cut(target, "?")
		switch {
		case method != "GET":
			p.Writes++
		case isDiscovery(path):
			p.Discovery++
		case !isCollection(path):
			p.Objects++
		case strings.Contains("&"+query+"&", "&limit="):
			p.Pages++
		default:
			p.Unpaged = append(p.Unpaged, c)
		}
	}
	return p
}

// isDiscovery says whether path is the apiserver's version, its list of
// groups or of a group version's resources.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "version":
		return len(parts) == 1
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// isCollection says whether path names a collection of objects, cluster-
// wide or of a namespace, rather than one object or subresource.
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	return len(parts) == 1 || (len(parts) == 3 && parts[0] == "namespaces")
}
