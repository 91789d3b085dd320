package bench

import (
	"strings"
	"time"
)

// Names of the parts of a run that the job does not log as stages.
const (
	// StageStartup is from the process's start to its first stage:
	// reading the settings, building the clients.
	StageStartup = "startup"
	// StageExit is from the last stage to the process's end: the report.
	StageExit = "exit"
	// StageRender is rendering, which the job logs within its git stage;
	// when it does not log it on its own, it is cut from the git stage by
	// the git server's traffic (see splitRender).
	StageRender = "render"
	// StageGit is the job's git stage: clone, commit, push.
	StageGit = "git"
)

// Span is a time interval, its end excluded.
type Span struct {
	Start, End time.Time
}

func (s Span) contains(t time.Time) bool { return !t.Before(s.Start) && t.Before(s.End) }

// Stage is a part of the run, made of one span or, for a stage another one
// was cut out of, several.
type Stage struct {
	Name  string
	Spans []Span
	// Derived says that the stage's bounds come from the traffic, not
	// from the job's log.
	Derived bool
}

// Wall is the stage's time.
func (s Stage) Wall() time.Duration {
	var d time.Duration
	for _, sp := range s.Spans {
		d += sp.End.Sub(sp.Start)
	}
	return d
}

func (s Stage) contains(t time.Time) bool {
	for _, sp := range s.Spans {
		if sp.contains(t) {
			return true
		}
	}
	return false
}

// Timeline cuts the run from start to end into its stages: each "stage
// done" line of the job gives one (it ended at its time, after its took),
// with startup before the first and exit after the last. When the job
// logged no render stage, render is cut out of the git stage by the git
// server's requests (git), see splitRender.
func Timeline(start, end time.Time, logged []StageLog, git []Request) []Stage {
	var stages []Stage
	at := start
	for _, l := range logged {
		from := latest(l.End.Add(-l.Took), at)
		to := latest(l.End, from)
		if len(stages) == 0 && from.After(start) {
			stages = append(stages, Stage{Name: StageStartup, Spans: []Span{{start, from}}})
		}
		stages = append(stages, Stage{Name: l.Name, Spans: []Span{{from, to}}})
		at = to
	}
	if len(stages) == 0 {
		return []Stage{{Name: StageExit, Spans: []Span{{start, end}}}}
	}
	if end.After(at) {
		stages = append(stages, Stage{Name: StageExit, Spans: []Span{{at, end}}})
	}
	return splitRender(stages, git)
}

// splitRender cuts render out of the git stage when the job logged none:
// within the git stage the job lists the branches and clones (the last
// git-upload-pack POST before any push request ends the clone), then
// renders and commits without a request, then lists the branches again and
// pushes. Render is the gap from the end of the clone to the next request;
// it holds the checkout's commit too, which the log does not separate.
func splitRender(stages []Stage, git []Request) []Stage {
	gi := -1
	for i, s := range stages {
		if s.Name == StageRender {
			return stages
		}
		if s.Name == StageGit {
			gi = i
		}
	}
	if gi < 0 {
		return stages
	}
	span := stages[gi].Spans[0]
	var in []Request
	for _, r := range git {
		if span.contains(r.Start) {
			in = append(in, r)
		}
	}
	var from time.Time
	for _, r := range in {
		if isPush(r) {
			break
		}
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/git-upload-pack") && r.End.After(from) {
			from = r.End
		}
	}
	if from.IsZero() {
		return stages
	}
	to := span.End
	for _, r := range in {
		if r.Start.After(from) && r.Start.Before(to) {
			to = r.Start
		}
	}
	from, to = earliest(latest(from, span.Start), span.End), earliest(to, span.End)
	render := Stage{Name: StageRender, Spans: []Span{{from, to}}, Derived: true}
	rest := Stage{Name: StageGit, Spans: []Span{{span.Start, from}, {to, span.End}}}
	out := append([]Stage{}, stages[:gi]...)
	out = append(out, render, rest)
	return append(out, stages[gi+1:]...)
}

func isPush(r Request) bool {
	return strings.HasSuffix(r.Path, "/git-receive-pack") || strings.Contains(r.Query, "service=git-receive-pack")
}

// stageOf returns the index of the stage holding t: the first stage for a
// time before the run, the last one started for a time in no stage.
func stageOf(stages []Stage, t time.Time) int {
	best := 0
	for i, s := range stages {
		if s.contains(t) {
			return i
		}
		if !t.Before(s.Spans[0].Start) {
			best = i
		}
	}
	return best
}

// earliest and latest are min and max of times.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
