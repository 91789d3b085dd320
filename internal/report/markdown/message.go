package markdown

import (
	"bytes"
	"fmt"
	"text/template"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// DefaultCommitTemplate is the commit message: a title, then per workload
// its file, the Helm release its values went through if any, and per
// container the requests that change, each with its values key under Helm.
const DefaultCommitTemplate = "Right-size resource requests\n" +
	"{{range .Workloads}}\n" +
	"{{.Namespace}}/{{.Name}}: {{.Kind}} {{.Target}} ({{.File}})\n" +
	"{{with .Helm}}  via Helm release {{.Namespace}}/{{.Release}} (chart {{.Chart}}{{with .Version}} {{.}}{{end}}): {{.Layer}}\n{{end}}" +
	"{{range .Containers}}  {{.Name}}: {{range $i, $r := .Resources}}{{if $i}}, {{end}}{{$r.Resource}} {{$r.Current}} -> {{$r.Recommended}}{{with $r.Key}} ({{.}}){{end}}{{end}}\n" +
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
	// Helm is the Helm release the values went through; nil when they
	// went to a manifest.
	Helm       *MessageHelm
	Containers []MessageContainer
}

// MessageHelm is the Helm release a workload's values went through.
type MessageHelm struct {
	// Kind and Object are the HelmRelease or Application installing the
	// release (Object as namespace/name); Release and Namespace the
	// release's; Chart, Version and ChartSource the chart's; Layer the
	// values edited, e.g. "the values file charts/shop/values-prod.yaml".
	Kind, Object, Release, Namespace, Chart, Version, ChartSource, Layer string
}

// MessageContainer is one container's changed requests.
type MessageContainer struct {
	Name      string
	Resources []MessageResource
}

// MessageResource is one request: Current is "none" when unset. Key is
// the values key it was written at through a Helm release, "" otherwise.
type MessageResource struct {
	Resource, Current, Recommended, Key string
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

// defaultCommitTemplate is DefaultCommitTemplate, parsed.
var defaultCommitTemplate = template.Must(ParseCommitTemplate(""))

// CommitMessage renders t (DefaultCommitTemplate when nil) with data. Every field goes through plan.Line
// first: names come from the cluster and file paths from the repository,
// and a line break in one (git allows it in a path) would let a tenant add
// lines to the message, such as a Signed-off-by or Co-authored-by trailer.
// The message is plain text, so nothing else is escaped.
func CommitMessage(t *template.Template, data MessageData) (string, error) {
	if t == nil {
		t = defaultCommitTemplate
	}
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
		if h := w.Helm; h != nil {
			pw.Helm = &MessageHelm{Kind: plan.Line(h.Kind), Object: plan.Line(h.Object), Release: plan.Line(h.Release),
				Namespace: plan.Line(h.Namespace), Chart: plan.Line(h.Chart), Version: plan.Line(h.Version),
				ChartSource: plan.Line(h.ChartSource), Layer: plan.Line(h.Layer)}
		}
		for _, c := range w.Containers {
			pc := MessageContainer{Name: plan.Line(c.Name)}
			for _, r := range c.Resources {
				pc.Resources = append(pc.Resources, MessageResource{Resource: plan.Line(r.Resource),
					Current: plan.Line(r.Current), Recommended: plan.Line(r.Recommended), Key: plan.Line(r.Key)})
			}
			pw.Containers = append(pw.Containers, pc)
		}
		out.Workloads = append(out.Workloads, pw)
	}
	return out
}

// MessageDataOf is what the commit message of p says: per item whose file
// changed, the Helm release its values went through if any, and the
// containers whose values landed there, each with the values written, the
// cluster's current ones and, under Helm, their values keys. base, branch
// and path are the run's branches and repository subtree.
func MessageDataOf(p *plan.Plan, base, branch, path string) MessageData {
	data := MessageData{Base: base, Branch: branch, Path: path}
	for _, it := range p.Items {
		w := MessageWorkload{Namespace: it.Namespace, Name: it.Name, Kind: it.Object.Kind, Target: it.Object.Name}
		if it.Source != nil {
			w.File = it.Source.File
			if h := it.Source.Helm; h != nil {
				w.Helm = &MessageHelm{Kind: h.Kind, Object: h.Object, Release: h.Release, Namespace: h.Namespace,
					Chart: h.Chart, Version: h.Version, ChartSource: h.ChartSource, Layer: h.Layer}
			}
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
					mc.Resources = append(mc.Resources, MessageResource{Resource: res + " limit", Current: orNone(r.Current), Recommended: r.Limit.String(),
						Key: c.LimitKey(r.Resource)})
				case r.Request != nil:
					mc.Resources = append(mc.Resources, MessageResource{Resource: res, Current: orNone(r.Current), Recommended: r.Request.String(),
						Key: c.RequestKey(r.Resource)})
					if r.Limit != nil {
						mc.Resources = append(mc.Resources, MessageResource{Resource: res + " limit", Current: orNone(r.CurrentLimit), Recommended: r.Limit.String(),
							Key: c.LimitKey(r.Resource)})
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
