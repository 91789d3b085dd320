package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/recommend"
)

// Report is the outcome of one run.
type Report struct {
	DryRun             bool    `json:"dryRun"`
	ResourceRecommends []Entry `json:"resourceRecommends"`
	// Git is what was committed and pushed; nil when git was not reached.
	Git *Git `json:"git,omitempty"`
	// Interrupted says why and in which stage the run was cut short, e.g.
	// "run deadline of 27m0s exceeded during history"; the report holds
	// what the run had by then.
	Interrupted string `json:"interrupted,omitempty"`
	// Failed is the error that ended the run when it failed (exit code 1
	// or 3); the report holds what the run had computed by then.
	Failed string `json:"failed,omitempty"`
}

// Entry is one ResourceRecommend.
type Entry struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Target    Target `json:"target"`
	Valid     bool   `json:"valid"`
	// Error is katalyst's reason code and message for an invalid entry.
	Error      *Error      `json:"error,omitempty"`
	Containers []Container `json:"containers,omitempty"`
	// Source is where the target is defined in the repository.
	Source *Source `json:"source,omitempty"`
}

// Target is the workload an entry refers to.
type Target struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// Error is a reason code and a message, and what lay behind it when the
// message alone says little.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Cause   string `json:"cause,omitempty"`
}

// Container holds one container's resources.
type Container struct {
	Name      string     `json:"name"`
	Resources []Resource `json:"resources"`
}

// Resource is one resource request of one container. Quantities are
// Kubernetes quantity strings.
type Resource struct {
	Resource string `json:"resource"`
	// Current is the request in the live pod template; empty when unset.
	Current string `json:"current,omitempty"`
	// Recommended is the computed request; empty when none could be made.
	Recommended string `json:"recommended,omitempty"`
	// Changed reports that Recommended (or RecommendedLimit) differs from
	// the current value.
	Changed bool `json:"changed"`
	// CurrentLimit and RecommendedLimit are the limit's, when the policy
	// is RequestsAndLimits and the limit changes with the request. Under
	// LimitsOnly, Current and Recommended are the limit's.
	CurrentLimit     string `json:"currentLimit,omitempty"`
	RecommendedLimit string `json:"recommendedLimit,omitempty"`
	// Reason explains a missing or adjusted recommendation.
	Reason string `json:"reason,omitempty"`
	// HeldBack marks a value left alone on purpose: the change is below
	// the threshold, or an autoscaler scales on the resource.
	HeldBack bool                `json:"heldBack,omitempty"`
	Evidence *recommend.Evidence `json:"evidence,omitempty"`
}

// Source is the file that defines a target and what happened to it.
type Source struct {
	File    string `json:"file,omitempty"`
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
}

// Git is what the run did in the repository.
type Git struct {
	Branch string   `json:"branch"`
	Commit string   `json:"commit,omitempty"`
	Pushed bool     `json:"pushed"`
	Files  []string `json:"files,omitempty"`
	// Attempts is how many fresh clones the run needed because the remote
	// moved under it; 1 when it did not.
	Attempts int `json:"attempts,omitempty"`
	// Stopped says why the run left the branch alone, e.g. a commit on it
	// that the job did not make.
	Stopped string `json:"stopped,omitempty"`
	// Diff is the unified diff of the rendered files, on a dry run.
	Diff string `json:"diff,omitempty"`
	// PullRequest is the pull request for the branch, when a forge is set.
	PullRequest *PullRequest `json:"pullRequest,omitempty"`
	// Skipped lists the repository files the run did not read: those above
	// max-file-size.
	Skipped []SkippedFile `json:"skipped,omitempty"`
}

// SkippedFile is a repository file the run did not read, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// PullRequest is the pull (merge) request a run opened or updated.
type PullRequest struct {
	URL    string `json:"url,omitempty"`
	Number int    `json:"number,omitempty"`
	// Action is created, updated, unchanged, closed, or planned on a dry
	// run.
	Action string `json:"action"`
	// Body is the description the run wrote or would write.
	Body string `json:"body,omitempty"`
}

// Pull request actions.
const (
	PRCreated   = "created"
	PRUpdated   = "updated"
	PRUnchanged = "unchanged"
	PRClosed    = "closed"
	PRPlanned   = "planned"
)

// Format is an output format.
type Format string

// Output formats.
const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
)

// Write prints r in format f.
func (r *Report) Write(w io.Writer, f Format) error {
	switch f {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatYAML:
		b, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = w.Write(b)
		return err
	case FormatTable:
		if err := r.writeTable(w); err != nil {
			return err
		}
		if r.Interrupted != "" {
			if _, err := fmt.Fprintf(w, "\ncut short: %s; the report holds what the run had\n", r.Interrupted); err != nil {
				return err
			}
		}
		if r.Failed != "" {
			_, err := fmt.Fprintf(w, "\nfailed: %s\n", r.Failed)
			return err
		}
		return nil
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
}

func (r *Report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCERECOMMEND\tTARGET\tCONTAINER\tRESOURCE\tCURRENT\tRECOMMENDED\tSTATUS")
	for _, e := range r.ResourceRecommends {
		name := e.Namespace + "/" + e.Name
		target := e.Target.Kind + "/" + e.Target.Name
		if e.Error != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tinvalid: %s: %s\n", name, target, e.Error.Code, e.Error.Message)
			continue
		}
		for _, c := range e.Containers {
			for _, res := range c.Resources {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, target, c.Name, res.Resource,
					dash(res.Current), dash(res.Recommended), status(e, res))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case r.Git == nil:
	case r.Git.Stopped != "":
		_, err := fmt.Fprintf(w, "\nstopped, branch %s left alone: %s\n", r.Git.Branch, r.Git.Stopped)
		return err
	case r.Git.Pushed:
		if _, err := fmt.Fprintf(w, "\npushed %s to branch %s (%s)\n", short(r.Git.Commit), r.Git.Branch, strings.Join(r.Git.Files, ", ")); err != nil {
			return err
		}
		return r.Git.writePullRequest(w)
	case r.DryRun && len(r.Git.Files) > 0:
		if _, err := fmt.Fprintf(w, "\ndry run: would commit %s to branch %s\n", strings.Join(r.Git.Files, ", "), r.Git.Branch); err != nil {
			return err
		}
		if r.Git.Diff != "" {
			if _, err := fmt.Fprintf(w, "\n%s", r.Git.Diff); err != nil {
				return err
			}
		}
		if pr := r.Git.PullRequest; pr != nil && pr.Body != "" {
			_, err := fmt.Fprintf(w, "\npull request body:\n\n%s\n", pr.Body)
			return err
		}
		return nil
	case r.Failed != "" || r.Interrupted != "":
		// Not pushed because the run ended, not because nothing changed.
		return r.Git.writePullRequest(w)
	default:
		if _, err := fmt.Fprintf(w, "\nbranch %s is up to date: nothing to commit\n", r.Git.Branch); err != nil {
			return err
		}
		return r.Git.writePullRequest(w)
	}
	return nil
}

// writePullRequest prints what the run did to the pull request, if any.
func (g *Git) writePullRequest(w io.Writer) error {
	pr := g.PullRequest
	if pr == nil || pr.Number == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "pull request #%d %s: %s\n", pr.Number, pr.Action, pr.URL)
	return err
}

func status(e Entry, res Resource) string {
	switch {
	case res.Recommended == "":
		return res.Reason
	case !res.Changed:
		return "unchanged"
	case e.Source != nil && e.Source.Error != "":
		return "not rendered: " + e.Source.Error
	case e.Source != nil && !e.Source.Changed:
		return "change, already in git"
	case res.Reason != "":
		return "change (" + res.Reason + ")"
	default:
		return "change"
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
