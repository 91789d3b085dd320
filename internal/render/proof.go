package render

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// prove builds every kustomization that renders an edited target, before
// and after the edits, and undoes the edits of those whose output is not
// exactly the old output with the new values on the targets. It also
// builds every environment that reads an edited file without including
// that kustomization: its output must not change at all. Edits that share
// a file stand or fall together.
func (a *applier) prove(ctx context.Context, root string, proofs map[string][]int, changes []expectation, touched [][]string, results []Result) error {
	if len(proofs) == 0 {
		return nil
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("resolve repository root: %w", err)
	}
	onDisk := func(name string) string { return filepath.Join(abs, filepath.FromSlash(name)) }
	after := map[string][]byte{}
	for name, fe := range a.files {
		if fe.dirty() {
			after[onDisk(name)] = fe.data
		}
	}
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: abs, Limit: a.limit}
	dirs := slices.Sorted(maps.Keys(proofs))
	// files[dir] are the edited files of the changes dir renders.
	files := map[string][]string{}
	failed := map[string]error{}
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, i := range proofs[dir] {
			for _, f := range touched[i] {
				if a.files[f] != nil && a.files[f].dirty() && !slices.Contains(files[dir], f) {
					files[dir] = append(files[dir], f)
				}
			}
		}
		if len(files[dir]) == 0 {
			continue
		}
		var exps []expectation
		for _, i := range proofs[dir] {
			exps = append(exps, changes[i])
			exps = append(exps, changes[i].also...)
		}
		// Changes of other targets written in the same files are proved
		// with these: each is allowed its own values and nothing more.
		var siblings []expectation
		for _, i := range sharing(files[dir], touched, results) {
			if !slices.Contains(proofs[dir], i) && changes[i].change.Target.Name != "" {
				siblings = append(siblings, changes[i])
				siblings = append(siblings, changes[i].also...)
			}
		}
		err := a.checkExternal(dir)
		if err == nil {
			// The run's other edits are in both builds: only these are compared.
			fsys.Files = without(after, abs, files[dir])
			err = proveBuild(fsys, filepath.Join(abs, filepath.FromSlash(dir)), after, exps, siblings)
		}
		if err == nil {
			err = a.proveOthers(fsys, abs, dir, files[dir], after)
		}
		if err != nil {
			failed[dir] = fmt.Errorf("%w: %s, built with the edits of %s: %w", ErrProofFailed, a.idx.Graph.ByDir[dir].File, strings.Join(files[dir], ", "), err)
		}
	}
	// An edit that fails takes down every edit sharing a file with it.
	for changed := true; changed; {
		changed = false
		for _, dir := range dirs {
			if failed[dir] != nil {
				continue
			}
			for _, other := range dirs {
				if failed[other] != nil && slices.ContainsFunc(files[dir], func(f string) bool { return slices.Contains(files[other], f) }) {
					failed[dir] = fmt.Errorf("%w: %s: undone with the edits for %s, which share a file: %w",
						ErrProofFailed, a.idx.Graph.ByDir[dir].File, a.idx.Graph.ByDir[other].File, failed[other])
					changed = true
					break
				}
			}
		}
	}
	for _, dir := range dirs {
		err := failed[dir]
		if err == nil {
			continue
		}
		for _, f := range files[dir] {
			if fe := a.files[f]; fe != nil {
				fe.data, fe.docs = fe.orig, nil
			}
		}
		// Whoever else wrote an undone file is undone with it, whatever
		// proof it was in.
		for _, i := range append(slices.Clone(proofs[dir]), sharing(files[dir], touched, results)...) {
			if results[i].Err != nil {
				continue
			}
			results[i].Changed, results[i].Method, results[i].Autoscaler = false, "", nil
			results[i].Err = fmt.Errorf("%s: %w", results[i].File, err)
		}
	}
	return nil
}

// sharing returns the changes, applied without error, whose edits wrote
// one of files.
func sharing(files []string, touched [][]string, results []Result) []int {
	var out []int
	for i := range results {
		if results[i].Err != nil {
			continue
		}
		wrote := touched[i]
		if wrote == nil && results[i].Changed {
			wrote = []string{results[i].File}
		}
		if slices.ContainsFunc(wrote, func(f string) bool { return slices.Contains(files, f) }) {
			out = append(out, i)
		}
	}
	return out
}

// proveOthers builds every environment that reads one of the files edited
// for the kustomization in dir without including it, with and without
// those edits (the run's other edits in both), and fails unless its
// output is the same.
func (a *applier) proveOthers(fsys repoindex.ProofFS, abs, dir string, edited []string, after map[string][]byte) error {
	k := a.idx.Graph.ByDir[dir]
	var envs []*repoindex.Kustomization
	for _, f := range edited {
		for _, e := range a.idx.Readers(f) {
			if e != k && !e.Includes(k) && a.idx.IsEnv(e) && !slices.Contains(envs, e) {
				envs = append(envs, e)
			}
		}
	}
	slices.SortFunc(envs, func(x, y *repoindex.Kustomization) int { return strings.Compare(x.Dir, y.Dir) })
	before := without(after, abs, edited)
	for _, e := range envs {
		if err := a.checkExternal(e.Dir); err != nil {
			return fmt.Errorf("%s also reads %s and cannot be checked: %w", e.File, strings.Join(edited, ", "), err)
		}
		edir := filepath.Join(abs, filepath.FromSlash(e.Dir))
		fsys.Files = before
		was, err := fsys.Build(edir)
		if err != nil {
			return fmt.Errorf("%s also reads %s and does not build: %w", e.File, strings.Join(edited, ", "), err)
		}
		fsys.Files = after
		now, err := fsys.Build(edir)
		if err != nil {
			return fmt.Errorf("%s also reads %s and does not build after the edit: %w", e.File, strings.Join(edited, ", "), err)
		}
		if !reflect.DeepEqual(was, now) {
			return fmt.Errorf("the edit would change the output of %s, another environment", e.File)
		}
	}
	return nil
}

// without returns the edited files but names.
func without(edited map[string][]byte, abs string, names []string) map[string][]byte {
	out := maps.Clone(edited)
	for _, f := range names {
		delete(out, filepath.Join(abs, filepath.FromSlash(f)))
	}
	return out
}

// checkExternal refuses to build a kustomization tree that fetches remote
// resources or reads outside the repository: a proof must not reach the
// network nor the rest of the machine. It also refuses, before kustomize
// would, a tree that lists a file above the size limit.
func (a *applier) checkExternal(dir string) error {
	seen := map[string]bool{}
	var walk func(d string) error
	walk = func(d string) error {
		k := a.idx.Graph.ByDir[d]
		if k == nil || seen[d] {
			return nil
		}
		seen[d] = true
		if len(k.External) > 0 {
			return fmt.Errorf("%s uses resources that are remote or outside the repository (%s); not built", k.File, strings.Join(k.External, ", "))
		}
		if k.TooLarge != nil {
			return k.TooLarge
		}
		for _, f := range append(slices.Clone(k.Resources), k.Patches...) {
			if s, ok := a.idx.Large[f]; ok {
				return fmt.Errorf("%s includes %s; not built: %w", k.File, f, s.Err)
			}
		}
		for _, r := range k.Resources {
			if err := walk(r); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(dir)
}

// proveBuild builds the kustomization in kdir from fsys as it is and with
// the edited files laid over it instead, and compares the outputs. Every
// change must show in the output; siblings, the changes of other targets
// written in the same files, may, and then with their own values only.
func proveBuild(fsys repoindex.ProofFS, kdir string, edited map[string][]byte, changes, siblings []expectation) error {
	before, err := fsys.Build(kdir)
	if err != nil {
		return fmt.Errorf("does not build before the edit: %w", err)
	}
	fsys.Files = edited
	after, err := fsys.Build(kdir)
	if err != nil {
		return fmt.Errorf("does not build after the edit: %w", err)
	}
	return compareBuilds(before, after, changes, siblings)
}

// compareBuilds fails unless after is before with the changes' values on
// their objects, and nothing else different.
func compareBuilds(before, after map[string]map[string]any, changes, siblings []expectation) error {
	matched := make([]bool, len(changes))
	for _, id := range slices.Sorted(maps.Keys(before)) {
		got, ok := after[id]
		if !ok {
			return fmt.Errorf("%s is no longer rendered", id)
		}
		want := before[id]
		var mine bool
		for i, c := range append(slices.Clone(changes), siblings...) {
			if !c.renders(id) {
				continue
			}
			if !mine {
				want = tree.DeepCopy(want).(map[string]any)
				mine = true
			}
			if i < len(changes) {
				matched[i] = true
			}
			if err := c.expect(want, got); err != nil {
				return fmt.Errorf("%s: %s: %w", id, c, err)
			}
		}
		if !reflect.DeepEqual(want, got) {
			if mine {
				var allowed []string
				for _, c := range append(slices.Clone(changes), siblings...) {
					if c.renders(id) {
						allowed = append(allowed, c.String())
					}
				}
				return fmt.Errorf("%s changes beyond the container's resources (the changes it may show: %s)", id, strings.Join(allowed, "; "))
			}
			return fmt.Errorf("%s changes too", id)
		}
	}
	for id := range after {
		if _, ok := before[id]; !ok {
			return fmt.Errorf("%s is rendered only after the edit", id)
		}
	}
	for i, ok := range matched {
		if !ok {
			return fmt.Errorf("%s is not in the output", changes[i])
		}
	}
	return nil
}

// expectation is what a proof expects of one change: that its target's
// container renders with the values, or, for a marker, that the marked
// object does at the marked path.
type expectation struct {
	change Change
	// object is the build id (group/kind/namespace/name) of the marked
	// object, and path the keys to its resources mapping; "" for the
	// target.
	object string
	path   []string
	// sets, when not empty, are the values the object must render at
	// those paths instead (Helm values of a HelmRelease or Application),
	// and free the paths whose values may change in any way (a
	// HelmRelease's post-renderers).
	sets []helmsource.Assignment
	free []helm.Path
	// also are other objects the change edits with its target: its
	// HorizontalPodAutoscaler.
	also []expectation
	// deployer, when set, is the deployer whose document holds the
	// change: it is proved by building as that deployer builds.
	deployer *repoindex.Deployer
}

func (e expectation) String() string {
	switch {
	case len(e.sets) > 0 || len(e.free) > 0:
		var at []string
		for _, a := range e.sets {
			at = append(at, a.Path.String())
		}
		for _, p := range e.free {
			at = append(at, p.String())
		}
		return e.object + " at " + strings.Join(at, ", ")
	case e.object != "":
		return e.object + " at " + strings.Join(e.path, ".")
	}
	return e.change.Target.String()
}

// renders reports whether the object id of a build output is the one the
// values land in.
func (e expectation) renders(id string) bool {
	if e.object != "" {
		return id == e.object
	}
	return e.change.renders(id)
}

// expect sets, in want, the change's values where got has them, and fails
// where got does not have them.
func (e expectation) expect(want, got map[string]any) error {
	if e.object == "" {
		return expect(want, got, e.change)
	}
	if len(e.sets) > 0 || len(e.free) > 0 {
		for _, p := range e.free {
			if !helmsource.SetPath(want, p, helmsource.DigPath(got, p)) {
				return fmt.Errorf("renders %s, which it did not have room for before", p)
			}
		}
		for _, a := range e.sets {
			have := helmsource.DigPath(got, a.Path)
			if !helmsource.SameQuantityValue(have, a.Quantity) {
				return fmt.Errorf("renders %s %v, want %s", a.Path, have, a.Quantity.String())
			}
			if !helmsource.SetPath(want, a.Path, have) {
				return fmt.Errorf("renders %s, which it did not have room for before", a.Path)
			}
		}
		return nil
	}
	res, _ := tree.Dig(got, e.path...).(map[string]any)
	if res == nil {
		return fmt.Errorf("no mapping at %s", strings.Join(e.path, "."))
	}
	w := want
	for _, k := range e.path {
		next, _ := w[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			w[k] = next
		}
		w = next
	}
	return expectResources(w, res, e.change, "the marked object", strings.Join(e.path, ".")+".")
}

// renders reports whether the object id of a build output is c's target.
func (c Change) renders(id string) bool {
	t := c.Target
	prefix := repoindex.Group(t.APIVersion) + "/" + t.Kind + "/"
	return id == prefix+t.Namespace+"/"+t.Name || id == prefix+"/"+t.Name
}

// expect sets, in want, the change's values where got has them equal as
// quantities, and fails where got does not have them.
func expect(want, got map[string]any, c Change) error {
	for _, p := range objectPodSpecPaths(got) {
		wp, ok1 := tree.Dig(want, p...).(map[string]any)
		gp, ok2 := tree.Dig(got, p...).(map[string]any)
		if !ok1 || !ok2 {
			continue
		}
		for _, field := range []string{"containers", "initContainers"} {
			wc, gc := tree.Item(wp[field], c.Container), tree.Item(gp[field], c.Container)
			if wc == nil || gc == nil {
				continue
			}
			gres, _ := gc["resources"].(map[string]any)
			wres, _ := wc["resources"].(map[string]any)
			if wres == nil {
				wres = map[string]any{}
				wc["resources"] = wres
			}
			return expectResources(wres, gres, c, fmt.Sprintf("container %q", c.Container), "resources.")
		}
	}
	return fmt.Errorf("container %q is not in the output", c.Container)
}

// objectPodSpecPaths returns where the pod spec of a built object may be,
// from its kind (package kinds).
func objectPodSpecPaths(obj map[string]any) [][]string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return kinds.PodSpecPaths(repoindex.Group(apiVersion), kind)
}

// expectResources sets, in the resources mapping want, the change's values
// as the resources mapping got has them, and fails where got does not
// have them; who and at (the path to the mapping, with a final dot) name
// them in errors.
func expectResources(want, got map[string]any, c Change, who, at string) error {
	for _, s := range []struct {
		name   string
		values Values
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for name, v := range s.values.All() {
			k := string(name)
			have := tree.Dig(got, s.name, k)
			if have == nil {
				return fmt.Errorf("%s has no %s%s.%s", who, at, s.name, k)
			}
			q, err := resource.ParseQuantity(strings.TrimSpace(fmt.Sprint(have)))
			if err != nil || q.Cmp(v) != 0 {
				return fmt.Errorf("%s renders %s%s.%s %v, want %s", who, at, s.name, k, have, v.String())
			}
			sec, _ := want[s.name].(map[string]any)
			if sec == nil {
				sec = map[string]any{}
				want[s.name] = sec
			}
			sec[k] = have
		}
	}
	return nil
}
