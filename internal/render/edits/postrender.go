package edits

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// PostRendererPlacer sets spec.postRenderers of a HelmRelease (or of a
// patch of it) to what lines say: it adds the key, or replaces the value
// when it is the job's own post-renderer. A post-renderer someone wrote
// is never changed.
func PostRendererPlacer(patches []helmsource.WorkloadPatch) Placer {
	return func(p *yamledit.Planner, doc *yaml.Node) error {
		root := yamledit.DocRoot(doc)
		lines := helmsource.PostRendererLines(patches, 0, yamledit.IndentStep(root))
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
