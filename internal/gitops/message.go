package gitops

import (
	"bytes"
	"fmt"
	"text/template"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// DefaultCommitTemplate is the commit message: a title, then per workload
// its file and per container the requests that change.
const DefaultCommitTemplate = "Right-size resource requests\n" +
	"{{range .Workloads}}\n" +
	"{{.Namespace}}/{{.Name}}: {{.Kind}} {{.Target}} ({{.File}})\n" +
	"{{range .Containers}}  {{.Name}}: {{range $i, $r := .Resources}}{{if $i}}, {{end}}{{$r.Resource}} {{$r.Current}} -> {{$r.Recommended}}{{end}}\n" +
	"{{end}}{{end}}"

// MessageData is what the commit message template sees.
type MessageData struct {
	// Base and Branch are the base and push branches; Path is the
	// repository subtree the job renders in.
	Base, Branch, Path string
	Workloads          []MessageWorkload
}

// MessageWorkload is one ResourceRecommend whose file changed.
type MessageWorkload struct {
	// Namespace and Name are the ResourceRecommend's; Kind and Target its
	// workload's; File the manifest that changed.
	Namespace, Name, Kind, Target, File string
	Containers                          []MessageContainer
}

// MessageContainer is one container's changed requests.
type MessageContainer struct {
	Name      string
	Resources []MessageResource
}

// MessageResource is one request: Current is "none" when unset.
type MessageResource struct {
	Resource, Current, Recommended string
}

// ParseCommitTemplate parses a commit message template; the default when
// text is empty. Templates are hermetic: only text/template's built-ins.
func ParseCommitTemplate(text string) (*template.Template, error) {
	if text == "" {
		text = DefaultCommitTemplate
	}
	t, err := template.New("commit").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("commit template: %w", err)
	}
	return t, nil
}

// CommitMessage renders t with data. Every field goes through plan.Line
// first: names come from the cluster and file paths from the repository,
// and a line break in one (git allows it in a path) would let a tenant add
// lines to the message, such as a Signed-off-by or Co-authored-by trailer.
// The message is plain text, so nothing else is escaped.
func CommitMessage(t *template.Template, data MessageData) (string, error) {
	data = data.plain()
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("commit template: %w", err)
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("commit template: the message is empty")
	}
	return b.String(), nil
}

// plain returns a copy of d with every text made one line by plan.Line.
func (d MessageData) plain() MessageData {
	out := MessageData{Base: plan.Line(d.Base), Branch: plan.Line(d.Branch), Path: plan.Line(d.Path)}
	for _, w := range d.Workloads {
		pw := MessageWorkload{Namespace: plan.Line(w.Namespace), Name: plan.Line(w.Name), Kind: plan.Line(w.Kind),
			Target: plan.Line(w.Target), File: plan.Line(w.File)}
		for _, c := range w.Containers {
			pc := MessageContainer{Name: plan.Line(c.Name)}
			for _, r := range c.Resources {
				pc.Resources = append(pc.Resources, MessageResource{Resource: plan.Line(r.Resource),
					Current: plan.Line(r.Current), Recommended: plan.Line(r.Recommended)})
			}
			pw.Containers = append(pw.Containers, pc)
		}
		out.Workloads = append(out.Workloads, pw)
	}
	return out
}

// MessageDataOf is what the commit message of p says: per item whose file
// changed, the containers whose values landed there, each with the values
// written and the cluster's current ones. base, branch and path are the
// run's branches and repository subtree.
func MessageDataOf(p *plan.Plan, base, branch, path string) MessageData {
	data := MessageData{Base: base, Branch: branch, Path: path}
	for _, it := range p.Items {
		w := MessageWorkload{Namespace: it.Namespace, Name: it.Name, Kind: it.Object.Kind, Target: it.Object.Name}
		if it.Source != nil {
			w.File = it.Source.File
		}
		for _, c := range it.Containers {
			if !c.Landed {
				continue
			}
			mc := MessageContainer{Name: c.Name}
			for _, r := range c.Resources {
				res := string(r.Resource)
				switch {
				case r.LimitsOnly && r.Limit != nil:
					mc.Resources = append(mc.Resources, MessageResource{Resource: res + " limit", Current: orNone(r.Current), Recommended: r.Limit.String()})
				case r.Request != nil:
					mc.Resources = append(mc.Resources, MessageResource{Resource: res, Current: orNone(r.Current), Recommended: r.Request.String()})
					if r.Limit != nil {
						mc.Resources = append(mc.Resources, MessageResource{Resource: res + " limit", Current: orNone(r.CurrentLimit), Recommended: r.Limit.String()})
					}
				}
			}
			w.Containers = append(w.Containers, mc)
		}
		if len(w.Containers) > 0 {
			data.Workloads = append(data.Workloads, w)
		}
	}
	return data
}

// orNone shows q, or "none" for a value that was unset.
func orNone(q *resource.Quantity) string {
	if q == nil {
		return "none"
	}
	return q.String()
}
