package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/recommend-job/recommend-job/internal/recommend"
)

// Report is the outcome of one run.
type Report struct {
	DryRun             bool    `json:"dryRun"`
	ResourceRecommends []Entry `json:"resourceRecommends"`
	// Git is what was committed and pushed; nil when git was not reached.
	Git *Git `json:"git,omitempty"`
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
	// Changed reports that Recommended differs from Current.
	Changed bool `json:"changed"`
	// Reason explains a missing or adjusted recommendation.
	Reason   string              `json:"reason,omitempty"`
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
}

// Format is an output format.
type Format string

// Output formats.
const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
)

// Write prints r in format f.
func (r *Report) Write(w io.Writer, f Format) error {
	switch f {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatTable:
		return r.writeTable(w)
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
	case r.Git.Pushed:
		_, err := fmt.Fprintf(w, "\npushed %s to branch %s (%s)\n", short(r.Git.Commit), r.Git.Branch, strings.Join(r.Git.Files, ", "))
		return err
	case r.DryRun && len(r.Git.Files) > 0:
		_, err := fmt.Fprintf(w, "\ndry run: would commit %s to branch %s\n", strings.Join(r.Git.Files, ", "), r.Git.Branch)
		return err
	default:
		_, err := fmt.Fprintf(w, "\nbranch %s is up to date: nothing to commit\n", r.Git.Branch)
		return err
	}
	return nil
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
