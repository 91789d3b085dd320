package appset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// Options are what generating needs beyond the repository.
type Options struct {
	// RepoURL is this repository's URL: a git generator of another
	// repository generates nothing. "" takes every one to be this one.
	RepoURL string
	// Cluster is this cluster as Argo CD names it; without a name the
	// cluster generator is unsupported.
	Cluster Cluster
	// Limit bounds the size of a file read (<= 0: no limit).
	Limit int64
	// FileBudget and RunBudget bound what evaluating one file, and all
	// of them, may produce (<= 0: DefaultFileBudget, DefaultRunBudget).
	FileBudget, RunBudget int64
	// RunLeft, for Expand, is what the run may still produce, shared by
	// the calls given it: set to RunBudget when it is 0, spent by each.
	// nil: each call has a RunBudget of its own.
	RunLeft *int64
}

// Cluster is one cluster as Argo CD's cluster generator sees it.
type Cluster struct{ Name, Server string }

// InCluster is the server Argo CD names the cluster it runs in.
const InCluster = "https://kubernetes.default.svc"

// Generated is what the repository's ApplicationSets generate.
type Generated struct {
	Apps []repoindex.DeployerObject
	// Unsupported says, per ApplicationSet that generated nothing or not
	// everything, why.
	Unsupported []string
}

// errUnsupported marks a generator generating needs more than git for.
var errUnsupported = errors.New("unsupported")

// Generate finds the ApplicationSets of the repository in fsys and the
// Applications they generate. Files that do not parse are skipped, as
// the index skips them. A file whose evaluation goes past its budget, the
// run's, or fileTimeout generates nothing and is named in Unsupported;
// the others are evaluated as usual. Only ctx's end fails Generate.
func Generate(ctx context.Context, fsys fs.FS, opts Options) (Generated, error) {
	var out Generated
	opts = opts.withDefaults()
	run := opts.RunBudget
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner generates nothing
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !repoindex.IsYAMLName(p) {
			return nil
		}
		data, _, err := repoindex.ReadLimited(fsys, p, opts.Limit)
		if err != nil || !bytes.Contains(data, []byte("ApplicationSet")) || !bytes.Contains(data, []byte(repoindex.ArgoGroup)) {
			return nil
		}
		apps, unsupported := generateFile(ctx, fsys, opts, &run, p, data)
		out.Apps = append(out.Apps, apps...)
		out.Unsupported = append(out.Unsupported, unsupported...)
		return ctx.Err()
	})
	return out, err
}

// generateFile evaluates the ApplicationSets of the file p, as expand
// does, for Generate: a file past a bound generates nothing and is named.
func generateFile(ctx context.Context, fsys fs.FS, opts Options, run *int64, p string, data []byte) ([]repoindex.DeployerObject, []string) {
	e, err := expand(ctx, fsys, opts, run, p, data)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return e.Apps, e.Unsupported
}

// Expanded is what the ApplicationSets of a file generate.
type Expanded struct {
	Apps []repoindex.DeployerObject
	// AsWritten are the templates of the generators that could not be
	// evaluated (one that needs more than the repository, or reads
	// another repository, or whose template fails), as written: the
	// Applications they would generate are not known, and a parameter
	// left in a string stands for any text.
	AsWritten []map[string]any
	// Unsupported says, per ApplicationSet that generated nothing or not
	// everything, why.
	Unsupported []string
}

// Expand evaluates the ApplicationSets of data, the file p or a document
// of it, as Generate evaluates a file's: within opts.FileBudget (and a
// run's budget of opts.RunBudget of its own) and fileTimeout, what its
// aliases expand to counted before it is decoded. A file past a bound
// generates nothing: the error wraps ErrBudget and names p. It is the one
// expander of ApplicationSets: what a caller reads of their Applications
// (which values files, which chart directories) it reads of these.
func Expand(ctx context.Context, fsys fs.FS, opts Options, data []byte, p string) (Expanded, error) {
	opts = opts.withDefaults()
	run := opts.RunLeft
	if run == nil {
		run = new(int64)
	}
	if *run == 0 {
		*run = opts.RunBudget
	}
	return expand(ctx, fsys, opts, run, p, data)
}

// withDefaults fills in the budgets left unset.
func (o Options) withDefaults() Options {
	if o.FileBudget <= 0 {
		o.FileBudget = DefaultFileBudget
	}
	if o.RunBudget <= 0 {
		o.RunBudget = DefaultRunBudget
	}
	return o
}

// expand evaluates the ApplicationSets of the file p, within a budget of
// its own, a share of the run's, and fileTimeout. A file past a bound
// generates nothing: the Applications it would have generated are not
// known, and the targets they deploy say that this file was not
// evaluated.
func expand(ctx context.Context, fsys fs.FS, opts Options, run *int64, p string, data []byte) (Expanded, error) {
	ctx, cancel := context.WithTimeout(ctx, fileTimeout)
	defer cancel()
	b := &budget{ctx: ctx, file: opts.FileBudget, run: run, fileLimit: opts.FileBudget, runLim: opts.RunBudget}
	if err := checkExpansion(data, b.left()); err != nil {
		return Expanded{}, fmt.Errorf("the ApplicationSets in %s: %w", p, err)
	}
	var out Expanded
	for _, obj := range decodeAll(data) {
		if kind, _ := obj["kind"].(string); kind != "ApplicationSet" || repoindex.Group(fmt.Sprint(obj["apiVersion"])) != repoindex.ArgoGroup {
			continue
		}
		g := generator{fsys: fsys, opts: opts, budget: b}
		more, err := g.applications(obj, p)
		name := objectName(obj)
		if errors.Is(err, ErrBudget) {
			return Expanded{}, fmt.Errorf("the ApplicationSets in %s (at ApplicationSet %s): %w", p, name, err)
		}
		if err != nil {
			out.Unsupported = append(out.Unsupported, fmt.Sprintf("ApplicationSet %s (%s): %v", name, p, err))
		}
		out.Apps = append(out.Apps, more...)
		out.AsWritten = append(out.AsWritten, g.asWritten...)
	}
	return out, nil
}

// decodeAll decodes the documents of a YAML file that decode to objects.
func decodeAll(data []byte) []map[string]any {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			// io.EOF, or a document that does not parse: what came
			// before stands.
			return out
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

// objectName is an object's namespace/name.
func objectName(obj map[string]any) string {
	name, _ := tree.Dig(obj, "metadata", "name").(string)
	if ns, _ := tree.Dig(obj, "metadata", "namespace").(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

// generator evaluates one ApplicationSet.
type generator struct {
	fsys   fs.FS
	opts   Options
	budget *budget
	goTmpl bool
	// options are goTemplate's templatesOptions (missingkey=error).
	options []string
	// parsed are the goTemplate strings parsed, by text.
	parsed map[string]*parsed
	// funcs are those goTemplate strings may call (funcMap).
	funcs map[string]any
	// asWritten are the templates of the generators not evaluated.
	asWritten []map[string]any
}

// applications returns the Applications appset generates from the file
// p: one per set of parameters of each generator, its template filled in.
// An error says why some or all could not be generated.
func (g *generator) applications(appset map[string]any, p string) ([]repoindex.DeployerObject, error) {
	g.goTmpl, _ = tree.Dig(appset, "spec", "goTemplate").(bool)
	for _, o := range asList(tree.Dig(appset, "spec", "goTemplateOptions")) {
		if s, ok := o.(string); ok {
			g.options = append(g.options, s)
		}
	}
	tmpl, _ := tree.Dig(appset, "spec", "template").(map[string]any)
	if tmpl == nil {
		return nil, errors.New("no spec.template")
	}
	ns, _ := tree.Dig(appset, "metadata", "namespace").(string)
	origin := "generated by ApplicationSet " + objectName(appset) + " in " + p
	var apps []repoindex.DeployerObject
	var errs []error
	for i, gen := range asList(tree.Dig(appset, "spec", "generators")) {
		params, err := g.eval(gen)
		if errors.Is(err, ErrBudget) {
			return nil, fmt.Errorf("generator %d: %w", i+1, err)
		}
		// A generator may carry a template of its own, over the set's.
		t := tmpl
		if own, ok := tree.Dig(gen, firstKey(gen), "template").(map[string]any); ok {
			t = mergeMaps(tree.DeepCopy(tmpl).(map[string]any), own)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("generator %d: %w", i+1, err))
			if err := g.keepAsWritten(t); err != nil {
				return nil, fmt.Errorf("generator %d: %w", i+1, err)
			}
			continue
		}
		if len(apps)+len(params) > maxApplications {
			errs = append(errs, fmt.Errorf("generator %d: more than %d Applications", i+1, maxApplications))
			if err := g.keepAsWritten(t); err != nil {
				return nil, fmt.Errorf("generator %d: %w", i+1, err)
			}
			break
		}
		for _, ps := range params {
			filled, err := g.fill(tree.DeepCopy(t), ps)
			if errors.Is(err, ErrBudget) {
				return nil, fmt.Errorf("generator %d: template: %w", i+1, err)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("generator %d: template: %w", i+1, err))
				if err := g.keepAsWritten(t); err != nil {
					return nil, fmt.Errorf("generator %d: %w", i+1, err)
				}
				break
			}
			app, _ := filled.(map[string]any)
			app["apiVersion"], app["kind"] = repoindex.ArgoGroup+"/v1alpha1", "Application"
			md, _ := app["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
				app["metadata"] = md
			}
			// Argo CD puts the Applications in the ApplicationSet's namespace.
			md["namespace"] = ns
			if ns == "" {
				delete(md, "namespace")
			}
			apps = append(apps, repoindex.DeployerObject{Object: app, Origin: origin})
		}
	}
	return apps, errors.Join(errs...)
}

// keepAsWritten keeps a copy of the template of a generator that could not
// be evaluated, spent from the budget as an Application is.
func (g *generator) keepAsWritten(t map[string]any) error {
	if err := g.budget.spend(sizeOf(t, g.budget.left())); err != nil {
		return err
	}
	g.asWritten = append(g.asWritten, tree.DeepCopy(t).(map[string]any))
	return nil
}

// maxApplications bounds what one ApplicationSet generates: the
// repository is untrusted, and a matrix multiplies.
const maxApplications = 10000

// firstKey is the one key of a generator: its kind.
func firstKey(gen any) string {
	m, _ := gen.(map[string]any)
	for _, k := range slices.Sorted(mapKeys(m)) {
		if k != "selector" && k != "values" {
			return k
		}
	}
	return ""
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// asList returns v as a list, or nil.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// mergeMaps lays over onto base, recursively, and returns base.
func mergeMaps(base, over map[string]any) map[string]any {
	for k, v := range over {
		if bm, ok := base[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				base[k] = mergeMaps(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// eval returns the parameter sets of one generator.
func (g *generator) eval(gen any) ([]map[string]any, error) {
	m, _ := gen.(map[string]any)
	if m == nil {
		return nil, errors.New("not a mapping")
	}
	var sets []map[string]any
	var err error
	kind := firstKey(m)
	switch kind {
	case "list":
		sets, err = g.list(m["list"])
	case "git":
		sets, err = g.git(m["git"])
	case "clusters":
		sets, err = g.clusters(m["clusters"])
	case "matrix":
		sets, err = g.matrix(m["matrix"])
	case "merge":
		sets, err = g.merge(m["merge"])
	case "scmProvider", "pullRequest", "plugin", "clusterDecisionResource":
		return nil, fmt.Errorf("%w: the %s generator needs more than the repository", errUnsupported, kind)
	default:
		return nil, fmt.Errorf("%w: the %q generator is not known", errUnsupported, kind)
	}
	if err != nil {
		return nil, err
	}
	// A generator's values are parameters too: values.<key>.
	if vals, ok := tree.Dig(m, kind, "values").(map[string]any); ok {
		for _, s := range sets {
			filled := map[string]any{}
			for k, v := range vals {
				f, err := g.fill(v, s)
				if err != nil {
					return nil, fmt.Errorf("values: %w", err)
				}
				filled[k] = f
			}
			g.set(s, "values", filled)
		}
	}
	return sets, nil
}

// set puts value under key in the parameters, as the template style reads
// them: nested for goTemplate, flattened with dots for fasttemplate.
func (g *generator) set(params map[string]any, key string, value any) {
	if g.goTmpl {
		params[key] = value
		return
	}
	flatten(params, key, value)
}

// flatten writes value under key, its maps' entries as key.sub, as
// fasttemplate's parameters are.
func flatten(params map[string]any, key string, value any) {
	if m, ok := value.(map[string]any); ok {
		for k, v := range m {
			flatten(params, key+"."+k, v)
		}
		return
	}
	if l, ok := value.([]any); ok {
		data, _ := json.Marshal(l)
		params[key] = string(data)
		return
	}
	params[key] = fmt.Sprint(value)
}

// list is the list generator: one set per element.
func (g *generator) list(spec any) ([]map[string]any, error) {
	if _, ok := tree.Dig(spec, "elementsYaml").(string); ok {
		return nil, fmt.Errorf("%w: the list generator's elementsYaml", errUnsupported)
	}
	var sets []map[string]any
	for _, e := range asList(tree.Dig(spec, "elements")) {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, errors.New("list: an element is not a mapping")
		}
		s := map[string]any{}
		for k, v := range em {
			g.set(s, k, v)
		}
		if err := g.spendSet(s); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		sets = append(sets, s)
	}
	return sets, nil
}

// spendSet spends a set of parameters from the budget: its strings, each
// time it holds one, as the templates may write them.
func (g *generator) spendSet(s map[string]any) error {
	return g.budget.spend(sizeOf(s, g.budget.left()))
}

// clusters is the cluster generator, for this cluster alone: a selector
// other than none, or no cluster name, cannot be evaluated.
func (g *generator) clusters(spec any) ([]map[string]any, error) {
	if sel, ok := tree.Dig(spec, "selector").(map[string]any); ok && len(sel) > 0 {
		return nil, fmt.Errorf("%w: the clusters generator's selector reads labels of Argo CD's cluster secrets", errUnsupported)
	}
	if g.opts.Cluster.Name == "" {
		return nil, fmt.Errorf("%w: the clusters generator needs the cluster's name (argocd-cluster-name)", errUnsupported)
	}
	server := g.opts.Cluster.Server
	if server == "" {
		server = InCluster
	}
	s := map[string]any{}
	g.set(s, "name", g.opts.Cluster.Name)
	g.set(s, "nameNormalized", normalize(g.opts.Cluster.Name))
	g.set(s, "server", server)
	return []map[string]any{s}, nil
}

// matrix is the product of two generators; the second may use the
// first's parameters.
func (g *generator) matrix(spec any) ([]map[string]any, error) {
	gens := asList(tree.Dig(spec, "generators"))
	if len(gens) != 2 {
		return nil, fmt.Errorf("matrix: %d generators, not 2", len(gens))
	}
	first, err := g.eval(gens[0])
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var sets []map[string]any
	for _, p := range first {
		second, err := g.fill(tree.DeepCopy(gens[1]), p)
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", err)
		}
		more, err := g.eval(second)
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", err)
		}
		// The product is refused before it is built: the second
		// generator, filled with each set of the first, makes about as
		// many sets each time.
		if len(sets) == 0 && int64(len(first))*int64(len(more)) > maxApplications || len(sets)+len(more) > maxApplications {
			return nil, fmt.Errorf("%w: matrix: more than %d parameter sets", ErrBudget, maxApplications)
		}
		for _, q := range more {
			s := tree.DeepCopy(p).(map[string]any)
			for k, v := range q {
				s[k] = v
			}
			if err := g.spendSet(s); err != nil {
				return nil, fmt.Errorf("matrix: %w", err)
			}
			sets = append(sets, s)
		}
	}
	return sets, nil
}

// merge is the merge generator: the first generator's sets, each with the
// parameters of the later ones' sets that agree with it on mergeKeys.
func (g *generator) merge(spec any) ([]map[string]any, error) {
	var keys []string
	for _, k := range asList(tree.Dig(spec, "mergeKeys")) {
		keys = append(keys, fmt.Sprint(k))
	}
	gens := asList(tree.Dig(spec, "generators"))
	if len(gens) < 2 || len(keys) == 0 {
		return nil, errors.New("merge: needs two generators and mergeKeys")
	}
	base, err := g.eval(gens[0])
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	// Joined on a map of the later sets by their keys' values, not set
	// by set: a merge of two generators of n sets each is n steps, not
	// n². As Argo CD, sets that share their keys' values are refused.
	if _, err := g.byKeys(base, keys); err != nil {
		return nil, fmt.Errorf("merge: generator 1: %w", err)
	}
	for i, gen := range gens[1:] {
		more, err := g.eval(gen)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		index, err := g.byKeys(more, keys)
		if err != nil {
			return nil, fmt.Errorf("merge: generator %d: %w", i+2, err)
		}
		for _, b := range base {
			key, ok := g.keyOf(b, keys)
			if !ok {
				continue
			}
			if m, ok := index[key]; ok {
				for k, v := range m {
					b[k] = v
				}
				if err := g.spendSet(m); err != nil {
					return nil, fmt.Errorf("merge: %w", err)
				}
			}
		}
	}
	return base, nil
}

// byKeys indexes sets by the values of keys: a set without them is left
// out, two with the same are refused.
func (g *generator) byKeys(sets []map[string]any, keys []string) (map[string]map[string]any, error) {
	index := make(map[string]map[string]any, len(sets))
	for _, s := range sets {
		key, ok := g.keyOf(s, keys)
		if !ok {
			continue
		}
		if _, dup := index[key]; dup {
			return nil, fmt.Errorf("two parameter sets have the same mergeKeys %q", strings.ReplaceAll(key, "\x00", ", "))
		}
		if err := g.budget.spend(nodeCost + int64(len(key))); err != nil {
			return nil, err
		}
		index[key] = s
	}
	return index, nil
}

// keyOf is the values of keys in a set, joined; false if one is missing.
func (g *generator) keyOf(s map[string]any, keys []string) (string, bool) {
	var b strings.Builder
	for i, k := range keys {
		v := g.param(s, k)
		if v == nil {
			return "", false
		}
		if i > 0 {
			b.WriteByte(0)
		}
		fmt.Fprint(&b, v)
	}
	return b.String(), true
}

// param reads a parameter by its dotted name.
func (g *generator) param(s map[string]any, key string) any {
	if !g.goTmpl {
		return s[key]
	}
	return tree.Dig(s, strings.Split(key, ".")...)
}

// normalize is Argo CD's normalised name: lower case, what a DNS name
// cannot hold turned into '-'.
func normalize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// pathParams are the parameters Argo CD gives a path: path, basename,
// normalised basename, segments, and for a file its name.
func (g *generator) pathParams(s map[string]any, dir, file string) {
	segs := strings.Split(dir, "/")
	if g.goTmpl {
		p := map[string]any{"path": dir, "basename": path.Base(dir), "basenameNormalized": normalize(path.Base(dir))}
		var anySegs []any
		for _, x := range segs {
			anySegs = append(anySegs, x)
		}
		p["segments"] = anySegs
		if file != "" {
			p["filename"], p["filenameNormalized"] = file, normalize(file)
		}
		s["path"] = p
		return
	}
	s["path"], s["path.basename"], s["path.basenameNormalized"] = dir, path.Base(dir), normalize(path.Base(dir))
	for i, x := range segs {
		s[fmt.Sprintf("path[%d]", i)] = x
	}
	if file != "" {
		s["path.filename"], s["path.filenameNormalized"] = file, normalize(file)
	}
}

// git is the git generator over this repository: its directories or its
// files matching the globs.
func (g *generator) git(spec any) ([]map[string]any, error) {
	repo, _ := tree.Dig(spec, "repoURL").(string)
	if g.fsys == nil {
		return nil, fmt.Errorf("%w: the git generator, without the repository to read", errUnsupported)
	}
	if g.opts.RepoURL != "" && repoindex.NormalRepoURL(repo) != repoindex.NormalRepoURL(g.opts.RepoURL) {
		return nil, fmt.Errorf("%w: the git generator reads %s, another repository", errUnsupported, repoindex.RedactURL(repo))
	}
	if dirs := asList(tree.Dig(spec, "directories")); len(dirs) > 0 {
		return g.directories(dirs)
	}
	if files := asList(tree.Dig(spec, "files")); len(files) > 0 {
		return g.files(files)
	}
	return nil, errors.New("git: neither directories nor files")
}

// directories is the git directories generator: one set per directory
// that a path matches and no exclude does.
func (g *generator) directories(globs []any) ([]map[string]any, error) {
	var include, exclude []string
	for _, d := range globs {
		p, _ := tree.Dig(d, "path").(string)
		if ex, _ := tree.Dig(d, "exclude").(bool); ex {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}
	var sets []map[string]any
	err := fs.WalkDir(g.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if err := g.budget.spend(nodeCost); err != nil {
			return err
		}
		if matchAny(include, p) && !matchAny(exclude, p) {
			s := map[string]any{}
			g.pathParams(s, p, "")
			if err := g.spendSet(s); err != nil {
				return err
			}
			sets = append(sets, s)
		}
		return nil
	})
	return sets, err
}

// files is the git files generator: one set per object of each file a
// path matches (a file may hold one object or a list).
func (g *generator) files(globs []any) ([]map[string]any, error) {
	var include []string
	for _, d := range globs {
		p, _ := tree.Dig(d, "path").(string)
		include = append(include, p)
	}
	var sets []map[string]any
	err := fs.WalkDir(g.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if err := g.budget.spend(nodeCost); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !matchAny(include, p) {
			return nil
		}
		data, _, err := repoindex.ReadLimited(g.fsys, p, g.opts.Limit)
		if err != nil {
			return fmt.Errorf("git files: %s: %w", p, err)
		}
		if err := checkExpansion(data, g.budget.left()); err != nil {
			return fmt.Errorf("git files: %s: %w", p, err)
		}
		var v any
		if err := utilyaml.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("git files: %s: %w", p, err)
		}
		objs := asList(v)
		if m, ok := v.(map[string]any); ok {
			objs = []any{m}
		}
		for _, o := range objs {
			om, ok := o.(map[string]any)
			if !ok {
				continue
			}
			s := map[string]any{}
			for k, v := range om {
				g.set(s, k, v)
			}
			g.pathParams(s, path.Dir(p), path.Base(p))
			if err := g.spendSet(s); err != nil {
				return fmt.Errorf("git files: %s: %w", p, err)
			}
			sets = append(sets, s)
		}
		return nil
	})
	return sets, err
}

// matchAny reports whether one of globs matches p, '**' matching any
// number of directories as Argo CD's files generator reads it.
func matchAny(globs []string, p string) bool {
	for _, g := range globs {
		if globMatch(strings.Split(repoindex.CleanRepoPath(g), "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

func globMatch(glob, segs []string) bool {
	if len(glob) == 0 {
		return len(segs) == 0
	}
	if glob[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globMatch(glob[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(glob[0], segs[0])
	return err == nil && ok && globMatch(glob[1:], segs[1:])
}
