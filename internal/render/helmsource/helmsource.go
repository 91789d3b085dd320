package helmsource

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
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

// ChartFetches bounds the remote charts fetched at the same time: enough
// that a few repositories that hang cost the run one fetch timeout
// together, few enough not to flood a registry.
const ChartFetches = 8

// FetchedChart is the outcome of one chart's fetch.
type FetchedChart struct {
	Chart *helm.Chart
	Err   error
}

// ErrChartWanted ends a release's load during FetchCharts' survey, once
// its remote chart is noted.
var ErrChartWanted = errors.New("remote chart noted")

// MergeLayers merges the layers' values in order.
func MergeLayers(layers []Layer) map[string]any {
	vals := make([]map[string]any, 0, len(layers))
	for _, l := range layers {
		vals = append(vals, l.Values)
	}
	return helm.Merge(vals...)
}

// BuildID is the release object's id in a kustomize build.
func (r *Release) BuildID() string {
	return r.Ref.Key.Group + "/" + r.Ref.Key.Kind + "/" + r.Ref.Namespace + "/" + r.Ref.Key.Name
}

// ChooseLayer picks the layer the values go to, among those of the
// release's environment alone that no later layer overrides at those
// keys: the one that holds the deepest part of a key (the key itself, or
// the mapping it goes in), else the environment's last values file, else
// the object's own values.
func ChooseLayer(layers []Layer, as []Assignment) (Layer, error) {
	var open []int
	var over string
	for j, l := range layers {
		if !l.Writable {
			continue
		}
		if by := overriddenBy(layers[j+1:], as); by != "" {
			over = by
			continue
		}
		open = append(open, j)
	}
	if len(open) == 0 {
		if over != "" {
			return Layer{}, fmt.Errorf("%s, which no values of the environment alone can override", over)
		}
		msg := "no values of the release belong to its environment alone (a values file only it reads, spec.values, or a helm.valuesObject where no helm.values string is set, which Argo CD would stop reading)"
		var tried []string
		for _, l := range layers {
			if l.Refused != "" {
				tried = append(tried, l.Refused)
			}
		}
		if len(tried) > 0 {
			msg += ": tried " + strings.Join(tried, "; ")
		}
		return Layer{}, errors.New(msg)
	}
	// The layer that holds the deepest part of a key already extends
	// what a person wrote; on a tie the later one wins, as Helm reads it.
	best, depth := -1, 0
	for _, j := range open {
		for _, a := range as {
			if d := heldDepth(layers[j].Values, a.Path); d >= depth && d > 0 {
				best, depth = j, d
			}
		}
	}
	if best >= 0 {
		return layers[best], nil
	}
	for _, j := range slices.Backward(open) {
		if layers[j].File != "" {
			return layers[j], nil
		}
	}
	return layers[open[len(open)-1]], nil
}

// heldDepth is how many steps of p values hold: the whole path when they
// set it, else the depth of the deepest mapping on its way.
func heldDepth(values map[string]any, p helm.Path) int {
	var cur any = values
	for i, s := range p {
		m, ok := cur.(map[string]any)
		if !ok || s.Index >= 0 {
			if l, ok := cur.([]any); ok && s.Index >= 0 && s.Index < len(l) {
				cur = l[s.Index]
				continue
			}
			return i
		}
		next, ok := m[s.Key]
		if !ok {
			return i
		}
		cur = next
	}
	return len(p)
}

// overriddenBy says which of layers sets one of the paths, or "".
func overriddenBy(layers []Layer, as []Assignment) string {
	for _, l := range layers {
		for _, a := range as {
			if setsPath(l.Values, a.Path) {
				return l.What + " sets " + a.Path.String()
			}
		}
	}
	return ""
}

// setsPath reports whether values set p, or cut it short with a scalar
// or a list on the way.
func setsPath(values map[string]any, p helm.Path) bool {
	var cur any = values
	for _, s := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return cur != nil
		}
		if s.Index >= 0 {
			return true
		}
		next, ok := m[s.Key]
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// ArgoApplication is what an Application says about its Helm source.
type ArgoApplication struct {
	Spec struct {
		Source      *ArgoSource  `json:"source"`
		Sources     []ArgoSource `json:"sources"`
		Destination struct {
			Namespace string `json:"namespace"`
		} `json:"destination"`
	} `json:"spec"`
}

// ArgoSource is one source of an Argo CD Application: a chart, a path in a
// repository, or a ref to one that value files name.
type ArgoSource struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path"`
	Chart          string `json:"chart"`
	TargetRevision string `json:"targetRevision"`
	Ref            string `json:"ref"`
	// A source with one of these is rendered by Kustomize, a plain
	// directory or a plugin, even with a chart in its path.
	Plugin    any `json:"plugin"`
	Kustomize any `json:"kustomize"`
	Directory any `json:"directory"`
	Helm      *struct {
		ReleaseName             string          `json:"releaseName"`
		Namespace               string          `json:"namespace"`
		ValueFiles              []string        `json:"valueFiles"`
		Values                  string          `json:"values"`
		ValuesObject            map[string]any  `json:"valuesObject"`
		IgnoreMissingValueFiles bool            `json:"ignoreMissingValueFiles"`
		Parameters              []ArgoParameter `json:"parameters"`
	} `json:"helm"`
}

// ArgoParameter is one of an Application's helm.parameters.
type ArgoParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString"`
}

// TemplateParam is a parameter of an ApplicationSet's template, in Go
// template or fasttemplate syntax.
var TemplateParam = regexp.MustCompile(`\{\{[^}]*\}\}`)

// EscapeGlob quotes what path.Match would read as a pattern, but the
// template's parameters.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FluxHelmRelease is what a HelmRelease says about its chart and values.
type FluxHelmRelease struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ReleaseName     string `json:"releaseName"`
		TargetNamespace string `json:"targetNamespace"`
		Chart           *struct {
			Spec struct {
				Chart                    string   `json:"chart"`
				Version                  string   `json:"version"`
				ValuesFiles              []string `json:"valuesFiles"`
				ValuesFile               string   `json:"valuesFile"`
				IgnoreMissingValuesFiles bool     `json:"ignoreMissingValuesFiles"`
				SourceRef                struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
		ChartRef *struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"chartRef"`
		Values        map[string]any     `json:"values"`
		PostRenderers []FluxPostRenderer `json:"postRenderers"`
		Install       struct {
			DisableSchemaValidation bool `json:"disableSchemaValidation"`
		} `json:"install"`
		Upgrade struct {
			DisableSchemaValidation bool `json:"disableSchemaValidation"`
		} `json:"upgrade"`
		ValuesFrom []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			ValuesKey  string `json:"valuesKey"`
			TargetPath string `json:"targetPath"`
			Optional   bool   `json:"optional"`
		} `json:"valuesFrom"`
	} `json:"spec"`
}

// ReleaseName is helm-controller's name for the release: spec.releaseName,
// else the target namespace and the HelmRelease's name, shortened as
// helm-controller does above 53 characters.
func (hr *FluxHelmRelease) ReleaseName() string {
	name := hr.Spec.ReleaseName
	if name == "" {
		name = hr.Metadata.Name
		if hr.Spec.TargetNamespace != "" {
			name = hr.Spec.TargetNamespace + "-" + name
		}
	}
	if len(name) > 53 {
		sum := sha256.Sum256([]byte(name))
		name = name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	return name
}

// ValuesFrom reads the values a HelmRelease takes from a ConfigMap the
// same build renders (as kustomize generates them from values files).
func ValuesFrom(kind, name, key, targetPath, ns string, out map[string]map[string]any) (Layer, error) {
	if key == "" {
		key = "values.yaml"
	}
	what := fmt.Sprintf("valuesFrom %s %s/%s key %s", kind, ns, name, key)
	if kind != "ConfigMap" {
		return Layer{}, fmt.Errorf("%s: only ConfigMaps the repository renders can be read", what)
	}
	var cm map[string]any
	for id, obj := range out {
		n, _ := tree.Dig(obj, "metadata", "name").(string)
		if strings.HasPrefix(id, "/ConfigMap/"+ns+"/") && (n == name || GeneratedName(n, name)) {
			cm = obj
			break
		}
	}
	if cm == nil {
		return Layer{}, fmt.Errorf("%s: the ConfigMap is not rendered with the HelmRelease", what)
	}
	text, ok := tree.Dig(cm, "data", key).(string)
	if !ok {
		return Layer{}, fmt.Errorf("%s: the ConfigMap has no such key", what)
	}
	if targetPath != "" {
		// As helm-controller sets it: a quoted value is a string.
		parse := strvals.ParseInto
		if len(text) >= 2 && (text[0] == '"' || text[0] == '\'') && text[len(text)-1] == text[0] {
			parse, text = strvals.ParseIntoString, text[1:len(text)-1]
		}
		vals := map[string]any{}
		if err := parse(targetPath+"="+text, vals); err != nil {
			return Layer{}, fmt.Errorf("%s: targetPath %q: %w", what, targetPath, err)
		}
		return Layer{What: what, Values: vals}, nil
	}
	var vals map[string]any
	if err := sigsyaml.Unmarshal([]byte(text), &vals); err != nil {
		return Layer{}, fmt.Errorf("%s: %w", what, err)
	}
	return Layer{What: what, Values: vals}, nil
}

// GeneratedName reports whether n is name with the hash suffix kustomize's
// generators add.
func GeneratedName(n, name string) bool {
	rest, ok := strings.CutPrefix(n, name+"-")
	return ok && len(rest) == 10 && !strings.ContainsAny(rest, "-.")
}

// ChartValuesFiles gives ch the default values Flux builds from a
// HelmRelease's valuesFiles: merged in order, in place of the chart's
// values.yaml (which counts only when listed).
func ChartValuesFiles(r *Release, ch *helm.Chart, files []string, read func(string) ([]byte, error), ignoreMissing bool) (*helm.Chart, error) {
	var layers []map[string]any
	for _, f := range files {
		data, err := read(f)
		if errors.Is(err, fs.ErrNotExist) && ignoreMissing {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: spec.chart.spec.valuesFiles %q: %w", r, f, err)
		}
		var vals map[string]any
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return nil, fmt.Errorf("%s: spec.chart.spec.valuesFiles %q: %w", r, f, err)
		}
		layers = append(layers, vals)
	}
	return ch.WithDefaults(helm.Merge(layers...))
}

// OrDefault returns s, or def when s is empty.
func OrDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// EqualSpec reports whether two objects have the same spec.
func EqualSpec(x, y map[string]any) bool {
	a, _ := json.Marshal(x["spec"])
	b, _ := json.Marshal(y["spec"])
	return string(a) == string(b)
}

// ErrHelm means a target that Helm renders could not be followed to the
// values that size it: its release, chart or values could not be read,
// or no values key sizes the container alone.
var ErrHelm = errors.New("helm release")

// Deployer names, from a live object's metadata, what deploys it: the
// Flux HelmRelease whose helm-controller installed it
// (helmrelease/<namespace>/<name>), the Argo CD application that tracks
// it (argocd/<application>), or the Flux Kustomization that applied it
// (kustomization/<namespace>/<name>), else the Helm release that Helm's
// annotations name (helm/<namespace>/<release>); "" when its metadata
// names none. The instance label, which charts also set, counts last.
func Deployer(t repoindex.Target) string {
	if name := t.Labels[repoindex.FluxHelmName]; name != "" {
		return "helmrelease/" + OrDefault(t.Labels[repoindex.FluxHelmNamespace], t.Namespace) + "/" + name
	}
	if id := t.Annotations[repoindex.ArgoTrackingID]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return "argocd/" + app
	}
	if name := t.Labels[repoindex.FluxNameLabel]; name != "" {
		return "kustomization/" + t.Labels[repoindex.FluxNamespaceLabel] + "/" + name
	}
	if name := t.Annotations[repoindex.HelmReleaseName]; name != "" {
		// Helm installed it; Argo CD renders charts without installing
		// them, so the instance label is the release's, no application's.
		return "helm/" + OrDefault(t.Annotations[repoindex.HelmReleaseNS], t.Namespace) + "/" + name
	}
	if app := t.Labels[repoindex.InstanceLabel]; app != "" {
		return "argocd/" + app
	}
	return ""
}

// Release is a Helm release of the repository that renders targets: a
// Flux HelmRelease or an Argo CD Application with a Helm source.
type Release struct {
	Kind string           // HelmRelease or Application
	Ref  repoindex.DocRef // the object's document
	// Name and namespace are the Helm release's.
	Name, Namespace string
	// LiveNamespace is the HelmRelease's namespace as the cluster gives
	// it (helm-controller's labels on the target); "" when not known.
	LiveNamespace string
	Chart         *helm.Chart
	// SkipSchema follows a HelmRelease's disableSchemaValidation: its
	// values are not checked against the chart's schema.
	SkipSchema bool
	// Source is the index in spec.sources of an Application's Helm
	// source, or -1 for spec.source.
	Source int
	// Changes are the indexes of the changes whose targets it renders.
	Changes []int
}

// String names the release for errors and reports.
func (r *Release) String() string {
	if r.Ref.Chain != nil {
		return fmt.Sprintf("%s %s (%s, rendered by %s)", r.Kind, r.ObjectName(), r.Ref.File, r.Ref.Chain.Root().Dir)
	}
	return fmt.Sprintf("%s %s (%s)", r.Kind, r.ObjectName(), r.Ref.File)
}

// ObjectName is the namespace/name of the object that defines the release.
func (r *Release) ObjectName() string {
	if r.Ref.Namespace == "" {
		return r.Ref.Key.Name
	}
	return r.Ref.Namespace + "/" + r.Ref.Key.Name
}

// Layer is one source of a release's values, in Helm's order.
type Layer struct {
	What   string
	Values map[string]any
	// File is the values file of the repository the layer is, "" for
	// values held in the object.
	File string
	// Prefix is, for values held in the object, the path to them
	// (spec.values, spec.source.helm.valuesObject).
	Prefix helm.Path
	// writable: the layer belongs to this release's environment alone.
	Writable bool
	// Refused says why a layer the job would write to is not writable,
	// for the refusal to name what was tried.
	Refused string
}

// NamedRelease is a HelmRelease and the namespace of the Helm release it
// installs ("" when neither it nor its environment sets one).
type NamedRelease struct {
	Ref       repoindex.DocRef
	Namespace string
}

// DecodeNode turns a parsed document into plain values.
func DecodeNode(doc *yaml.Node) (map[string]any, error) {
	s, err := yaml.String(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := sigsyaml.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Convert decodes plain values into a typed struct through JSON.
func Convert(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
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

// Assignment sets one quantity at a path of a document: a Helm values key
// such as web.resources.requests.cpu, below the mapping that holds the
// values.
type Assignment struct {
	Path     helm.Path
	Quantity resource.Quantity
}

// KeysPath turns plain mapping keys into a path.
func KeysPath(keys ...string) helm.Path {
	p := make(helm.Path, len(keys))
	for i, k := range keys {
		p[i] = helm.Key(k)
	}
	return p
}

// stepGroup is the assignments that go through one step: a quantity when
// the step is their last, else the rest of their paths.
type stepGroup struct {
	Step helm.Step
	Leaf *resource.Quantity
	Rest []Assignment
}

// GroupByStep groups assignments by their first step, in order.
func GroupByStep(as []Assignment) []stepGroup {
	var out []stepGroup
	for _, a := range as {
		if len(a.Path) == 0 {
			continue
		}
		i := 0
		for i < len(out) && out[i].Step != a.Path[0] {
			i++
		}
		if i == len(out) {
			out = append(out, stepGroup{Step: a.Path[0]})
		}
		if len(a.Path) == 1 {
			q := a.Quantity
			out[i].Leaf = &q
			continue
		}
		out[i].Rest = append(out[i].Rest, Assignment{Path: a.Path[1:], Quantity: a.Quantity})
	}
	return out
}

// NewEntry is what a group writes where its key is missing: nested
// mappings down to the quantities.
func NewEntry(g stepGroup, at helm.Path) (yamledit.Entry, error) {
	if g.Leaf != nil {
		return yamledit.Entry{Key: g.Step.Key, Value: g.Leaf.String(), Quantity: *g.Leaf}, nil
	}
	e := yamledit.Entry{Key: g.Step.Key, Children: []yamledit.Entry{}}
	for _, sub := range GroupByStep(g.Rest) {
		if sub.Step.Index >= 0 {
			return yamledit.Entry{}, fmt.Errorf("%w: %s is not set here, and a list is replaced whole, so its items are set where the list is", repoindex.ErrUnsafeFile, at)
		}
		c, err := NewEntry(sub, append(append(helm.Path{}, at...), sub.Step))
		if err != nil {
			return yamledit.Entry{}, err
		}
		e.Children = append(e.Children, c)
	}
	return e, nil
}

// AssignmentEntries is the whole tree of assignments as entries, for a new
// file; it fails on a list step.
func AssignmentEntries(as []Assignment) ([]yamledit.Entry, error) {
	var out []yamledit.Entry
	for _, g := range GroupByStep(as) {
		if g.Step.Index >= 0 {
			return nil, fmt.Errorf("%w: a new patch cannot set item %d of a list, which it would replace whole", repoindex.ErrUnsafeFile, g.Step.Index)
		}
		e, err := NewEntry(g, helm.Path{g.Step})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DigPath returns the value at p in a decoded object, or nil.
func DigPath(v any, p helm.Path) any {
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return nil
			}
			v = x[s.Key]
		case []any:
			if s.Index < 0 || s.Index >= len(x) {
				return nil
			}
			v = x[s.Index]
		default:
			return nil
		}
	}
	return v
}

// SetPath sets the value at p in a decoded object, creating mappings; it
// reports false when a list item on the way is missing or a step crosses
// a scalar.
func SetPath(obj map[string]any, p helm.Path, value any) bool {
	var cur any = obj
	for i, s := range p {
		last := i == len(p)-1
		switch x := cur.(type) {
		case map[string]any:
			if s.Index >= 0 {
				return false
			}
			if last {
				x[s.Key] = value
				return true
			}
			next := x[s.Key]
			if next == nil {
				if p[i+1].Index >= 0 {
					return false
				}
				next = map[string]any{}
				x[s.Key] = next
			}
			cur = next
		case []any:
			if s.Index < 0 || s.Index >= len(x) {
				return false
			}
			if last {
				x[s.Index] = value
				return true
			}
			cur = x[s.Index]
		default:
			return false
		}
	}
	return false
}

// SameQuantityValue reports whether a decoded value holds the quantity q.
func SameQuantityValue(v any, q resource.Quantity) bool {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int, int64, float64:
		s = fmt.Sprint(x)
	default:
		return false
	}
	have, err := resource.ParseQuantity(strings.TrimSpace(s))
	return err == nil && have.Cmp(q) == 0
}

// PathKeys returns p's keys when it has no list step.
func PathKeys(p helm.Path) ([]string, bool) {
	out := make([]string, len(p))
	for i, s := range p {
		if s.Index >= 0 {
			return nil, false
		}
		out[i] = s.Key
	}
	return out, true
}

// PostRenderNote heads each patch of the post-renderer the job writes into
// a HelmRelease; it tells that post-renderer from the ones people write,
// in the file and in the object.
const PostRenderNote = "# Resources recommended by recommend-job: no values key of the chart sizes these containers alone."
