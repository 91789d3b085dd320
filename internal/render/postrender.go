package render

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/helmsource"
	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/yamledit"
)

// postRendererPlacer sets spec.postRenderers of a HelmRelease (or of a
// patch of it) to what lines say: it adds the key, or replaces the value
// when it is the job's own post-renderer. A post-renderer someone wrote
// is never changed.
func postRendererPlacer(patches []helmsource.WorkloadPatch) placer {
	return func(p *yamledit.Planner, doc *yaml.Node, _ Change) error {
		root := yamledit.DocRoot(doc)
		lines := postRendererLines(patches, 0, yamledit.IndentStep(root))
		_, spec, dup := yamledit.Lookup(root, "spec")
		if dup || spec == nil || spec.Kind != yaml.MappingNode || len(spec.Content) == 0 || spec.Style&yaml.FlowStyle != 0 {
			return fmt.Errorf("%w: spec is not a block mapping", repoindex.ErrUnsafeFile)
		}
		if err := yamledit.UnsafeNode(spec, "spec"); err != nil {
			return err
		}
		col := spec.Content[0].Column
		text := make([]string, len(lines))
		for i, l := range lines {
			text[i] = strings.Repeat(" ", col-1) + l
		}
		want, err := yaml.Parse(strings.Join(lines, "\n") + "\n")
		if err != nil {
			return fmt.Errorf("the post-renderer does not parse: %w", err)
		}
		wk, wv := want.YNode().Content[0], want.YNode().Content[1]
		p.Scopes = []*yaml.Node{spec}
		k, v, dup := yamledit.Lookup(spec, "postRenderers")
		switch {
		case dup:
			return fmt.Errorf("%w: spec.postRenderers is defined twice", repoindex.ErrUnsafeFile)
		case k == nil:
			last, err := p.Src.LastLine(spec)
			if err != nil {
				return err
			}
			p.Muts = append(p.Muts, func() { spec.Content = append(spec.Content, wk, wv) })
			p.InsertLines(p.Src.TrailingComments(last, col), text, col)
			return nil
		case yamledit.SameNode(v, wv):
			return nil
		case v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 || !helmsource.OurPostRenderers(v):
			return fmt.Errorf("%w: spec.postRenderers (line %d) is set by hand; the job adds its own only where there is none", repoindex.ErrUnsafeFile, k.Line)
		}
		last, err := p.Src.LastLine(v)
		if err != nil {
			return err
		}
		end, _ := p.Src.AfterLine(last)
		p.Muts = append(p.Muts, func() {
			for i, n := range spec.Content {
				if n == v {
					spec.Content[i] = wv
				}
			}
		})
		br := p.Src.LineBreak(k.Line)
		body := yamledit.BlockText(text[1:], br, false)
		if end == len(p.Src.Data) && p.Src.LineBreak(last) == "" {
			body = strings.Join(text[1:], br)
		}
		p.Edits = append(p.Edits, yamledit.Splice{Start: p.Src.LineStart(k.Line + 1), End: end, Text: body})
		return nil
	}
}

// postRendererLines is the spec.postRenderers entry of a HelmRelease, at
// indent and nested by step: one kustomize post-renderer with a
// strategic-merge patch per workload, in a stable order.
func postRendererLines(patches []helmsource.WorkloadPatch, indent, step int) []string {
	pad := func(n int) string { return strings.Repeat(" ", indent+n*step) }
	lines := []string{
		pad(0) + "postRenderers:",
		pad(1) + "- kustomize:",
		pad(3) + "patches:",
	}
	slices.SortFunc(patches, func(x, y helmsource.WorkloadPatch) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	for _, w := range patches {
		item := pad(4)
		lines = append(lines,
			item+"- target:",
			item+strings.Repeat(" ", step+2)+"kind: "+w.Kind,
			item+strings.Repeat(" ", step+2)+"name: "+w.Name,
			item+"  patch: |")
		body := strings.Repeat(" ", len(item)+2+step)
		for _, l := range workloadPatchText(w, step) {
			lines = append(lines, body+l)
		}
	}
	return lines
}

// workloadPatchText is the strategic-merge patch of one workload.
func workloadPatchText(w helmsource.WorkloadPatch, step int) []string {
	g, _, _ := strings.Cut(w.APIVersion, "/")
	if !strings.Contains(w.APIVersion, "/") {
		g = ""
	}
	pod := kinds.PodSpecPaths(g, w.Kind)[0]
	lines := []string{helmsource.PostRenderNote, "apiVersion: " + w.APIVersion, "kind: " + w.Kind, "metadata:", strings.Repeat(" ", step) + "name: " + w.Name}
	depth := 0
	for _, k := range pod {
		lines = append(lines, strings.Repeat(" ", depth*step)+k+":")
		depth++
	}
	slices.SortFunc(w.Containers, func(x, y helmsource.ContainerValues) int { return strings.Compare(x.Name, y.Name) })
	for _, list := range []bool{false, true} {
		var cs []helmsource.ContainerValues
		for _, c := range w.Containers {
			if c.Init == list {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		field := "containers"
		if list {
			field = "initContainers"
		}
		lines = append(lines, strings.Repeat(" ", depth*step)+field+":")
		for _, c := range cs {
			at := strings.Repeat(" ", (depth+1)*step)
			lines = append(lines, at+"- name: "+c.Name)
			lines = yamledit.BlockLines([]yamledit.Entry{{Key: "resources", Children: resourceEntries(Change{Requests: c.Requests, Limits: c.Limits})}}, len(at)+2, step, lines)
		}
	}
	return lines
}
