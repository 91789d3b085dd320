package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/yamledit"
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
	Target    Target
	Container string
	// Requests are the requests to set; only these resources are set.
	Requests corev1.ResourceList
	// Limits is the same for limits; nil or empty leaves limits alone.
	Limits corev1.ResourceList
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
	Skipped []Skip
}

// Apply finds, under root/path, the source of each change's target and sets
// the values, in place or with a patch in the overlay (see Mode). It writes
// only files whose bytes changed, and returns per-change results plus the
// list of written files.
//
// Every kustomization touched is built before and after the edits; when the
// targets do not render with the new values, or anything else in the output
// changes, the edits of that kustomization are undone and their results
// wrap ErrProofFailed.
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
	o := options{mode: ModeAuto, maxFileSize: DefaultMaxFileSize}
	for _, opt := range opts {
		opt(&o)
	}
	if _, err := ParseMode(string(o.mode)); err != nil {
		return nil, err
	}
	dir, err := localDir(path)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open repository root: %w", err)
	}
	defer r.Close()
	// os.Root refuses symlinks that lead out of root, here and below.
	if _, err := r.Stat(filepath.FromSlash(dir)); err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}

	out := &Outcome{Results: make([]Result, len(changes))}
	changes, w := wantsOf(changes, o.paths, dir, out.Results)
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve repository root: %w", err)
	}

	idx, err := buildIndex(ctx, r.FS(), dir, w, o.maxFileSize)
	if err != nil {
		return nil, err
	}
	out.Skipped = idx.skipped
	a := &applier{
		fsys: r.FS(), idx: idx, files: map[string]*fileEdit{}, limit: o.maxFileSize, abs: abs,
		charts: o.charts, keys: o.keys, repoURL: o.repoURL,
		localCharts: map[string]*helm.Chart{}, builds: map[string]map[string]map[string]any{},
		fetched: map[helm.ChartRef]fetchedChart{},
	}
	if a.keys == nil {
		a.keys = helm.NewFinder()
	}
	refs, finds, pending, err := resolveAll(ctx, idx, changes, dir, out.Results)
	if err != nil {
		return nil, err
	}
	pending, settled := holdChartAutoscaled(changes, pending, out.Results)
	pl := placement{
		proofs:  map[string][]int{},
		touched: make([][]string, len(changes)),
		exps:    make([]expectation, len(changes)),
	}
	hp := &helmPhase{a: a, dir: dir, mode: o.mode, proofs: pl.proofs, exps: pl.exps, touched: pl.touched}
	held := hp.apply(ctx, changes, pending, out.Results)
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res := &out.Results[i]
		if res.Err != nil || slices.Contains(pending, i) || slices.Contains(settled, i) {
			continue
		}
		mode := c.Mode
		if mode == "" {
			mode = o.mode
		}
		var files []string
		pl.exps[i], files = a.place(c, refs[i], finds[i], mode, dir, res)
		if res.Err == nil && refs[i].chain != nil {
			k := refs[i].chain.root()
			pl.proofs[k.dir] = append(pl.proofs[k.dir], i)
			pl.touched[i] = files
		}
	}

	if err := a.prove(ctx, root, pl.proofs, pl.exps, pl.touched, out.Results); err != nil {
		return nil, err
	}
	if err := hp.proveHelm(ctx, held, changes, out.Results); err != nil {
		return nil, err
	}
	if out.Files, err = a.write(r); err != nil {
		return nil, err
	}
	return out, nil
}

// placement is what placing the changes leaves for proving them: per
// kustomization directory the changes it renders, and per change what
// its build must show and the files its edit touched.
type placement struct {
	proofs  map[string][]int
	touched [][]string
	exps    []expectation
}

// wantsOf fills in the changes' paths from the run's mapping (results keep
// the changes as given), records in results the changes that are not
// valid, and returns the changes with what the index must hold for them.
func wantsOf(changes []Change, paths map[string]string, dir string, results []Result) ([]Change, wants) {
	w := wants{objects: map[identKey]bool{}, dir: dir}
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
		w.objects[keyOf(c.Target)] = true
		if c.Path != "" {
			w.paths = append(w.paths, c.Path)
		}
		names[c.Target.Name] = true
		// The objects that narrow the search must be indexed too.
		if id := c.Target.Annotations[ArgoTrackingID]; id != "" {
			app, _, _ := strings.Cut(id, ":")
			names[app] = true
			if _, short, ok := strings.Cut(app, "_"); ok {
				names[short] = true
			}
		}
		names[c.Target.Labels[InstanceLabel]] = true
		names[c.Target.Labels[FluxNameLabel]] = true
		w.pointers = w.pointers || c.Target.Annotations[ArgoTrackingID] != "" ||
			c.Target.Labels[InstanceLabel] != "" || c.Target.Labels[FluxNameLabel] != ""
		w.helm = w.helm || mayBeHelm(c.Target)
		if as := c.Autoscaler; as != nil {
			w.objects[keyOf(as.Target)] = true
			names[as.Target.Name] = true
			names[as.Target.Labels[InstanceLabel]] = true
			names[as.Target.Labels[FluxNameLabel]] = true
		}
	}
	w.paths = slices.AppendSeq(w.paths, maps.Values(paths))
	delete(names, "")
	if len(names) <= maxPrefilterNames {
		w.names = [][]byte{}
		for n := range names {
			w.names = append(w.names, []byte(n))
		}
	}
	return changes, w
}

// resolveAll finds the source of every valid change's target before any
// is edited: the kustomization that renders one is an environment, whose
// output another change must not alter. It returns, with the sources,
// the changes no manifest defines but a Helm release may render.
func resolveAll(ctx context.Context, idx *index, changes []Change, dir string, results []Result) ([]docRef, []finder, []int, error) {
	refs := make([]docRef, len(changes))
	finds := make([]finder, len(changes))
	var pending []int
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		res := &results[i]
		if res.Err != nil {
			continue
		}
		refs[i], finds[i], res.Err = idx.resolve(c.sought(), dir)
		if res.Err == nil && refs[i].chain != nil {
			idx.declared[refs[i].chain.root().dir] = true
		}
		if errors.Is(res.Err, ErrTargetNotFound) && mayBeHelm(c.Target) {
			// No manifest defines it: a chart may render it.
			pending = append(pending, i)
		}
	}
	return refs, finds, pending, nil
}

// holdChartAutoscaled holds the autoscaled resources of the pending
// changes: an HPA a chart renders is not adjusted, so the resources it
// scales on stay, and the rest goes through the release as usual. It
// returns the changes still pending and those with nothing left to set.
func holdChartAutoscaled(changes []Change, pending []int, results []Result) (left, settled []int) {
	left = slices.DeleteFunc(pending, func(i int) bool {
		if changes[i].Autoscaler == nil {
			return false
		}
		hpa := changes[i].Autoscaler.Target.Name
		var nothingLeft bool
		changes[i], results[i].Held, nothingLeft = withoutAutoscaled(changes[i])
		results[i].HeldReason = fmt.Sprintf("no manifest defines the target, so a Helm chart may render it, and its HorizontalPodAutoscaler %s "+
			"would have to be adjusted through the chart's values, which hpa-mode adjust does not do", hpa)
		if nothingLeft {
			results[i].Err = nil
			settled = append(settled, i)
			return true
		}
		return false
	})
	return left, settled
}

// place edits the source of change c in place or with a patch, then its
// autoscaler's, and records in res how it went. It returns what the
// kustomization's build must show for c and the files the edit touched.
func (a *applier) place(c Change, ref docRef, find finder, mode Mode, dir string, res *Result) (expectation, []string) {
	ref.shared = a.idx.sharedFor(ref)
	exp := expectation{change: c}
	value := markerValue(c.Target.Namespace, c.Target.Name, c.Container)
	var keys []string
	var direct bool
	if find != nil && ref.chain != nil {
		// What a kustomization renders from a marked file is proven
		// too, at the marked path of the marked object.
		var err error
		var doc *yaml.Node
		if doc, err = a.doc(ref.file, ref.doc); err == nil {
			exp.object, keys, direct, err = markedObject(doc, ref, value)
		}
		if err != nil {
			res.File, res.Err = ref.file, err
			return exp, nil
		}
		exp.path = keys
		if !direct {
			exp.path = append(slices.Clone(keys), "resources")
		}
	}
	if c.Autoscaler != nil {
		a.journal = journal{}
	}
	files := a.edit(c, ref, find, mode, marked{value, keys, direct}, res)
	if fe := a.files[res.File]; res.Changed && res.Err == nil && fe != nil {
		res.Method = fe.method
		if fe.created {
			res.Method = MethodNewFile
		}
	}
	if res.Err == nil && c.Autoscaler != nil {
		ar, more, also, err := a.autoscale(c, ref, dir, mode == ModePatch || res.File != ref.file)
		if err != nil {
			// The requests must not land without the HPA's targets.
			a.undo()
			res.Changed, res.Method = false, ""
			res.Err = fmt.Errorf("%s: the target's HorizontalPodAutoscaler %s: %w", res.File, c.Autoscaler.Target.Name, err)
			return exp, files
		}
		res.Autoscaler = &ar
		files = append(files, more...)
		if also != nil {
			exp.also = append(exp.also, *also)
		}
	}
	a.journal = nil
	return exp, files
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
func (a *applier) edit(c Change, ref docRef, find finder, mode Mode, m marked, res *Result) []string {
	var files []string
	switch {
	case find != nil && ref.chain != nil && (mode == ModePatch || ref.shared != ""):
		// A marker in a file other environments render: a patch of
		// the marked object in the target's.
		res.File, res.Changed, files, res.Err = a.markerPatch(c, ref, m.value, m.keys, m.direct)
	case find != nil || ref.chain == nil && mode != ModePatch:
		// Markers and plain manifests: in place.
		res.File = ref.file
		res.Changed, res.Err = a.inPlace(c, ref, find)
		files = []string{ref.file}
	case ref.chain == nil:
		res.File = ref.file
		res.Err = fmt.Errorf("%w: %s: patch mode, but no kustomization renders %s", ErrNoOverlay, c.Target, ref.file)
	case mode == ModePatch || ref.shared != "" || a.overridden(c, ref):
		res.File, res.Changed, files, res.Err = a.patch(c, ref)
	default:
		res.File = ref.file
		res.Changed, res.Err = a.inPlace(c, ref, nil)
		files = []string{ref.file}
	}
	return files
}

// write writes the files whose bytes changed and returns their names,
// sorted. Writes are not interrupted by a context so that the tree is
// never left with only some of the edits that were reported. New patch
// files go first, so that a kustomization never lists one that failed to
// be written.
func (a *applier) write(r *os.Root) ([]string, error) {
	order := slices.Sorted(maps.Keys(a.files))
	slices.SortStableFunc(order, func(x, y string) int {
		return cmpBool(a.files[y].created, a.files[x].created)
	})
	var written []string
	for _, name := range order {
		fe := a.files[name]
		if !fe.dirty() {
			continue
		}
		if err := yamledit.WriteFile(r, fe.name, fe.data, fe.mode); err != nil {
			// A full disk or a read-only tree is the run's problem, not a
			// change's: the edits already written must not be committed
			// as if the others had never been asked for.
			return nil, fmt.Errorf("writing the edited files: %w", err)
		}
		written = append(written, fe.name)
	}
	slices.Sort(written)
	return written, nil
}

// cmpBool orders false before true.
func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// applier holds the files being edited during one Apply.
type applier struct {
	fsys  fs.FS
	idx   *index
	files map[string]*fileEdit
	limit int64 // files above it are not read; <= 0: no limit
	// recent are the files whose parsed documents are kept, the most
	// recently used last.
	recent []*fileEdit
	// journal, when not nil, records the files an edit touches so that
	// it can be undone (undo).
	journal journal
	// abs is the repository root as an absolute path without symlinks.
	abs string

	// Helm: where remote charts come from, the key finder, the URL of this
	// repository, and what was loaded or built once in this run.
	charts      ChartFetcher
	keys        *helm.Finder
	repoURL     string
	localCharts map[string]*helm.Chart
	builds      map[string]map[string]map[string]any
	// fetched are the remote charts fetchCharts fetched, or failed to;
	// wanted, while it surveys the releases, the charts they need.
	fetched map[helm.ChartRef]fetchedChart
	wanted  map[helm.ChartRef]bool
	// releaseNames are the HelmReleases by the release they install.
	releaseNames map[string][]namedRelease
}

// parsedFiles bounds the files whose parsed documents are kept between
// uses: a run edits thousands of files, and their trees, not their bytes,
// would fill its memory. A file used again after it was dropped is parsed
// again.
const parsedFiles = 16

// file returns the edit of an existing file (see open), and counts it
// among the recent files, whose parsed documents are kept.
func (a *applier) file(name string) (*fileEdit, error) {
	fe, err := a.open(name)
	if err != nil {
		return nil, err
	}
	a.record(name, fe)
	if i := slices.Index(a.recent, fe); i >= 0 {
		a.recent = slices.Delete(a.recent, i, i+1)
	} else if len(a.recent) == parsedFiles {
		a.recent[0].docs = nil
		a.recent = slices.Delete(a.recent, 0, 1)
	}
	a.recent = append(a.recent, fe)
	return fe, nil
}

// doc returns document i of file as it reads now, with the run's edits.
func (a *applier) doc(file string, i int) (*yaml.Node, error) {
	fe, err := a.file(file)
	if err != nil {
		return nil, err
	}
	docs, err := fe.currentDocs()
	if err != nil {
		return nil, err
	}
	if i >= len(docs) {
		return nil, fmt.Errorf("%s: document %d is gone", file, i+1)
	}
	return docs[i], nil
}

// open returns the edit of an existing file, creating it on first use.
func (a *applier) open(name string) (*fileEdit, error) {
	if fe, ok := a.files[name]; ok {
		return fe, nil
	}
	f := a.idx.files[name]
	if f == nil {
		data, info, err := readLimited(a.fsys, name, a.limit)
		if err != nil {
			return nil, err
		}
		docs, err := yamledit.ParseDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnsafeFile, name, err)
		}
		f = &indexedFile{name: name, data: data, mode: info.Mode().Perm(), unsafe: yamledit.UnsafeFile(data, docs)}
	}
	fe := newFileEdit(f)
	a.files[name] = fe
	return fe, nil
}

// inPlace edits the document that defines the target.
func (a *applier) inPlace(c Change, ref docRef, find finder) (bool, error) {
	fe, err := a.file(ref.file)
	if err != nil {
		return false, err
	}
	if errors.Is(fe.unsafe, yamledit.ErrTemplate) {
		return false, fmt.Errorf("%s: %w: the chart renders the target from values; %s", ref.file, fe.unsafe, markerHint(c.sought()))
	}
	if fe.unsafe != nil {
		return false, fmt.Errorf("%s: %w", ref.file, fe.unsafe)
	}
	return fe.apply(c, ref.doc, find)
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
		values corev1.ResourceList
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for name, q := range section.values {
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

// sought is what resolving c's target looks for.
func (c Change) sought() Sought {
	return Sought{Target: c.Target, Container: c.Container, Path: c.Path}
}
