package helmsource

import (
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
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
