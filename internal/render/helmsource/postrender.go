package helmsource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/filesys"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// PostRendererLines is the spec.postRenderers entry of a HelmRelease, at
// indent and nested by step: one kustomize post-renderer with a
// strategic-merge patch per workload, in a stable order.
func PostRendererLines(patches []WorkloadPatch, indent, step int) []string {
	pad := func(n int) string { return strings.Repeat(" ", indent+n*step) }
	lines := []string{
		pad(0) + "postRenderers:",
		pad(1) + "- kustomize:",
		pad(3) + "patches:",
	}
	slices.SortFunc(patches, func(x, y WorkloadPatch) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
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
func workloadPatchText(w WorkloadPatch, step int) []string {
	g, _, _ := strings.Cut(w.APIVersion, "/")
	if !strings.Contains(w.APIVersion, "/") {
		g = ""
	}
	pod := kinds.PodSpecPaths(g, w.Kind)[0]
	lines := []string{PostRenderNote, "apiVersion: " + w.APIVersion, "kind: " + w.Kind, "metadata:", strings.Repeat(" ", step) + "name: " + w.Name}
	depth := 0
	for _, k := range pod {
		lines = append(lines, strings.Repeat(" ", depth*step)+k+":")
		depth++
	}
	slices.SortFunc(w.Containers, func(x, y ContainerValues) int { return strings.Compare(x.Name, y.Name) })
	for _, list := range []bool{false, true} {
		var cs []ContainerValues
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
			lines = yamledit.BlockLines([]yamledit.Entry{{Key: "resources", Children: yamledit.ResourceEntries(c.Requests, c.Limits)}}, len(at)+2, step, lines)
		}
	}
	return lines
}

// WorkloadPatch is what a post-renderer patch sets on one rendered
// workload: its containers' resources.
type WorkloadPatch struct {
	APIVersion, Kind, Name string
	Containers             []ContainerValues
}

// ContainerValues are one container's values, and whether it is an init
// container (a native sidecar).
type ContainerValues struct {
	Name             string
	Init             bool
	Requests, Limits corev1.ResourceList
}

// OurPostRenderers reports whether a spec.postRenderers node holds only
// the post-renderer the job writes.
func OurPostRenderers(v *yaml.Node) bool {
	text, err := yaml.String(v)
	if err != nil {
		return false
	}
	var prs []FluxPostRenderer
	return sigsyaml.Unmarshal([]byte(text), &prs) == nil && IsOurs(prs)
}

// IsOurs reports whether post-renderers are the one the job writes.
func IsOurs(prs []FluxPostRenderer) bool {
	if len(prs) != 1 || prs[0].Kustomize == nil || len(prs[0].Kustomize.Patches) == 0 {
		return false
	}
	for _, p := range prs[0].Kustomize.Patches {
		text, _ := p["patch"].(string)
		if !strings.HasPrefix(text, PostRenderNote+"\n") {
			return false
		}
	}
	return true
}

// OurPatches reads back the workloads the job's post-renderer sizes, so
// that a run keeps those it does not change.
func OurPatches(prs []FluxPostRenderer) ([]WorkloadPatch, error) {
	if len(prs) == 0 {
		return nil, nil
	}
	var out []WorkloadPatch
	for _, p := range prs[0].Kustomize.Patches {
		text, _ := p["patch"].(string)
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(text), &obj); err != nil {
			return nil, fmt.Errorf("the post-renderer's patch does not parse: %w", err)
		}
		w := WorkloadPatch{}
		w.APIVersion, _ = obj["apiVersion"].(string)
		w.Kind, _ = obj["kind"].(string)
		w.Name, _ = tree.Dig(obj, "metadata", "name").(string)
		g, _, _ := strings.Cut(w.APIVersion, "/")
		if !strings.Contains(w.APIVersion, "/") {
			g = ""
		}
		spec, _ := tree.Dig(obj, kinds.PodSpecPaths(g, w.Kind)[0]...).(map[string]any)
		for _, field := range []string{"containers", "initContainers"} {
			items, _ := spec[field].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				name, _ := m["name"].(string)
				cv := ContainerValues{Name: name, Init: field == "initContainers"}
				for _, sec := range []string{"requests", "limits"} {
					vals, _ := tree.Dig(m, "resources", sec).(map[string]any)
					list := corev1.ResourceList{}
					for k, v := range vals {
						q, err := resource.ParseQuantity(fmt.Sprint(v))
						if err != nil {
							return nil, fmt.Errorf("the post-renderer's patch of %s %s: %s.%s is not a quantity", w.Kind, w.Name, sec, k)
						}
						list[corev1.ResourceName(k)] = q
					}
					if len(list) == 0 {
						continue
					}
					if sec == "requests" {
						cv.Requests = list
					} else {
						cv.Limits = list
					}
				}
				w.Containers = append(w.Containers, cv)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// WithContainer sets one container's values in the patch of its workload,
// adding the workload or the container when missing; the values it sets
// replace those of the same resources, the others stay.
func WithContainer(patches []WorkloadPatch, w WorkloadPatch, c ContainerValues) []WorkloadPatch {
	i := slices.IndexFunc(patches, func(p WorkloadPatch) bool { return p.Kind == w.Kind && p.Name == w.Name })
	if i < 0 {
		w.Containers = []ContainerValues{c}
		return append(patches, w)
	}
	p := &patches[i]
	p.APIVersion = w.APIVersion
	j := slices.IndexFunc(p.Containers, func(x ContainerValues) bool { return x.Name == c.Name })
	if j < 0 {
		p.Containers = append(p.Containers, c)
		return patches
	}
	old := &p.Containers[j]
	old.Init = c.Init
	old.Requests = mergeList(old.Requests, c.Requests)
	old.Limits = mergeList(old.Limits, c.Limits)
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

// FluxPostRenderer is one entry of a HelmRelease's spec.postRenderers.
type FluxPostRenderer struct {
	Kustomize *struct {
		Patches               []map[string]any `json:"patches"`
		PatchesStrategicMerge []any            `json:"patchesStrategicMerge"`
		PatchesJSON6902       []any            `json:"patchesJson6902"`
		Images                []any            `json:"images"`
	} `json:"kustomize"`
}

// PostRender applies a HelmRelease's post-renderers to a chart's output
// as helm-controller does: each kustomize post-renderer builds the
// manifests with its patches. A proof that sets outputs with and without
// post-renderers side by side passes both through kustomize (always), as
// kustomize drops what Helm keeps (an empty annotations:).
func PostRender(objects []helm.Object, prs []FluxPostRenderer, always bool) ([]helm.Object, error) {
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
	// A patch given as a path or a URL would be fetched: Flux's patches
	// are inline, and nothing is read from elsewhere.
	proof := repoindex.ProofFS{FileSystem: fsys, Root: "/r"}
	if err := proof.CheckLocal("/r"); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(proof, "/r")
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
		if err := Convert(raw, &body); err != nil {
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

// RenderedContainer finds a workload's container in a chart's output and
// says whether it is an init container.
func RenderedContainer(objects []helm.Object, c helm.Container) (apiVersion string, init bool, ok bool) {
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

// PostRenderNote heads each patch of the post-renderer the job writes into
// a HelmRelease; it tells that post-renderer from the ones people write,
// in the file and in the object.
const PostRenderNote = "# Resources recommended by recommend-job: no values key of the chart sizes these containers alone."
