package job

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
)

// writeBack clones the repository, renders the changes and, unless this is
// a dry run, commits and pushes what changed. When the push branch already
// holds exactly this result, nothing is pushed.
func writeBack(ctx context.Context, cfg Config, changes []render.Change, owners []int, rep *report.Report, log *slog.Logger) error {
	dir := cfg.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "recommend-job-")
		if err != nil {
			return fmt.Errorf("creating work directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	ws, err := gitops.Checkout(ctx, cfg.Git, dir)
	if err != nil {
		return fmt.Errorf("checking out the repository: %w", err)
	}
	rep.Git = &report.Git{Branch: ws.Branch()}
	if len(changes) == 0 {
		log.InfoContext(ctx, "no changes to render")
		return nil
	}
	out, err := render.Apply(ctx, ws.Dir(), cfg.Path, changes)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	var landed []landedChange
	for i, r := range out.Results {
		entry := &rep.ResourceRecommends[owners[i]]
		if entry.Source == nil {
			entry.Source = &report.Source{}
		}
		if r.File != "" {
			entry.Source.File = r.File
		}
		entry.Source.Changed = entry.Source.Changed || r.Changed
		if r.Changed {
			landed = append(landed, landedChange{Result: r, entry: entry})
		}
		if r.Err != nil {
			entry.Source.Error = r.Err.Error()
			log.WarnContext(ctx, "cannot render change", "resourceRecommend", entry.Namespace+"/"+entry.Name, "container", r.Change.Container, "error", r.Err)
		}
	}
	rep.Git.Files = out.Files
	if cfg.DryRun || len(out.Files) == 0 {
		return nil
	}
	hash, committed, err := ws.Commit(out.Files, commitMessage(landed))
	if err != nil || !committed {
		return err
	}
	upToDate, err := ws.UpToDate(ctx)
	if err != nil {
		return err
	}
	if upToDate {
		log.InfoContext(ctx, "push branch already up to date", "branch", ws.Branch())
		return nil
	}
	if err := ws.Push(ctx); err != nil {
		return err
	}
	rep.Git.Commit, rep.Git.Pushed = hash, true
	log.InfoContext(ctx, "pushed", "branch", ws.Branch(), "commit", hash, "files", len(out.Files))
	return nil
}

// landedChange is a change that altered a file, with its report entry.
type landedChange struct {
	render.Result
	entry *report.Entry
}

// commitMessage lists the changes that landed in a file, per workload, with
// the cluster's current value of each.
func commitMessage(landed []landedChange) string {
	var b strings.Builder
	b.WriteString("Right-size resource requests\n")
	var last *report.Entry
	for _, l := range landed {
		if l.entry != last {
			t := l.Change.Target
			fmt.Fprintf(&b, "\n%s/%s: %s %s (%s)\n", l.entry.Namespace, l.entry.Name, t.Kind, t.Name, l.File)
			last = l.entry
		}
		var parts []string
		for _, c := range l.entry.Containers {
			if c.Name != l.Change.Container {
				continue
			}
			for _, r := range c.Resources {
				if r.Recommended != "" && r.Recommended == l.Change.Requests[r.Resource] {
					parts = append(parts, fmt.Sprintf("%s %s -> %s", r.Resource, orNone(r.Current), r.Recommended))
				}
			}
		}
		fmt.Fprintf(&b, "  %s: %s\n", l.Change.Container, strings.Join(parts, ", "))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
