package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
	"github.com/recommend-job/recommend-job/internal/yamledit"
)

// postRenderNote heads each patch of the post-renderer the job writes into
// a HelmRelease; it tells that post-renderer from the ones people write,
// in the file and in the object.
const postRenderNote = "# Resources recommended by recommend-job: no values key of the chart sizes these containers alone."

// workloadPatch is what a post-renderer patch sets on one rendered
// workload: its containers' resources.
type workloadPatch struct {
	apiVersion, kind, name string
	containers             []containerValues
}

// containerValues are one container's values, and whether it is an init
// container (a native sidecar).
type containerValues struct {
	name             string
	init             bool
	requests, limits corev1.ResourceList
}

// postRendererLines is the spec.postRenderers entry of a HelmRelease, at
// indent and nested by step: one kustomize post-renderer with a
// strategic-merge patch per workload, in a stable order.
func postRendererLines(patches []workloadPatch, indent, step int) []string {
	pad := func(n int) string { return strings.Repeat(" ", indent+n*step) }
	lines := []string{
		pad(0) + "postRenderers:",
		pad(1) + "- kustomize:",
		pad(3) + "patches:",
	}
	slices.SortFunc(patches, func(x, y workloadPatch) int { return strings.Compare(x.kind+"/"+x.name, y.kind+"/"+y.name) })
	for _, w := range patches {
		item := pad(4)
		lines = append(lines,
			item+"- target:",
			item+strings.Repeat(" ", step+2)+"kind: "+w.kind,
			item+strings.Repeat(" ", step+2)+"name: "+w.name,
			item+"  patch: |")
		body := strings.Repeat(" ", len(item)+2+step)
		for _, l := range workloadPatchText(w, step) {
			lines = append(lines, body+l)
		}
	}
	return lines
}

// workloadPatchText is the strategic-merge patch of one workload.
func workloadPatchText(w workloadPatch, step int) []string {
	g, _, _ := strings.Cut(w.apiVersion, "/")
	if !strings.Contains(w.apiVersion, "/") {
		g = ""
	}
	pod := kinds.PodSpecPaths(g, w.kind)[0]
	lines := []string{postRenderNote, "apiVersion: " + w.apiVersion, "kind: " + w.kind, "metadata:", strings.Repeat(" ", step) + "name: " + w.name}
	depth := 0
	for _, k := range pod {
		lines = append(lines, strings.Repeat(" ", depth*step)+k+":")
		depth++
	}
	slices.SortFunc(w.containers, func(x, y containerValues) int { return strings.Compare(x.name, y.name) })
	for _, list := range []bool{false, true} {
		var cs []containerValues
		for _, c := range w.containers {
			if c.init == list {
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
			lines = append(lines, at+"- name: "+c.name)
			lines = yamledit.BlockLines([]yamledit.Entry{{Key: "resources", Children: resourceEntries(Change{Requests: c.requests, Limits: c.limits})}}, len(at)+2, step, lines)
		}
	}
	return lines
}

// postRendererPlacer sets spec.postRenderers of a HelmRelease (or of a
// patch of it) to what lines say: it adds the key, or replaces the value
// when it is the job's own post-renderer. A post-renderer someone wrote
// is never changed.
func postRendererPlacer(patches []workloadPatch) placer {
	return func(p *planner, doc *yaml.Node, _ Change) error {
		root := yamledit.DocRoot(doc)
		lines := postRendererLines(patches, 0, indentStep(root))
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
		p.scopes = []*yaml.Node{spec}
		k, v, dup := yamledit.Lookup(spec, "postRenderers")
		switch {
		case dup:
			return fmt.Errorf("%w: spec.postRenderers is defined twice", repoindex.ErrUnsafeFile)
		case k == nil:
			last, err := p.src.LastLine(spec)
			if err != nil {
				return err
			}
			p.muts = append(p.muts, func() { spec.Content = append(spec.Content, wk, wv) })
			p.insertLines(p.src.TrailingComments(last, col), text, col)
			return nil
		case yamledit.SameNode(v, wv):
			return nil
		case v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 || !ourPostRenderers(v):
			return fmt.Errorf("%w: spec.postRenderers (line %d) is set by hand; the job adds its own only where there is none", repoindex.ErrUnsafeFile, k.Line)
		}
		last, err := p.src.LastLine(v)
		if err != nil {
			return err
		}
		end, _ := p.src.AfterLine(last)
		p.muts = append(p.muts, func() {
			for i, n := range spec.Content {
				if n == v {
					spec.Content[i] = wv
				}
			}
		})
		br := p.src.LineBreak(k.Line)
		body := yamledit.BlockText(text[1:], br, false)
		if end == len(p.src.Data) && p.src.LineBreak(last) == "" {
			body = strings.Join(text[1:], br)
		}
		p.edits = append(p.edits, yamledit.Splice{Start: p.src.LineStart(k.Line + 1), End: end, Text: body})
		return nil
	}
}

// ourPostRenderers reports whether a spec.postRenderers node holds only
// the post-renderer the job writes.
func ourPostRenderers(v *yaml.Node) bool {
	text, err := yaml.String(v)
	if err != nil {
		return false
	}
	var prs []fluxPostRenderer
	return sigsyaml.Unmarshal([]byte(text), &prs) == nil && isOurs(prs)
}

// isOurs reports whether post-renderers are the one the job writes.
func isOurs(prs []fluxPostRenderer) bool {
	if len(prs) != 1 || prs[0].Kustomize == nil || len(prs[0].Kustomize.Patches) == 0 {
		return false
	}
	for _, p := range prs[0].Kustomize.Patches {
		text, _ := p["patch"].(string)
		if !strings.HasPrefix(text, postRenderNote+"\n") {
			return false
		}
	}
	return true
}

// ourPatches reads back the workloads the job's post-renderer sizes, so
// that a run keeps those it does not change.
func ourPatches(prs []fluxPostRenderer) ([]workloadPatch, error) {
	if len(prs) == 0 {
		return nil, nil
	}
	var out []workloadPatch
	for _, p := range prs[0].Kustomize.Patches {
		text, _ := p["patch"].(string)
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(text), &obj); err != nil {
			return nil, fmt.Errorf("the post-renderer's patch does not parse: %w", err)
		}
		w := workloadPatch{}
		w.apiVersion, _ = obj["apiVersion"].(string)
		w.kind, _ = obj["kind"].(string)
		w.name, _ = tree.Dig(obj, "metadata", "name").(string)
		g, _, _ := strings.Cut(w.apiVersion, "/")
		if !strings.Contains(w.apiVersion, "/") {
			g = ""
		}
		spec, _ := tree.Dig(obj, kinds.PodSpecPaths(g, w.kind)[0]...).(map[string]any)
		for _, field := range []string{"containers", "initContainers"} {
			items, _ := spec[field].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				name, _ := m["name"].(string)
				cv := containerValues{name: name, init: field == "initContainers"}
				for _, sec := range []string{"requests", "limits"} {
					vals, _ := tree.Dig(m, "resources", sec).(map[string]any)
					list := corev1.ResourceList{}
					for k, v := range vals {
						q, err := resource.ParseQuantity(fmt.Sprint(v))
						if err != nil {
							return nil, fmt.Errorf("the post-renderer's patch of %s %s: %s.%s is not a quantity", w.kind, w.name, sec, k)
						}
						list[corev1.ResourceName(k)] = q
					}
					if len(list) == 0 {
						continue
					}
					if sec == "requests" {
						cv.requests = list
					} else {
						cv.limits = list
					}
				}
				w.containers = append(w.containers, cv)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// withContainer sets one container's values in the patch of its workload,
// adding the workload or the container when missing; the values it sets
// replace those of the same resources, the others stay.
func withContainer(patches []workloadPatch, w workloadPatch, c containerValues) []workloadPatch {
	i := slices.IndexFunc(patches, func(p workloadPatch) bool { return p.kind == w.kind && p.name == w.name })
	if i < 0 {
		w.containers = []containerValues{c}
		return append(patches, w)
	}
	p := &patches[i]
	p.apiVersion = w.apiVersion
	j := slices.IndexFunc(p.containers, func(x containerValues) bool { return x.name == c.name })
	if j < 0 {
		p.containers = append(p.containers, c)
		return patches
	}
	old := &p.containers[j]
	old.init = c.init
	old.requests = mergeList(old.requests, c.requests)
	old.limits = mergeList(old.limits, c.limits)
	return patches
}

// mergeList returns base with over's values laid over it.
func mergeList(base, over corev1.ResourceList) corev1.ResourceList {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// fluxPostRenderer is one entry of a HelmRelease's spec.postRenderers.
type fluxPostRenderer struct {
	Kustomize *struct {
		Patches               []map[string]any `json:"patches"`
		PatchesStrategicMerge []any            `json:"patchesStrategicMerge"`
		PatchesJSON6902       []any            `json:"patchesJson6902"`
		Images                []any            `json:"images"`
	} `json:"kustomize"`
}

// postRender applies a HelmRelease's post-renderers to a chart's output
// as helm-controller does: each kustomize post-renderer builds the
// manifests with its patches. A proof that sets outputs with and without
// post-renderers side by side passes both through kustomize (always), as
// kustomize drops what Helm keeps (an empty annotations:).
func postRender(objects []helm.Object, prs []fluxPostRenderer, always bool) ([]helm.Object, error) {
	var sets [][]map[string]any
	for i, pr := range prs {
		k := pr.Kustomize
		if k == nil {
			continue
		}
		if len(k.PatchesStrategicMerge)+len(k.PatchesJSON6902)+len(k.Images) > 0 {
			return nil, fmt.Errorf("post-renderer %d: only kustomize patches can be proven", i+1)
		}
		if len(k.Patches) > 0 {
			sets = append(sets, k.Patches)
		}
	}
	if len(sets) == 0 && always {
		sets = append(sets, nil)
	}
	for i, patches := range sets {
		var err error
		if objects, err = kustomizeObjects(objects, patches); err != nil {
			return nil, fmt.Errorf("post-renderer %d: %w", i+1, err)
		}
	}
	return objects, nil
}

// kustomizeObjects builds objects with kustomize and patches, in memory.
func kustomizeObjects(objects []helm.Object, patches []map[string]any) ([]helm.Object, error) {
	fsys := filesys.MakeFsInMemory()
	var b strings.Builder
	for _, o := range objects {
		data, err := sigsyaml.Marshal(o.Body)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	k := map[string]any{"resources": []string{"rendered.yaml"}}
	if len(patches) > 0 {
		k["patches"] = patches
	}
	kust, err := sigsyaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fsys.WriteFile("/r/rendered.yaml", []byte(b.String())); err != nil {
		return nil, err
	}
	if err := fsys.WriteFile("/r/kustomization.yaml", kust); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/r")
	if err != nil {
		return nil, err
	}
	// Kustomize may reorder the objects: each finds its template by name.
	from := map[string]helm.Object{}
	for _, o := range objects {
		from[o.Kind+"/"+o.Name] = o
	}
	out := make([]helm.Object, 0, len(objects))
	for _, r := range m.Resources() {
		raw, err := r.Map()
		if err != nil {
			return nil, err
		}
		// As the chart's own output is decoded: numbers as float64.
		var body map[string]any
		if err := convert(raw, &body); err != nil {
			return nil, err
		}
		o := helm.Object{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName(), Body: body}
		if in, ok := from[o.Kind+"/"+o.Name]; ok {
			o.Template = in.Template
			if o.Namespace == "" {
				o.Namespace = in.Namespace
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// renderedContainer finds a workload's container in a chart's output and
// says whether it is an init container.
func renderedContainer(objects []helm.Object, c helm.Container) (apiVersion string, init bool, ok bool) {
	for _, o := range objects {
		if o.Kind != c.Kind || o.Name != c.Name {
			continue
		}
		g, _, _ := strings.Cut(o.APIVersion, "/")
		if !strings.Contains(o.APIVersion, "/") {
			g = ""
		}
		for _, p := range kinds.PodSpecPaths(g, o.Kind) {
			spec, _ := tree.Dig(o.Body, p...).(map[string]any)
			for _, field := range []string{"containers", "initContainers"} {
				if tree.Item(spec[field], c.Container) != nil {
					return o.APIVersion, field == "initContainers", true
				}
			}
		}
	}
	return "", false, false
}
