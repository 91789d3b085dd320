package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/edits"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// WithCharts lets Apply render charts that HelmReleases and Applications
// take from chart repositories and OCI registries; without it only charts
// in the repository are rendered.
func WithCharts(f helmsource.ChartFetcher) Option { return func(o *options) { o.charts = f } }

// WithHelmEngine sets how Apply renders charts: in a render process and
// within which limits, with which cluster's capabilities, within how
// long (helm.Engine). The default, the zero Engine, renders in this
// process with Helm's default capabilities.
func WithHelmEngine(e helm.Engine) Option { return func(o *options) { o.engine = e } }

// WithRepositoryURL is the URL of the repository being edited: a Flux
// GitRepository or an Argo CD source with that URL (compared by host and
// path) reads its charts and values files from it. Without it every git
// source is taken to be this repository.
func WithRepositoryURL(u string) Option { return func(o *options) { o.repoURL = u } }

// WithKeyFinder shares a helm.Finder, which caches what it renders, with
// the caller (the default is one per Apply, rendering with the Engine of
// WithHelmEngine); the Finder renders with the Engine it was made with.
func WithKeyFinder(f *helm.Finder) Option { return func(o *options) { o.keys = f } }

// HelmSource says how a change went through a Helm release.
type HelmSource struct {
	// Kind and Object are the HelmRelease or Application that renders the
	// target: its kind, and its namespace/name.
	Kind, Object string
	// Release and Namespace are the Helm release's name and namespace.
	Release, Namespace string
	// Chart and Version are the chart's; ChartSource says where it is.
	Chart, Version, ChartSource string
	// Layer says which values were edited: a values file, or the values
	// the object holds (spec.values, helm.valuesObject).
	Layer string
	// Keys maps each value set (requests.cpu) to the values key it went to
	// (web.resources.requests.cpu).
	Keys map[string]string
	// SchemaUnchecked names the chart's values schemas the proof could not
	// check, and why: a $ref it could not fetch.
	SchemaUnchecked []string
}

// helmPhase is what the Helm changes of one Apply share.
type helmPhase struct {
	a    *applier
	dir  string
	mode Mode
	// the proof plan of Apply, which the Helm changes join.
	proofs  map[string][]int
	exps    []proof.Expectation
	touched [][]string
}

// heldRelease is a release with its values and post-renderers before the
// edits.
type heldRelease struct {
	*helmsource.Release
	before map[string]any
	post   []helmsource.FluxPostRenderer
}

// apply resolves, edits and plans the proofs of the changes in pending,
// whose targets no manifest defines but Helm may render.
// It returns the releases edited, and the changes held whole: those whose
// HorizontalPodAutoscaler no values key adjusts, with nothing else to set.
func (h *helmPhase) apply(ctx context.Context, changes []Change, pending []int, results []Result) ([]heldRelease, []int) {
	var rels []*helmsource.Release
	var settled []int
	byRef := map[string]*helmsource.Release{}
	for _, i := range pending {
		r, err := h.a.src.FindRelease(changes[i].sought(), h.dir)
		if err != nil {
			r, results[i].Chosen, err = h.chooseRelease(ctx, changes[i], err)
		}
		if err != nil {
			if changes[i].Autoscaler != nil && holdAutoscaled(&changes[i], &results[i], "no Helm release of the repository renders it, so hpa-mode adjust does not do it") {
				settled = append(settled, i)
				continue
			}
			if !errors.Is(err, helmsource.ErrNotHelm) {
				results[i].Err = err
			}
			continue
		}
		key := fmt.Sprintf("%s#%d@%s", r.Ref.File, r.Ref.Doc, r.Ref.RenderedFrom())
		if byRef[key] == nil {
			byRef[key] = r
			rels = append(rels, r)
		}
		byRef[key].Changes = append(byRef[key].Changes, i)
	}
	h.a.src.FetchCharts(ctx, rels)
	var held []heldRelease
	for _, r := range rels {
		if err := ctx.Err(); err != nil {
			return held, settled
		}
		st, err := h.a.src.Load(ctx, r, false)
		if errors.Is(err, helmsource.ErrNotHelm) {
			continue
		}
		if err != nil {
			h.failAll(r, results, fmt.Errorf("%w: %w", helmsource.ErrHelm, err))
			continue
		}
		values := helmsource.MergeLayers(st.Layers)
		hpaSets := h.autoscalerKeys(ctx, helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: values}, r, changes, results, &settled)
		if len(r.Changes) == 0 {
			continue
		}
		want := make([]helm.Container, len(r.Changes))
		for j, i := range r.Changes {
			want[j] = helmContainer(changes[i])
		}
		found, err := h.a.keys.Keys(ctx, helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: values, SkipSchema: r.SkipSchema}, want)
		if err != nil {
			h.failAll(r, results, fmt.Errorf("%w: %s: %w", helmsource.ErrHelm, r, err))
			continue
		}
		var post []int
		for j, i := range r.Changes {
			if h.applyOne(r, st.Layers, changes[i], found[j], hpaSets[i], i, &results[i]) {
				post = append(post, i)
			}
		}
		if len(post) > 0 {
			h.writePost(ctx, r, st, values, changes, post, results)
		}
		held = append(held, heldRelease{Release: r, before: values, post: st.Post})
	}
	return held, settled
}

// autoscalerKeys finds, for the changes of r whose HorizontalPodAutoscaler
// moves with the requests (hpa-mode adjust), the values keys that set its
// targets, by rendering the release rel as for the requests, and returns
// the assignments of the new targets by change. A change whose targets no
// key sets has its autoscaled resources held; one with nothing else left
// leaves r.Changes for settled.
func (h *helmPhase) autoscalerKeys(ctx context.Context, rel helm.Release, r *helmsource.Release, changes []Change, results []Result, settled *[]int) map[int][]helmsource.Assignment {
	sets := map[int][]helmsource.Assignment{}
	r.Changes = slices.DeleteFunc(r.Changes, func(i int) bool {
		c := &changes[i]
		if c.Autoscaler == nil {
			return false
		}
		var as []helmsource.Assignment
		for _, u := range c.Autoscaler.Utilization {
			key, err := h.a.charts.UtilizationKey(ctx, rel, helm.UtilizationTarget{HPA: c.Autoscaler.Target.Name, Index: u.Index})
			if err != nil {
				if holdAutoscaled(c, &results[i], err.Error()) {
					*settled = append(*settled, i)
					return true
				}
				return false
			}
			as = append(as, helmsource.Assignment{Path: key, Quantity: *resource.NewQuantity(int64(u.Percent), resource.DecimalSI)})
		}
		sets[i] = as
		return false
	})
	return sets
}

func (h *helmPhase) failAll(r *helmsource.Release, results []Result, err error) {
	for _, i := range r.Changes {
		results[i].File, results[i].Err = r.Ref.File, err
	}
}

// helmContainer names a change's container as the chart renders it.
func helmContainer(c Change) helm.Container {
	return helm.Container{Kind: c.Target.Kind, Namespace: c.Target.Namespace, Name: c.Target.Name, Container: c.Container}
}

// applyOne writes one change's values at the keys found for its container,
// in the layer of its environment. It reports, for a HelmRelease, that no
// key sizes the container alone: a post-renderer must.
func (h *helmPhase) applyOne(r *helmsource.Release, layers []helmsource.Layer, c Change, found helm.Found, hpa []helmsource.Assignment, i int, res *Result) (post bool) {
	res.Helm = &HelmSource{
		Kind: r.Kind, Object: r.ObjectName(), Release: r.Name, Namespace: r.Namespace,
		Chart: r.Chart.Name, Version: r.Chart.Version, ChartSource: r.Chart.Source,
	}
	as, err := assignmentsFor(c, found)
	if r.Kind == "HelmRelease" && (errors.Is(err, helm.ErrNoKey) || errors.Is(err, helm.ErrSharedKey)) {
		if len(hpa) > 0 {
			// A post-renderer would size the container, and the values
			// the HPA: two edits the proof does not tie together.
			res.File, res.Err = r.Ref.File, fmt.Errorf("%w: %s: no values key sizes %s alone, and its HorizontalPodAutoscaler's target is a values key: not adjusted", helmsource.ErrHelm, r, helmContainer(c))
			return false
		}
		return true
	}
	as = append(as, hpa...)
	if err != nil {
		res.File, res.Err = r.Ref.File, fmt.Errorf("%w: %s, chart %s %s: %w", helmsource.ErrHelm, r, r.Chart.Name, r.Chart.Version, err)
		return false
	}
	res.Helm.Keys = map[string]string{}
	for f, p := range found.Keys {
		if wanted(c, f) {
			res.Helm.Keys[string(f)] = p.String()
		}
	}
	l, err := helmsource.ChooseLayer(layers, as)
	if err != nil {
		res.File, res.Err = r.Ref.File, fmt.Errorf("%w: %s: %w", helmsource.ErrHelm, r, err)
		return false
	}
	res.Helm.Layer = l.What
	var files []string
	if l.File != "" {
		res.File = l.File
		res.Changed, res.Err = h.editFile(c, l.File, as)
		files = []string{l.File}
	} else {
		res.File, res.Changed, files, res.Err = h.writeObject(c, r.Ref, l.Prefix, as)
	}
	if fe := h.a.Files[res.File]; res.Changed && res.Err == nil && fe != nil {
		res.Method = methodOf(fe)
	}
	if len(hpa) > 0 && res.Err == nil {
		res.Autoscaler = &AutoscalerResult{File: res.File, Changed: res.Changed}
	}
	if res.Err == nil && l.File == "" && r.Ref.Chain != nil {
		k := r.Ref.Chain.Root()
		full := make([]helmsource.Assignment, len(as))
		for j, a := range as {
			full[j] = helmsource.Assignment{Path: append(append(helm.Path{}, l.Prefix...), a.Path...), Quantity: a.Quantity}
		}
		h.exps[i] = proof.Expectation{Want: c.resources(), Object: r.BuildID(), Sets: full}
		h.proofs[k.Dir] = append(h.proofs[k.Dir], i)
		h.touched[i] = files
	}
	return false
}

// writePost sizes the containers of changes idx, which no values key
// sizes alone, with a kustomize post-renderer of the HelmRelease: one
// strategic-merge patch per workload, kept with those it wrote before.
// A post-renderer someone wrote is left alone, and the changes refused.
func (h *helmPhase) writePost(ctx context.Context, r *helmsource.Release, st helmsource.Loaded, values map[string]any, changes []Change, idx []int, results []Result) {
	fail := func(err error) {
		for _, i := range idx {
			results[i].File, results[i].Err = r.Ref.File, fmt.Errorf("%w: %s, chart %s %s: %w", helmsource.ErrHelm, r, r.Chart.Name, r.Chart.Version, err)
		}
	}
	if len(st.Post) > 0 && !helmsource.IsOurs(st.Post) {
		fail(fmt.Errorf("no values key sizes %s alone, and the HelmRelease has post-renderers of its own, which the job does not change", containerNames(changes, idx)))
		return
	}
	objects, err := h.a.charts.Render(ctx, helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: values, SkipSchema: r.SkipSchema})
	if err != nil {
		fail(err)
		return
	}
	patches, err := helmsource.OurPatches(st.Post)
	if err != nil {
		fail(err)
		return
	}
	for _, i := range idx {
		c := changes[i]
		apiVersion, init, ok := helmsource.RenderedContainer(objects, helmContainer(c))
		if !ok {
			fail(fmt.Errorf("%s is not in the chart's output", helmContainer(c)))
			return
		}
		patches = helmsource.WithContainer(patches, helmsource.WorkloadPatch{APIVersion: apiVersion, Kind: c.Target.Kind, Name: c.Target.Name},
			helmsource.ContainerValues{Name: c.Container, Init: init, Requests: c.Requests.List(), Limits: c.Limits.List()})
	}
	c0 := changes[idx[0]]
	file, changed, files, err := h.placeObject(c0, r.Ref, edits.PostRendererPlacer(patches), func(step int) ([]string, error) {
		return append([]string{"spec:"}, helmsource.PostRendererLines(patches, step, step)...), nil
	})
	method := Method("")
	if fe := h.a.Files[file]; changed && err == nil && fe != nil {
		method = methodOf(fe)
	}
	for _, i := range idx {
		res := &results[i]
		res.File, res.Err, res.Changed, res.Method = file, err, changed, method
		res.Helm.Layer = "spec.postRenderers of " + r.String()
		if err == nil && r.Ref.Chain != nil {
			h.exps[i] = proof.Expectation{Want: changes[i].resources(), Object: r.BuildID(), Free: []helm.Path{helmsource.KeysPath("spec", "postRenderers")}}
			k := r.Ref.Chain.Root()
			h.proofs[k.Dir] = append(h.proofs[k.Dir], i)
			h.touched[i] = files
		}
	}
}

// containerNames lists the changes' containers for messages.
func containerNames(changes []Change, idx []int) string {
	var out []string
	for _, i := range idx {
		out = append(out, helmContainer(changes[i]).String())
	}
	return strings.Join(out, ", ")
}

// wanted reports whether c sets field f.
func wanted(c Change, f helm.Field) bool {
	list, name, _ := strings.Cut(string(f), ".")
	values := c.Requests
	if list == "limits" {
		values = c.Limits
	}
	_, ok := values.Get(corev1.ResourceName(name))
	return ok
}

// assignmentsFor turns a change's values into assignments at the keys
// found for its container; every value asked for needs a key.
func assignmentsFor(c Change, found helm.Found) ([]helmsource.Assignment, error) {
	var as []helmsource.Assignment
	var missing []string
	for _, s := range []struct {
		list   string
		values Values
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for name, q := range s.values.All() {
			f := helm.Field(s.list + "." + string(name))
			p, ok := found.Keys[f]
			if !ok {
				missing = append(missing, string(f))
				continue
			}
			as = append(as, helmsource.Assignment{Path: p, Quantity: q})
		}
	}
	if len(missing) == 0 {
		return as, nil
	}
	if found.Err != nil {
		return nil, found.Err
	}
	return nil, fmt.Errorf("%w: no values key sets %s of %s", helm.ErrNoKey, strings.Join(missing, " and "), found.Container)
}

// editFile sets the assignments in a values file of the repository.
func (h *helmPhase) editFile(c Change, file string, as []helmsource.Assignment) (bool, error) {
	fe, err := h.a.File(file)
	if err != nil {
		return false, err
	}
	if fe.Unsafe != nil {
		return false, fmt.Errorf("%s: %w", file, fe.Unsafe)
	}
	docs, err := fe.CurrentDocs()
	if err != nil {
		return false, err
	}
	if len(docs) != 1 {
		return false, fmt.Errorf("%w: %s: a values file holds one document, not %d", repoindex.ErrUnsafeFile, file, len(docs))
	}
	changed, err := fe.Edit(docs, 0, edits.ValuesPlacer(nil, as))
	if err != nil {
		return false, fmt.Errorf("%s: %w", file, err)
	}
	return changed, nil
}

// writeObject sets the assignments below prefix in the object ref points
// at (see placeObject).
func (h *helmPhase) writeObject(c Change, ref repoindex.DocRef, prefix helm.Path, as []helmsource.Assignment) (string, bool, []string, error) {
	return h.placeObject(c, ref, edits.ValuesPlacer(prefix, as), func(step int) ([]string, error) {
		keys, ok := helmsource.PathKeys(prefix)
		if !ok {
			return nil, fmt.Errorf("%w: %s: the values are inside a list (%s), which a patch would replace whole", repoindex.ErrUnsafeFile, ref.File, prefix)
		}
		full := make([]helmsource.Assignment, len(as))
		for j, a := range as {
			full[j] = helmsource.Assignment{Path: append(helmsource.KeysPath(keys...), a.Path...), Quantity: a.Quantity}
			for _, s := range a.Path {
				if s.Index < 0 && !edits.PlainKey.MatchString(s.Key) {
					return nil, fmt.Errorf("%w: %s: key %q of %s would need quoting in a patch", repoindex.ErrUnsafeFile, ref.File, s.Key, a.Path)
				}
			}
		}
		entries, err := helmsource.AssignmentEntries(full)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref.File, err)
		}
		return yamledit.BlockLines(entries, 0, step, nil), nil
	})
}

// placeObject edits the object ref points at with place: in place, or in
// a patch of the object in the kustomization of its environment when the
// file is shared with another environment, the mode says so, or that
// kustomization already patches the object; fresh gives the body of a new
// patch at its indentation step.
func (h *helmPhase) placeObject(c Change, ref repoindex.DocRef, place edits.Placer, fresh func(step int) ([]string, error)) (string, bool, []string, error) {
	mode := c.Mode
	if mode == "" {
		mode = h.mode
	}
	ref.Shared = h.a.Index.SharedFor(ref)
	if ref.Chain == nil && mode == ModePatch {
		return ref.File, false, nil, fmt.Errorf("%w: %s: patch mode, but no kustomization renders %s", ErrNoOverlay, c.Target, ref.File)
	}
	file, doc := ref.File, ref.Doc
	if ref.Chain != nil {
		pf, fe, d, err := h.a.ObjectPatch(ref)
		switch {
		case err != nil:
			return pf, false, nil, err
		case fe != nil:
			file, doc = pf, d
		case mode == ModePatch || ref.Shared != "":
			// What fresh refuses does not depend on the step: ask before
			// the kustomization gains an entry.
			if _, err := fresh(2); err != nil {
				return ref.File, false, nil, err
			}
			return h.a.NewObjectPatch(ref, func(step int) []string {
				body, _ := fresh(step)
				return body
			})
		}
	}
	fe, err := h.a.File(file)
	if err != nil {
		return file, false, nil, err
	}
	err = fe.Unsafe
	changed := false
	if err == nil {
		var docs []*yaml.Node
		if docs, err = fe.CurrentDocs(); err != nil {
			return file, false, nil, err
		}
		changed, err = fe.Edit(docs, doc, place)
	}
	switch {
	case err == nil:
		return file, changed, []string{file}, nil
	case !errors.Is(err, repoindex.ErrUnsafeFile) || ref.Chain == nil || file != ref.File:
	case mode == ModeAuto:
		// What cannot be edited in place is patched through the
		// kustomization that renders it, as patch mode would.
		if _, ferr := fresh(2); ferr != nil {
			return file, false, nil, fmt.Errorf("%s: %w; nor could it be patched in %s: %w", file, err, ref.Chain.Root().File, ferr)
		}
		return h.a.NewObjectPatch(ref, func(step int) []string {
			body, _ := fresh(step)
			return body
		})
	default:
		return file, false, nil, fmt.Errorf("%s: %w; a patch in %s would leave it as it is (render-mode patch, or the annotation %s: patch)", file, err, ref.Chain.Root().File, AnnotationMode)
	}
	return file, false, nil, fmt.Errorf("%s: %w", file, err)
}

// proveHelm renders each release's chart with its values before and after
// the edits that survived the kustomize proofs: only the changed
// containers' values may differ in the whole output. A release that fails
// has its edits undone.
func (h *helmPhase) proveHelm(ctx context.Context, held []heldRelease, changes []Change, pending []int, results []Result) error {
	for _, r := range held {
		if err := ctx.Err(); err != nil {
			return err
		}
		var expects []helm.Expect
		var files []string
		for _, i := range append(slices.Clone(r.Changes), h.marked(r, changes, pending, results)...) {
			res := &results[i]
			if res.Err != nil || !res.Changed {
				continue
			}
			c := changes[i]
			e := helm.Expect{Container: helmContainer(c), Requests: c.Requests.List(), Limits: c.Limits.List()}
			if c.Autoscaler != nil {
				e.Utilization = map[helm.UtilizationTarget]int32{}
				for _, u := range c.Autoscaler.Utilization {
					e.Utilization[helm.UtilizationTarget{HPA: c.Autoscaler.Target.Name, Index: u.Index}] = u.Percent
				}
			}
			expects = append(expects, e)
			files = append(files, h.touchedBy(i, res)...)
		}
		if len(expects) == 0 {
			continue
		}
		err := h.proveRelease(ctx, r, expects)
		if unchecked := r.Chart.SchemaUnchecked(); len(unchecked) > 0 {
			for _, i := range r.Changes {
				if results[i].Helm != nil {
					results[i].Helm.SchemaUnchecked = unchecked
				}
			}
		}
		if err == nil {
			continue
		}
		slices.Sort(files)
		files = slices.Compact(files)
		for _, f := range files {
			if fe := h.a.Files[f]; fe != nil {
				fe.Revert()
			}
		}
		for i := range results {
			res := &results[i]
			if res.Err == nil && res.Changed && slices.Contains(files, res.File) {
				res.Changed, res.Method = false, ""
				res.Err = fmt.Errorf("%s: %w: rendered with the edits of %s: %w", res.File, ErrProofFailed, strings.Join(files, ", "), err)
			}
		}
	}
	return nil
}

// marked returns the changes outside pending, placed by a marker, that
// release r renders: a marker in its values and a sibling's values key
// or post-renderer are proved together, each allowed its own values.
func (h *helmPhase) marked(r heldRelease, changes []Change, pending []int, results []Result) []int {
	var out []int
	for i, c := range changes {
		if slices.Contains(pending, i) || results[i].Err != nil || !results[i].Changed {
			continue
		}
		other, err := h.a.src.FindRelease(c.sought(), h.dir)
		if err == nil && other.Ref.File == r.Ref.File && other.Ref.Doc == r.Ref.Doc && other.Ref.RenderedFrom() == r.Ref.RenderedFrom() {
			out = append(out, i)
		}
	}
	return out
}

// touchedBy returns the files the change's edit wrote.
func (h *helmPhase) touchedBy(i int, res *Result) []string {
	if h.touched[i] != nil {
		return h.touched[i]
	}
	return []string{res.File}
}

// proveRelease renders the release before and after, each through the
// HelmRelease's post-renderers of the time.
func (h *helmPhase) proveRelease(ctx context.Context, r heldRelease, expects []helm.Expect) error {
	st, err := h.a.src.Load(ctx, r.Release, true)
	if err != nil {
		return fmt.Errorf("%s after the edit: %w", r.Release, err)
	}
	rel := helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: r.before, SkipSchema: r.SkipSchema}
	wrap := func(err error) error {
		return fmt.Errorf("%s, chart %s %s: %w", r.Release, r.Chart.Name, r.Chart.Version, err)
	}
	if len(r.post) == 0 && len(st.Post) == 0 {
		if err := h.a.charts.Prove(ctx, rel, helmsource.MergeLayers(st.Layers), expects); err != nil {
			return wrap(err)
		}
		return nil
	}
	output := func(values map[string]any, post []helmsource.FluxPostRenderer) ([]helm.Object, error) {
		after := rel
		after.Values = values
		objects, err := h.a.charts.Render(ctx, after)
		if err != nil {
			return nil, err
		}
		return helmsource.PostRender(objects, post, true)
	}
	before, err := output(r.before, r.post)
	if err != nil {
		return wrap(err)
	}
	after, err := output(helmsource.MergeLayers(st.Layers), st.Post)
	if err != nil {
		return wrap(fmt.Errorf("%w: after the edit: %w", ErrProofFailed, err))
	}
	again := func() ([]helm.Object, error) { return output(r.before, r.post) }
	if err := helm.Compare(rel, before, after, expects, again); err != nil {
		return wrap(err)
	}
	return nil
}

// ErrHelm means a target that Helm renders could not be followed to the
// values that size it (see helmsource.ErrHelm).
var ErrHelm = helmsource.ErrHelm

// Deployer names, from a live object's metadata, what deploys it (see
// helmsource.Deployer).
func Deployer(t Target) string { return helmsource.Deployer(t) }

// ChartFetcher fetches the charts of chart repositories and OCI registries
// (see helmsource.ChartFetcher).
type ChartFetcher = helmsource.ChartFetcher
