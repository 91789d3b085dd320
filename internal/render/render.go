package render

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/recommend-job/recommend-job/internal/render/edits"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// What the repository index reports, under render's names.
var (
	// ErrTargetNotFound means no manifest under the searched path defines the target.
	ErrTargetNotFound = repoindex.ErrTargetNotFound
	// ErrAmbiguousTarget means several manifests define the target equally
	// well, or a pod template names the container more than once.
	ErrAmbiguousTarget = repoindex.ErrAmbiguousTarget
	// ErrContainerNotFound means the target's pod template has no container
	// (or native sidecar) of that name, or no pod template at all.
	ErrContainerNotFound = repoindex.ErrContainerNotFound
	// ErrUnsafeFile means the file defining the target cannot be edited
	// faithfully: it is a template, SOPS-encrypted, uses anchors, aliases or
	// merge keys on the edited path, or could only be rewritten with loss.
	ErrUnsafeFile = repoindex.ErrUnsafeFile
	// ErrFileTooLarge means a file is above the size limit and was not read.
	ErrFileTooLarge = repoindex.ErrFileTooLarge
	// ErrSharedSource means deployers of other namespaces or names render
	// the target's source too, and its own deployer cannot carry its patch.
	ErrSharedSource = repoindex.ErrSharedSource
)

// Target identifies a live workload (see repoindex.Target).
type Target = repoindex.Target

// Skip is a file left unread because of its size (see repoindex.Skip).
type Skip = repoindex.Skip

// The annotations and labels that steer or narrow the search (see repoindex).
const (
	AnnotationMode     = repoindex.AnnotationMode
	AnnotationPath     = repoindex.AnnotationPath
	ArgoTrackingID     = repoindex.ArgoTrackingID
	InstanceLabel      = repoindex.InstanceLabel
	FluxNameLabel      = repoindex.FluxNameLabel
	FluxNamespaceLabel = repoindex.FluxNamespaceLabel
	// DefaultMaxFileSize is the size limit WithMaxFileSize changes.
	DefaultMaxFileSize = repoindex.DefaultMaxFileSize
)

var (
	// ErrInvalidChange means the change itself is malformed: missing target
	// fields or container, or a resource name or quantity that is not valid.
	ErrInvalidChange = errors.New("invalid change")
	// ErrNoOverlay means patch mode was asked for a target that no
	// kustomization renders, so there is no overlay to hold a patch.
	ErrNoOverlay = errors.New("no overlay")
	// ErrProofFailed means building the touched kustomization after the
	// edit did not give the target the new values, or changed something
	// else; the edit is undone.
	ErrProofFailed = errors.New("proof failed")
)

// Change asks that one container of a target get these resource values.
type Change struct {
	Target    repoindex.Target
	Container string
	// Requests are the requests to set; only these resources are set.
	Requests Values
	// Limits is the same for limits; nil or empty leaves limits alone.
	Limits Values
	// Mode overrides the run's mode for this change ("" keeps it); the job
	// takes it from the ResourceRecommend's AnnotationMode.
	Mode Mode
	// Path, relative to the repository root, restricts the search to
	// sources under it or rendered by a kustomization under it; the job
	// takes it from the ResourceRecommend's AnnotationPath.
	Path string
	// Owner is the caller's name for what asked for the change, handed
	// back in its Result; render does not read it.
	Owner string
	// Autoscaler, when set, is a HorizontalPodAutoscaler whose utilisation
	// targets change with the requests: its manifest is found like the
	// target's, in the environment that renders the target, and edited
	// with it. The change stands or falls with that edit.
	Autoscaler *Autoscaler
}

// Method says how a file was edited.
type Method string

const (
	// MethodSplice: the new values were spliced into the original bytes;
	// the file's diff is exactly the values that changed.
	MethodSplice Method = "splice"
	// MethodSubtree: the values could not be spliced (a block scalar, a
	// tag, a plain scalar over several lines, ...), so the lines of the
	// smallest subtree that holds them (the container's resources, or the
	// container) were re-serialised; every other line is byte-identical.
	MethodSubtree Method = "subtree"
	// MethodNewFile: a patch file was written whole, and listed in its
	// kustomization by splicing.
	MethodNewFile Method = "new-file"
)

// Result says what happened to one Change.
type Result struct {
	Change Change
	// File is the slash-separated path, relative to the repository root, of
	// the file edited for the target: the file that defines it, or the
	// patch that sets its resources in patch mode ("" if none).
	File string
	// Changed reports that the file's bytes changed because of this change.
	Changed bool
	// Method says how File was edited when Changed.
	Method Method
	// Err says why the change could not be applied; nil when it was applied
	// or the file was already up to date.
	Err error
	// Helm says, for a target a Helm release renders, which release,
	// chart and values keys the change went through; nil otherwise.
	Helm *HelmSource
	// Autoscaler says where the change's Autoscaler targets were set; nil
	// when it had none or the change was not applied.
	Autoscaler *AutoscalerResult
	// Held are the resources of the change left as they are because its
	// Autoscaler could not be adjusted with them, and HeldReason why; the
	// change's other values were applied as usual.
	Held       []corev1.ResourceName
	HeldReason string
	// Deployer names the Argo CD or Flux object that deploys the target
	// when one told where it is rendered (kind, namespace/name, and
	// "from the cluster", "generated by ApplicationSet ..." or "in the
	// repository"); "" otherwise.
	Deployer string
	// Chosen says, when several sources could define the target, that
	// File's was chosen as the one whose build has the live pod template
	// (Target.PodPrint), and what the others differ in; "" otherwise.
	Chosen string
}

// methodOf says how the last edit that changed fe was made.
func methodOf(fe *edits.File) Method {
	switch {
	case fe.Created:
		return MethodNewFile
	case fe.Subtree:
		return MethodSubtree
	}
	return MethodSplice
}

// Outcome is what Apply did.
type Outcome struct {
	// Results holds one Result per Change, in the order given.
	Results []Result
	// Files lists the files written: sorted, relative to the root, slash-separated.
	Files []string
	// Skipped lists the files that were not read because they are above
	// the size limit (WithMaxFileSize), sorted by name, whether or not a
	// change needed them.
	Skipped []repoindex.Skip
}

// Apply finds, under root/path, the source of each change's target and sets
// the values, in place or with a patch in the overlay (see Mode). It writes
// only files whose bytes changed, and returns per-change results plus the
// list of written files.
//
// Every kustomization touched is built before and after the edits; when the
// targets do not render with the new values, or anything else in the output
// changes, the edits of that kustomization are undone and their results
// wrap ErrProofFailed. Once the files are written, a last proof checks the
// written tree against every result that says its change landed (its
// files on disk as edited; every environment that proves it or reads one
// of its files built from the base and from the written tree, differing
// only in the changes' values on their own objects): a change that fails
// it is undone on disk with every change sharing a file, so a Result
// never says Changed for a value the tree does not hold.
//
// No file above the size limit (WithMaxFileSize) is read, here or by
// kustomize: each is listed in Outcome.Skipped, a target it might define
// is not found with an error that names it, and a kustomization that
// includes it is not built, so its edits are not made.
//
// The returned error is for problems that stop the whole render: root or path
// unreadable, path escaping root, ctx done, or a file that cannot be written
// (a full disk), after which the tree holds only some of the edits and must
// be discarded. Per-change problems are
// reported in Result.Err and do not stop the other changes. Nothing is
// written before every change has been worked out.
func Apply(ctx context.Context, root, path string, changes []Change, opts ...Option) (*Outcome, error) {
	s, err := Prepare(ctx, root, path, changes, opts...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.apply(ctx, changes)
}

// apply is Apply of changes on the session's index; the files it opened
// are kept for Restore.
func (s *Session) apply(ctx context.Context, changes []Change) (*Outcome, error) {
	o := &s.o
	out := &Outcome{Results: make([]Result, len(changes)), Skipped: s.idx.Skipped}
	asked := changes
	changes, _ = wantsOf(changes, o.paths, s.dir, out.Results)
	a := &applier{Workspace: edits.NewWorkspace(s.root.FS(), s.idx, o.maxFileSize, s.abs), keys: s.keys, charts: o.engine}
	defer s.keep(a)
	a.src = &helmsource.Sources{
		Index: s.idx, FS: s.root.FS(), Limit: o.maxFileSize, Charts: o.charts, RepoURL: o.repoURL, ClusterName: o.cluster,
		LocalCharts: s.local, Fetched: s.fetched, Edits: a.Workspace,
	}
	dir, r := s.dir, s.root
	refs, finds, pending, err := resolveAll(ctx, a, changes, dir, out.Results)
	if err != nil {
		return nil, err
	}
	explainUnsupported(changes, refs, s.unsupported, out.Results)
	pl := placement{
		proofs:  map[string][]int{},
		touched: make([][]string, len(changes)),
		exps:    make([]proof.Expectation, len(changes)),
	}
	hp := &helmPhase{a: a, dir: dir, mode: o.mode, proofs: pl.proofs, exps: pl.exps, touched: pl.touched}
	held, settled := hp.apply(ctx, changes, pending, out.Results)
	if err := a.placeAll(ctx, changes, refs, finds, slices.Concat(pending, settled), o.mode, dir, &pl, out.Results); err != nil {
		return nil, err
	}
	a.oneSource(changes, refs, finds, out.Results, pl.touched)
	o.hook(stepPlaced, a, pl.touched, r)
	if err := a.prove(ctx, pl.proofs, pl.exps, pl.touched, out.Results); err != nil {
		return nil, err
	}
	if err := hp.proveHelm(ctx, held, changes, pending, out.Results); err != nil {
		return nil, err
	}
	if err := a.proveDeployers(ctx, out.Results); err != nil {
		return nil, err
	}
	o.hook(stepProved, a, pl.touched, r)
	if out.Files, err = a.Write(r); err != nil {
		return nil, err
	}
	o.hook(stepWritten, a, pl.touched, r)
	// The releases are rendered once more from what was written: the
	// edits in memory are the files on disk, which finalProof checks.
	if err := hp.proveHelm(ctx, held, changes, pending, out.Results); err != nil {
		return nil, err
	}
	edited := editsOf(changes, pending, refs, finds)
	if out.Files, err = a.finalProof(r, pl, edited, out.Results, out.Files); err != nil {
		return nil, err
	}
	if again := sharedOnly(out.Results); len(again) > 0 && !o.again {
		s.keep(a)
		if err := s.applyAgain(ctx, asked, again, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// placeAll places each change that is not yet failed nor done (skip) in
// the index: in place, as a patch or in its deployer, and records what it
// touched and which kustomization, or deployer, proves it.
func (a *applier) placeAll(ctx context.Context, changes []Change, refs []repoindex.DocRef, finds []repoindex.Finder, skip []int, mode Mode, dir string, pl *placement, results []Result) error {
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := &results[i]
		if res.Err != nil || slices.Contains(skip, i) {
			continue
		}
		m := cmp.Or(c.Mode, mode)
		var files []string
		pl.exps[i], files = a.place(c, refs[i], finds[i], m, dir, res)
		if res.Err == nil {
			// Kept for every change: a proof that undoes a file undoes
			// the changes of whoever else wrote it.
			pl.touched[i] = files
		}
		if d := pl.exps[i].Deployer; d != nil {
			a.deployerProofs = append(a.deployerProofs, deployerProof{d: d, index: i, exp: pl.exps[i], files: files})
			continue
		}
		if res.Err == nil && refs[i].Chain != nil {
			k := refs[i].Chain.Root()
			pl.proofs[k.Dir] = append(pl.proofs[k.Dir], i)
		}
	}
	return nil
}

// editsOf is where each change but the pending ones was edited, for the
// final proof.
func editsOf(changes []Change, pending []int, refs []repoindex.DocRef, finds []repoindex.Finder) []edit {
	edited := make([]edit, len(changes))
	for i := range changes {
		if !slices.Contains(pending, i) {
			edited[i] = edit{ref: refs[i], find: finds[i]}
			if edited[i].find == nil {
				edited[i].find = edits.ContainerFinder(changes[i].Container)
			}
		}
	}
	return edited
}

// applyAgain makes the changes again (asked's, at again) on the written
// tree, without the changes that failed, so that each stands or falls on
// its own, and puts their results in out. The tree is no longer the base:
// it is indexed again.
func (s *Session) applyAgain(ctx context.Context, asked []Change, again []int, out *Outcome) error {
	sub := make([]Change, len(again))
	for j, i := range again {
		sub[j] = asked[i]
	}
	inner, err := Prepare(ctx, s.rootPath, s.path, sub, append(slices.Clone(s.opts), func(o *options) { o.again = true })...)
	if err != nil {
		return err
	}
	defer inner.Close()
	more, err := inner.apply(ctx, sub)
	// The files the first pass did not open were as the base has them
	// when the second pass opened them.
	for name, f := range inner.written {
		if _, ok := s.written[name]; !ok {
			s.written[name] = f
		}
	}
	if err != nil {
		return err
	}
	for j, i := range again {
		out.Results[i] = more.Results[j]
	}
	out.Files = slices.Compact(slices.Sorted(slices.Values(append(out.Files, more.Files...))))
	return nil
}

// hook calls the step hook of withStepHook, when a test set one.
func (o *options) hook(step string, a *applier, touched [][]string, r *os.Root) {
	if o.stepHook != nil {
		o.stepHook(step, a, touched, r)
	}
}

// placement is what placing the changes leaves for proving them: per
// kustomization directory the changes it renders, and per change what
// its build must show and the files its edit touched.
type placement struct {
	proofs  map[string][]int
	touched [][]string
	exps    []proof.Expectation
}

// wantsOf fills in the changes' paths from the run's mapping (results keep
// the changes as given), records in results the changes that are not
// valid, and returns the changes with what the index must hold for them.
func wantsOf(changes []Change, paths map[string]string, dir string, results []Result) ([]Change, repoindex.Wants) {
	w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{}, Dir: dir}
	names := map[string]bool{}
	changes = slices.Clone(changes)
	for i, c := range changes {
		results[i].Change = c
		if c.Path == "" {
			changes[i].Path = paths[c.Target.Namespace]
			c = changes[i]
		}
		if err := c.validate(); err != nil {
			results[i].Err = err
			continue
		}
		w.Objects[repoindex.KeyOf(c.Target)] = true
		if c.Path != "" {
			w.Paths = append(w.Paths, c.Path)
		}
		names[c.Target.Name] = true
		// The objects that narrow the search must be indexed too.
		if id := c.Target.Annotations[repoindex.ArgoTrackingID]; id != "" {
			app, _, _ := strings.Cut(id, ":")
			names[app] = true
			if _, short, ok := strings.Cut(app, "_"); ok {
				names[short] = true
			}
		}
		names[c.Target.Labels[repoindex.InstanceLabel]] = true
		names[c.Target.Labels[repoindex.FluxNameLabel]] = true
		w.Pointers = w.Pointers || c.Target.Annotations[repoindex.ArgoTrackingID] != "" ||
			c.Target.Labels[repoindex.InstanceLabel] != "" || c.Target.Labels[repoindex.FluxNameLabel] != ""
		w.Helm = w.Helm || repoindex.MayBeHelm(c.Target)
		if as := c.Autoscaler; as != nil {
			w.Objects[repoindex.KeyOf(as.Target)] = true
			names[as.Target.Name] = true
			names[as.Target.Labels[repoindex.InstanceLabel]] = true
			names[as.Target.Labels[repoindex.FluxNameLabel]] = true
		}
	}
	// Whoever deploys a target's source, from wherever in the repository,
	// decides who else an edit of it reaches.
	w.Deployers = true
	w.Paths = slices.AppendSeq(w.Paths, maps.Values(paths))
	delete(names, "")
	if len(names) <= repoindex.MaxPrefilterNames {
		w.Names = [][]byte{}
		for n := range names {
			w.Names = append(w.Names, []byte(n))
		}
	}
	return changes, w
}

// resolveAll finds the source of every valid change's target before any
// is edited: the kustomization that renders one is an environment, whose
// output another change must not alter. It returns, with the sources,
// the changes no manifest defines but a Helm release may render. Where
// several documents could define a target, the one whose build has the
// live pod template is chosen (proof.Repo.Choose; for a marker in a
// HelmRelease, chooseMarked), or none.
func resolveAll(ctx context.Context, a *applier, changes []Change, dir string, results []Result) ([]repoindex.DocRef, []repoindex.Finder, []int, error) {
	repo := a.repo()
	idx := repo.Index
	refs := make([]repoindex.DocRef, len(changes))
	finds := make([]repoindex.Finder, len(changes))
	var pending []int
	// The containers of one target share its choice: built once.
	type choice struct {
		ref    repoindex.DocRef
		chosen string
		err    error
	}
	choices := map[string]choice{}
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		res := &results[i]
		if res.Err != nil {
			continue
		}
		refs[i], finds[i], res.Err = idx.Resolve(c.sought(), dir)
		var amb *repoindex.AmbiguousError
		if errors.As(res.Err, &amb) && c.Target.PodPrint != "" {
			key := c.Target.String() + "\x00" + c.Path + "\x00" + string(c.Target.PodPrint)
			ch, ok := choices[key]
			switch {
			case ok:
			case finds[i] != nil && helmReleases(amb):
				// A marker in a HelmRelease several environments render.
				ch.ref, ch.chosen, ch.err = a.chooseMarked(ctx, amb, c.Target)
			default:
				ch.ref, ch.chosen, ch.err = repo.Choose(amb, c.Target)
			}
			choices[key] = ch
			refs[i], res.Chosen, res.Err = ch.ref, ch.chosen, ch.err
		}
		if res.Err == nil && refs[i].Chain != nil {
			idx.Declared[refs[i].Chain.Root().Dir] = true
		}
		if errors.Is(res.Err, repoindex.ErrTargetNotFound) && repoindex.MayBeHelm(c.Target) {
			// No manifest defines it: a chart may render it.
			pending = append(pending, i)
		}
	}
	return refs, finds, pending, nil
}

// holdAutoscaled holds the autoscaled resources of a change a chart may
// render, whose HorizontalPodAutoscaler's targets could not be set
// through the chart's values, for why; the rest goes through the release
// as usual. It reports that nothing is left to set.
func holdAutoscaled(c *Change, res *Result, why string) (settled bool) {
	hpa := c.Autoscaler.Target.Name
	*c, res.Held, settled = withoutAutoscaled(*c)
	res.HeldReason = fmt.Sprintf("no manifest defines the target, so a Helm chart may render it, and its HorizontalPodAutoscaler %s "+
		"would have to be adjusted through the chart's values: %s", hpa, why)
	if settled {
		res.Err = nil
	}
	return settled
}

// place edits the source of change c in place or with a patch, then its
// autoscaler's, and records in res how it went. It returns what the
// kustomization's build must show for c and the files the edit touched.
func (a *applier) place(c Change, ref repoindex.DocRef, find repoindex.Finder, mode Mode, dir string, res *Result) (proof.Expectation, []string) {
	ref.Shared = a.Index.SharedFor(ref)
	exp := proof.Expectation{Want: c.resources()}
	value := repoindex.MarkerValue(c.Target.Namespace, c.Target.Name, c.Container)
	var keys []string
	var direct bool
	if find != nil && ref.Chain == nil {
		// A marker in a patch of an object (a HelmRelease's values in an
		// overlay): no build proves it alone, but a build that proves a
		// sibling's edit of the same file expects it there.
		if doc, err := a.Doc(ref.File, ref.Doc); err == nil {
			if object, keys, direct, err := repoindex.MarkedObject(doc, patchedObject(doc, ref), value); err == nil {
				exp.Object, exp.Path = object, keys
				if !direct {
					exp.Path = append(slices.Clone(keys), "resources")
				}
			}
		}
	}
	if find != nil && ref.Chain != nil {
		// What a kustomization renders from a marked file is proven
		// too, at the marked path of the marked object.
		var err error
		var doc *yaml.Node
		if doc, err = a.Doc(ref.File, ref.Doc); err == nil {
			exp.Object, keys, direct, err = repoindex.MarkedObject(doc, ref, value)
		}
		if err != nil {
			res.File, res.Err = ref.File, err
			return exp, nil
		}
		exp.Path = keys
		if !direct {
			exp.Path = append(slices.Clone(keys), "resources")
		}
	}
	if c.Autoscaler != nil {
		a.Begin()
	}
	var placed edits.Placed
	if handled, d, files := a.ViaDeployer(c.resources(), ref, find, &placed); handled {
		res.File, res.Changed, res.Err = placed.File, placed.Changed, placed.Err
		if c.Autoscaler != nil && res.Err == nil {
			// Its targets would have to move in the same deployer's patch.
			a.Undo()
			res.Changed = false
			res.Err = fmt.Errorf("%w: %s: the target's HorizontalPodAutoscaler %s would have to be adjusted through %s too, which hpa-mode adjust does not do",
				repoindex.ErrSharedSource, res.File, c.Autoscaler.Target.Name, d)
		}
		a.End()
		if res.Err != nil {
			return exp, nil
		}
		if fe := a.Files[res.File]; res.Changed && fe != nil {
			res.Method = methodOf(fe)
		}
		exp.Deployer = d
		return exp, files
	}
	files := a.edit(c, ref, find, mode, marked{value, keys, direct}, res)
	if fe := a.Files[res.File]; res.Changed && res.Err == nil && fe != nil {
		res.Method = methodOf(fe)
	}
	if res.Err == nil && c.Autoscaler != nil {
		ar, more, also, err := a.autoscale(c, ref, dir, mode == ModePatch || res.File != ref.File)
		if err != nil {
			// The requests must not land without the HPA's targets.
			a.Undo()
			res.Changed, res.Method = false, ""
			res.Err = fmt.Errorf("%s: the target's HorizontalPodAutoscaler %s: %w", res.File, c.Autoscaler.Target.Name, err)
			return exp, files
		}
		res.Autoscaler = &ar
		files = append(files, more...)
		if also != nil {
			exp.Also = append(exp.Also, *also)
		}
	}
	a.End()
	return exp, files
}

// patchedObject is ref with the identity of the object its document
// names, as a patch names the object it patches.
func patchedObject(doc *yaml.Node, ref repoindex.DocRef) repoindex.DocRef {
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
	}
	if doc.Decode(&head) != nil {
		return ref
	}
	ref.Key = repoindex.IdentKey{Group: repoindex.Group(head.APIVersion), Kind: head.Kind, Name: head.Metadata.Name}
	ref.Namespace = head.Metadata.Namespace
	return ref
}

// marked is where a marker puts a change: its value, the keys of the
// marked mapping and whether it is the resources mapping itself.
type marked struct {
	value  string
	keys   []string
	direct bool
}

// edit makes change c's edit where it belongs: in the file that defines
// its target, or in a patch of the environment that renders it. It sets
// res's file, whether it changed and why not, and returns the files it
// touched.
func (a *applier) edit(c Change, ref repoindex.DocRef, find repoindex.Finder, mode Mode, m marked, res *Result) []string {
	var files []string
	switch {
	case find != nil && ref.Chain != nil && (mode == ModePatch || ref.Shared != ""):
		// A marker in a file other environments render: a patch of
		// the marked object in the target's.
		res.File, res.Changed, files, res.Err = a.MarkerPatch(c.resources(), ref, m.value, m.keys, m.direct)
	case find != nil || ref.Chain == nil && mode != ModePatch:
		// Markers and plain manifests: in place.
		res.File = ref.File
		res.Changed, res.Err = a.InPlace(c.resources(), ref, find)
		files = []string{ref.File}
	case ref.Chain == nil:
		res.File = ref.File
		res.Err = fmt.Errorf("%w: %s: patch mode, but no kustomization renders %s", ErrNoOverlay, c.Target, ref.File)
	case mode == ModePatch || ref.Shared != "" || a.Overridden(c.resources(), ref):
		res.File, res.Changed, files, res.Err = a.Patch(c.resources(), ref)
	default:
		res.File = ref.File
		res.Changed, res.Err = a.InPlace(c.resources(), ref, nil)
		files = []string{ref.File}
		switch {
		case res.Err == nil || !errors.Is(res.Err, ErrUnsafeFile):
		case mode == ModeAuto:
			// What cannot be edited in place is patched through the
			// kustomization that renders it, as patch mode would, and
			// proved the same way.
			pf, changed, pfiles, err := a.Patch(c.resources(), ref)
			if err != nil {
				res.Err = fmt.Errorf("%w; nor could it be patched in %s: %w", res.Err, ref.Chain.Root().File, err)
				return files
			}
			res.File, res.Changed, files, res.Err = pf, changed, pfiles, nil
		default:
			res.Err = fmt.Errorf("%w; a patch in %s would leave it as it is (render-mode patch, or the annotation %s: patch)", res.Err, ref.Chain.Root().File, AnnotationMode)
		}
	}
	return files
}

// applier is one Apply: the files it edits, the Helm releases it reads,
// and the proofs it owes.
type applier struct {
	*edits.Workspace
	// src reads the Helm releases' objects, charts and values.
	src *helmsource.Sources
	// deployerProofs are the changes written into their deployers'
	// documents, proved as those deployers build.
	deployerProofs []deployerProof

	// keys finds the values keys that size a container.
	keys *helm.Finder
	// charts renders the Helm releases: where, with which capabilities,
	// within how long.
	charts helm.Engine
}

// localDir turns the caller's path into a clean, slash-separated path that
// stays inside the root, as fs.FS wants it.
func localDir(path string) (string, error) {
	if path == "" {
		return ".", nil
	}
	if !filepath.IsLocal(path) {
		return "", fmt.Errorf("path %q escapes the repository root", path)
	}
	return filepath.ToSlash(filepath.Clean(path)), nil
}

func (c Change) validate() error {
	t := c.Target
	if t.APIVersion == "" || t.Kind == "" || t.Name == "" {
		return fmt.Errorf("%w: target %q needs apiVersion, kind and name", ErrInvalidChange, t)
	}
	if c.Container == "" {
		return fmt.Errorf("%w: %s: no container named", ErrInvalidChange, t)
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidChange, t, err)
	}
	if c.Path != "" && !filepath.IsLocal(filepath.FromSlash(c.Path)) {
		return fmt.Errorf("%w: %s: path %q is not inside the repository", ErrInvalidChange, t, c.Path)
	}
	for _, section := range []struct {
		name   string
		values Values
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		if !section.values.ordered() {
			return fmt.Errorf("%w: %s: %s name a resource twice or out of order (make them with ValuesOf or Set)", ErrInvalidChange, t, section.name)
		}
		for name, q := range section.values.All() {
			if errs := validation.IsQualifiedName(string(name)); len(errs) > 0 {
				return fmt.Errorf("%w: %s: resource name %q: %s", ErrInvalidChange, t, name, errs[0])
			}
			if q.Sign() < 0 {
				return fmt.Errorf("%w: %s: %s.%s %s is negative", ErrInvalidChange, t, section.name, name, q.String())
			}
		}
	}
	return nil
}

// resources are what c sets, as its edits take it.
func (c Change) resources() edits.Resources {
	return edits.Resources{Target: c.Target, Container: c.Container, Path: c.Path, Requests: c.Requests.List(), Limits: c.Limits.List()}
}

// sought is what resolving c's target looks for.
func (c Change) sought() repoindex.Sought {
	return repoindex.Sought{Target: c.Target, Container: c.Container, Path: c.Path}
}

// repo is the repository as the proofs build it.
func (a *applier) repo() proof.Repo {
	return proof.Repo{Index: a.Index, Abs: a.Abs, Limit: a.Limit}
}
