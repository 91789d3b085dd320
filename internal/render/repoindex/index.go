package repoindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// MaxPrefilterNames bounds the number of target names searched for in the
// raw bytes before parsing; past it, scanning every file for every name costs
// more than parsing it.
const MaxPrefilterNames = 64

// IdentKey is what a manifest must share with a Target, namespace aside.
type IdentKey struct{ Group, Kind, Name string }

// KeyOf returns the key under which the index holds t's documents.
func KeyOf(t Target) IdentKey { return IdentKey{Group(t.APIVersion), t.Kind, t.Name} }

// Group returns the API group of an apiVersion: "apps" for apps/v1, "" for v1.
func Group(apiVersion string) string {
	g, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return g
}

// DocRef points at one document that defines a wanted object.
type DocRef struct {
	File string
	Doc  int
	// Key and namespace are the object's identity as rendered: after the
	// kustomizations of chain, if any ("" when no namespace is set).
	Key       IdentKey
	Namespace string
	// Chain is how a kustomization renders the file; nil when none does.
	Chain Chain
	// RawName and rawNamespace are the identity as written in the file.
	RawName, RawNamespace string
	// Shared says, when not empty, why the file must not be edited in
	// place for this renderer: an environment that does not include the
	// renderer also renders it, or the renderer renders it twice. resolve
	// sets it.
	Shared string
	// Deployer names the Argo CD or Flux object that narrowed the search
	// to this document (kind, namespace/name, origin); resolve sets it.
	Deployer string
}

// IndexedFile is a file holding at least one wanted object, kept as read so
// that it is edited exactly as it was indexed. Its parsed documents are
// not kept: thousands of files' trees are what would fill a run's memory,
// and a file is parsed again when it is edited.
type IndexedFile struct {
	Name   string
	Data   []byte
	Mode   fs.FileMode
	Unsafe error // why the file must not be edited, if it must not
	// External marks an object the repository does not hold (live or
	// generated), indexed as a file of its own name.
	External bool
}

// Index maps wanted objects to the documents that define them.
type Index struct {
	Refs  map[IdentKey][]DocRef
	Files map[string]*IndexedFile
	// broken lists files that mention a wanted name but do not parse, and
	// templates the charts' templates that define it although they parse,
	// to explain a target that is not found.
	broken, templates map[string][]string
	Graph             *kgraph
	// apps maps an Argo CD Application's name to its source paths, and
	// fluxes a Flux Kustomization's namespace/name to its path.
	apps, fluxes map[string][]string
	// deployers are the live and generated deployers by "app:<name>" or
	// "flux:<namespace>/<name>" (addDeployers).
	deployers map[string]DeployerObject
	// alsoDefined names, by the same keys, the other generated
	// definitions of a deployer's name, all of them candidates.
	alsoDefined map[string][]string
	// liveHelm are the live HelmReleases by namespace/name.
	liveHelm map[string]DeployerObject
	// markers maps "namespace/name:container" to the documents marking it.
	markers map[string][]DocRef
	// Deployers are the Argo CD Applications' sources and the Flux
	// Kustomizations the repository holds, in file order, and those
	// AddDeployer added.
	Deployers []*Deployer
	// Declared holds the directories something names as deployed: the
	// paths of Argo CD Applications and Flux Kustomizations, and the
	// changes' paths. With the kustomizations nothing includes, they are
	// the environments whose output must not change unseen.
	Declared map[string]bool
	// Charts holds the directories with a Chart.yaml: Helm charts.
	Charts map[string]bool
	// Large holds every YAML file of the repository above the size limit;
	// skipped lists those the index would have read.
	Large   map[string]Skip
	Skipped []Skip
	limit   int64
}

// Wants is what the index looks for.
type Wants struct {
	Objects map[IdentKey]bool
	// Names are searched for in the raw bytes before parsing; nil parses
	// every file.
	Names [][]byte
	// Dir is the searched directory: only what is rendered from it counts.
	Dir string
	// Pointers asks for the Argo CD and Flux objects outside dir too, and
	// to report the files there above the size limit; Deployers asks for
	// those objects only as deployers of what dir holds.
	Pointers, Deployers bool
	// Paths are the directories the changes name (Change.Path), which
	// are deployed.
	Paths []string
	// Helm asks for every object that may render or feed a Helm release
	// (helmKinds), whatever its name.
	Helm bool
	// DeployerObjects are the Argo CD and Flux objects the repository does
	// not hold as written (live, generated); theirs are the paths that count.
	DeployerObjects []DeployerObject
	// Cluster is this cluster as Argo CD names it, "" when not known: an
	// Application file whose destination.name is another cluster's
	// deploys nothing here.
	Cluster string
}

// wanted reports whether the index keeps documents of the object k.
func (w Wants) wanted(k IdentKey) bool {
	return w.Objects[k] || w.Helm && helmKinds[groupKind{k.Group, k.Kind}]
}

// BuildIndex walks dir in fsys and indexes the documents that define one of
// the wanted objects, the kustomizations that render them, the Argo CD and
// Flux objects that point at paths, and the marker comments. Files that are
// not YAML, do not parse, or hold nothing of interest are skipped; hidden
// directories and symlinks are not followed. Files above limit (<= 0: no
// limit) are not read: their size is checked first.
func BuildIndex(ctx context.Context, fsys fs.FS, dir string, w Wants, limit int64) (*Index, error) {
	idx := &Index{
		limit:     limit,
		Large:     map[string]Skip{},
		Refs:      map[IdentKey][]DocRef{},
		Files:     map[string]*IndexedFile{},
		broken:    map[string][]string{},
		templates: map[string][]string{},
		apps:      map[string][]string{},
		fluxes:    map[string][]string{},
		markers:   map[string][]DocRef{},
		Graph:     newKgraph(nil),
		Declared:  map[string]bool{},
		Charts:    map[string]bool{},

		alsoDefined: map[string][]string{},
	}
	if len(w.Objects) == 0 {
		return idx, nil
	}
	found, err := idx.walk(ctx, fsys, dir, w)
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", dir, err)
	}
	ks, more, over, err := loadKustomizations(fsys, found.kfiles, found.paths, dir, idx.Large, limit)
	if err != nil {
		return nil, err
	}
	for _, p := range over {
		idx.Skipped = append(idx.Skipped, idx.Large[p])
	}
	slices.SortFunc(idx.Skipped, func(x, y Skip) int { return strings.Compare(x.File, y.File) })
	paths := append(found.paths, more...)
	inside := len(paths)
	paths = append(paths, found.outside...)
	idx.Graph = newKgraph(ks)

	scans, err := scanAll(ctx, fsys, paths, inside, found.sizes, w, idx.Graph, limit)
	if err != nil {
		return nil, err
	}
	for i, s := range scans {
		idx.add(s, paths[i])
	}
	idx.otherClusters(w.Cluster)
	if err := idx.addDeployers(w.DeployerObjects, w.Helm); err != nil {
		return nil, err
	}
	for _, d := range idx.Deployers {
		idx.detectChart(d)
	}
	// A deployer's namePrefix or nameSuffix names the live object as no
	// file does: the names without them are sought too.
	if extra := idx.renamedWants(w); len(extra.Objects) > 0 {
		scans, err := scanAll(ctx, fsys, paths[:inside], inside, found.sizes, extra, idx.Graph, limit)
		if err != nil {
			return nil, err
		}
		for _, s := range scans {
			idx.addRefs(s)
		}
	}
	for _, p := range w.Paths {
		idx.Declared[CleanRepoPath(p)] = true
	}
	return idx, nil
}

// walked is what walking the repository found to read: manifests under
// the searched directory, kustomizations anywhere, the files outside that
// may point at it, and the sizes of them all when there is a limit.
type walked struct {
	paths, kfiles, outside []string
	sizes                  map[string]int64
}

// walk lists the files to read. Manifests are indexed under dir only, but
// kustomizations are read from the whole repository: a base may be shared
// with an overlay elsewhere, and must not be edited in place then. Files
// above the limit are recorded in idx and not listed.
func (idx *Index) walk(ctx context.Context, fsys fs.FS, dir string, w Wants) (walked, error) {
	found := walked{sizes: map[string]int64{}}
	limit := idx.limit
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != "." && !under(p, dir) && !under(dir, p) {
				return nil // an unreadable corner outside dir is not ours
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		// A symlinked manifest would be indexed twice or edited through
		// the link; the file it points to is indexed on its own.
		if !d.Type().IsRegular() {
			return nil
		}
		if d.Name() == "Chart.yaml" {
			idx.Charts[path.Dir(p)] = true
		}
		kname, yname := IsKustomizationName(d.Name()), IsYAMLName(d.Name())
		if !kname && !yname {
			return nil
		}
		// The size, from the directory entry's metadata, decides before
		// the file is opened.
		if limit > 0 {
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("stat %s: %w", p, err)
			}
			found.sizes[p] = info.Size()
			if size := info.Size(); size > limit {
				idx.Large[p] = Skip{File: p, Size: size, Err: tooLarge(p, size, limit)}
				if kname || under(p, dir) || w.Pointers {
					idx.Skipped = append(idx.Skipped, idx.Large[p])
				}
				if kname {
					// Its directory renders nothing we can know of.
					found.kfiles = append(found.kfiles, p)
				}
				return nil
			}
		}
		switch {
		case kname:
			found.kfiles = append(found.kfiles, p)
		case under(p, dir):
			found.paths = append(found.paths, p)
		case w.Pointers || w.Deployers:
			// Argo CD Applications and Flux Kustomizations often live
			// apart from the manifests they point at.
			found.outside = append(found.outside, p)
		}
		return nil
	})
	return found, err
}

// scanAll scans the files in parallel: the first inside of paths for the
// wanted objects and markers, the rest for Argo CD and Flux pointers only.
func scanAll(ctx context.Context, fsys fs.FS, paths []string, inside int, sizes map[string]int64, w Wants, graph *kgraph, limit int64) ([]scan, error) {
	scans := make([]scan, len(paths))
	errs := make([]error, len(paths))
	// However many workers, the files in their hands add up to one limit
	// at most, or one file: parsing takes many times a file's size.
	gate := NewBudget(limit)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				size, ok := sizes[paths[i]]
				if !ok {
					size = limit // a symlink's target, not sized by the walk
				}
				gate.Acquire(size)
				if i < inside {
					scans[i], errs[i] = scanFile(fsys, paths[i], w, graph, limit)
				} else {
					scans[i], errs[i] = scanPointers(fsys, paths[i], limit)
				}
				gate.Release(size)
			}
		})
	}
	wg.Wait()
	for i := range scans {
		if errs[i] != nil {
			return nil, errs[i]
		}
	}
	return scans, nil
}

// add records what scanning the file at p found.
func (idx *Index) add(s scan, p string) {
	for _, n := range s.brokenFor {
		idx.broken[n] = append(idx.broken[n], p)
	}
	for name, ps := range s.apps {
		idx.apps[name] = append(idx.apps[name], ps...)
		for _, p := range ps {
			idx.Declared[p] = true
		}
	}
	idx.Deployers = append(idx.Deployers, s.deployers...)
	for name, ps := range s.fluxes {
		idx.fluxes[name] = append(idx.fluxes[name], ps...)
		for _, p := range ps {
			idx.Declared[p] = true
		}
	}
	if s.file == nil {
		return
	}
	if idx.chartTemplate(s.file.Name) {
		// A chart's template renders through Helm, not as written,
		// even when it happens to parse.
		for _, r := range s.refs {
			if !slices.Contains(idx.templates[r.Key.Name], s.file.Name) {
				idx.templates[r.Key.Name] = append(idx.templates[r.Key.Name], s.file.Name)
			}
		}
		s.refs = nil
		if len(s.markers) == 0 {
			return
		}
	}
	idx.Files[s.file.Name] = s.file
	for _, r := range s.refs {
		idx.Refs[r.Key] = append(idx.Refs[r.Key], r)
	}
	for key, rs := range s.markers {
		idx.markers[key] = append(idx.markers[key], rs...)
	}
}

// chartTemplate reports whether file is a template of a Helm chart.
func (idx *Index) chartTemplate(file string) bool {
	chart := idx.inChart(file)
	return chart != "" && under(file, path.Join(chart, "templates"))
}

// inChart returns the Helm chart directory file is in, or "".
func (idx *Index) inChart(file string) string {
	for d := path.Dir(file); ; d = path.Dir(d) {
		if idx.Charts[d] {
			return d
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// IsEnv reports whether k is an environment: a kustomization nothing else
// includes, or one something names as deployed.
func (idx *Index) IsEnv(k *Kustomization) bool {
	return k.isRoot() || (!k.component && idx.Declared[k.Dir])
}

// loadKustomizations parses the kustomization files found, and returns the
// plain files outside the walked ones that kustomizations under dir render
// (a base next to the configured path), for scanning too, and those of them
// that are in large, which are not. A kustomization file in large is not
// read: it stands for a kustomization that renders nothing known.
func loadKustomizations(fsys fs.FS, kfiles, walked []string, dir string, large map[string]Skip, limit int64) (ks []*Kustomization, more, over []string, err error) {
	byDir := map[string]*Kustomization{}
	var plain []string
	for _, p := range kfiles {
		k := &Kustomization{Dir: path.Dir(p), File: p, TooLarge: large[p].Err}
		if k.TooLarge == nil {
			if k, err = parseKustomization(fsys, p, limit); err != nil {
				return nil, nil, nil, err
			}
		}
		switch {
		case k != nil:
			ks = append(ks, k)
			if _, dup := byDir[k.Dir]; !dup {
				byDir[k.Dir] = k
			}
		case under(p, dir):
			// Named like a kustomization, but a manifest (a Flux
			// Kustomization, say).
			plain = append(plain, p)
		}
	}
	seen := map[string]bool{}
	for _, p := range walked {
		seen[p] = true
	}
	more = plain
	visited := map[*Kustomization]bool{}
	var visit func(k *Kustomization)
	visit = func(k *Kustomization) {
		if visited[k] {
			return
		}
		visited[k] = true
		for _, r := range k.Resources {
			if sub := byDir[r]; sub != nil {
				visit(sub)
				continue
			}
			if seen[r] || !IsYAMLName(r) {
				continue
			}
			seen[r] = true
			if _, ok := large[r]; ok {
				over = append(over, r)
				continue
			}
			// The walk did not size a symlink; Stat follows it.
			info, err := fs.Stat(fsys, r)
			switch {
			case err != nil || !info.Mode().IsRegular():
			case limit > 0 && info.Size() > limit:
				large[r] = Skip{File: r, Size: info.Size(), Err: tooLarge(r, info.Size(), limit)}
				over = append(over, r)
			default:
				more = append(more, r)
			}
		}
	}
	for _, k := range ks {
		if under(k.Dir, dir) {
			visit(k)
		}
	}
	return ks, more, over, nil
}

// IsYAMLName reports whether a file name ends in .yaml or .yml.
func IsYAMLName(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// scan is what one file contributes to the index.
type scan struct {
	file      *IndexedFile
	refs      []DocRef
	markers   map[string][]DocRef
	apps      map[string][]string
	fluxes    map[string][]string
	deployers []*Deployer
	brokenFor []string // wanted names the file mentions although it does not parse
}

// markerToken is in every file that holds a marker comment.
var markerToken = []byte(markerKey)

func scanFile(fsys fs.FS, p string, w Wants, g *kgraph, limit int64) (scan, error) {
	data, info, err := ReadLimited(fsys, p, limit)
	if err != nil {
		return scan{}, err
	}
	if w.Names != nil && !mayDefine(data, w.Names) && !bytes.Contains(data, markerToken) && !g.renames(p) && !mayDefine(data, pointerTokens) &&
		(!w.Helm || !mayDefine(data, helmTokens)) {
		return scan{}, nil
	}
	docs, err := yamledit.ParseDocuments(data)
	if err != nil {
		var s scan
		for k := range w.Objects {
			// A file of another kind that mentions the name (a chart's
			// Service, a Rollout beside the Deployment) is not one.
			if !slices.Contains(s.brokenFor, k.Name) && bytes.Contains(data, []byte(k.Name)) && bytes.Contains(data, []byte(k.Kind)) {
				s.brokenFor = append(s.brokenFor, k.Name)
			}
		}
		return s, nil
	}
	var s scan
	chains := g.Chains(p)
	// Patches and files kustomize never reads define nothing.
	defines := chains != nil || (len(g.PatchFiles[p]) == 0 && !g.orphan(p))
	hasMarkers := bytes.Contains(data, markerToken)
	for i, d := range docs {
		if hasMarkers {
			for key := range findMarkers(d) {
				if s.markers == nil {
					s.markers = map[string][]DocRef{}
				}
				s.markers[key] = append(s.markers[key], DocRef{File: p, Doc: i})
			}
		}
		key, ns, ok := Identify(d)
		if !ok {
			continue
		}
		s.pointers(d, key, ns)
		s.deployers = append(s.deployers, DecodeDeployers(d, p, p, i)...)
		if !defines {
			continue
		}
		ref := DocRef{File: p, Doc: i, RawName: key.Name, RawNamespace: ns}
		if chains == nil {
			if w.wanted(key) {
				ref.Key, ref.Namespace = key, ns
				s.refs = append(s.refs, ref)
			}
			continue
		}
		for _, c := range chains {
			if !under(c.Root().Dir, w.Dir) {
				continue // rendered from outside the searched path
			}
			r := ref
			r.Chain = c
			r.Namespace, r.Key.Name = c.Transform(ns, key.Name)
			r.Key.Group, r.Key.Kind = key.Group, key.Kind
			// A renderer that reaches the file twice the same way names
			// no new candidate; resolve sees from the graph that the
			// file is rendered twice.
			dup := slices.ContainsFunc(s.refs, func(x DocRef) bool {
				return x.Doc == i && x.Chain.Root() == c.Root() && x.Key == r.Key && x.Namespace == r.Namespace
			})
			if w.wanted(r.Key) && !dup {
				s.refs = append(s.refs, r)
			}
		}
	}
	if len(s.refs) == 0 && len(s.markers) == 0 {
		return scan{apps: s.apps, fluxes: s.fluxes, deployers: s.deployers}, nil
	}
	s.file = &IndexedFile{
		Name:   p,
		Data:   data,
		Mode:   info.Mode().Perm(),
		Unsafe: yamledit.UnsafeFile(data, docs),
	}
	return s, nil
}

// pointerTokens are in every file that holds an Argo CD Application or a
// Flux Kustomization.
var pointerTokens = [][]byte{[]byte("argoproj.io"), []byte("kustomize.toolkit.fluxcd.io")}

// scanPointers reads only the Argo CD Applications and Flux Kustomizations
// of a file outside the searched path.
func scanPointers(fsys fs.FS, p string, limit int64) (scan, error) {
	data, _, err := ReadLimited(fsys, p, limit)
	if err != nil {
		return scan{}, err
	}
	if !mayDefine(data, pointerTokens) {
		return scan{}, nil
	}
	docs, err := yamledit.ParseDocuments(data)
	if err != nil {
		return scan{}, nil
	}
	var s scan
	for i, d := range docs {
		if key, ns, ok := Identify(d); ok {
			s.pointers(d, key, ns)
			s.deployers = append(s.deployers, DecodeDeployers(d, p, p, i)...)
		}
	}
	return s, nil
}

// pointers records the paths an Argo CD Application or a Flux
// Kustomization renders, which narrow the search for the objects they own.
func (s *scan) pointers(d *yaml.Node, key IdentKey, ns string) {
	root := yamledit.DocRoot(d)
	_, spec, _ := yamledit.Lookup(root, "spec")
	switch {
	case key.Group == "argoproj.io" && key.Kind == "Application":
		var paths []string
		_, src, _ := yamledit.Lookup(spec, "source")
		if p, ok := yamledit.ScalarField(src, "path"); ok {
			paths = append(paths, p)
		}
		_, srcs, _ := yamledit.Lookup(spec, "sources")
		if srcs != nil && srcs.Kind == yaml.SequenceNode {
			for _, item := range srcs.Content {
				if p, ok := yamledit.ScalarField(item, "path"); ok {
					paths = append(paths, p)
				}
			}
		}
		if s.apps == nil {
			s.apps = map[string][]string{}
		}
		for _, p := range paths {
			s.apps[key.Name] = append(s.apps[key.Name], CleanRepoPath(p))
		}
		if ns != "" {
			// Argo CD names apps outside its own namespace <namespace>_<name>.
			s.apps[ns+"_"+key.Name] = s.apps[key.Name]
		}
	case key.Group == "kustomize.toolkit.fluxcd.io" && key.Kind == "Kustomization":
		p, ok := yamledit.ScalarField(spec, "path")
		if !ok {
			p = "."
		}
		if s.fluxes == nil {
			s.fluxes = map[string][]string{}
		}
		s.fluxes[ns+"/"+key.Name] = append(s.fluxes[ns+"/"+key.Name], CleanRepoPath(p))
	}
}

// CleanRepoPath turns a path of an Argo CD or Flux object ("./apps/web/")
// into the index's form ("apps/web").
func CleanRepoPath(p string) string {
	return path.Clean(strings.TrimPrefix(path.Clean("/"+p), "/"))
}

// mayDefine reports whether data could define an object with one of names.
// A name can only be absent from the bytes of a file that defines it when
// spelled with escapes of a double-quoted scalar, hence the backslash.
func mayDefine(data []byte, names [][]byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 {
		return true
	}
	for _, n := range names {
		if bytes.Contains(data, n) {
			return true
		}
	}
	return false
}

// Identify returns the identity of the Kubernetes object in doc, if it is one.
func Identify(doc *yaml.Node) (IdentKey, string, bool) {
	root := yamledit.DocRoot(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return IdentKey{}, "", false
	}
	apiVersion, ok1 := yamledit.ScalarField(root, "apiVersion")
	kind, ok2 := yamledit.ScalarField(root, "kind")
	_, meta, dup := yamledit.Lookup(root, "metadata")
	if !ok1 || !ok2 || apiVersion == "" || kind == "" || meta == nil || dup {
		return IdentKey{}, "", false
	}
	if meta.Kind == yaml.AliasNode && meta.Alias != nil {
		meta = meta.Alias
	}
	name, ok := yamledit.ScalarField(meta, "name")
	if !ok || name == "" {
		return IdentKey{}, "", false
	}
	ns, _ := yamledit.ScalarField(meta, "namespace")
	return IdentKey{Group(apiVersion), kind, name}, ns, true
}

// The API groups of the Flux and Argo CD objects that render Helm releases.
const (
	FluxHelmGroup   = "helm.toolkit.fluxcd.io"
	FluxSourceGroup = "source.toolkit.fluxcd.io"
	ArgoGroup       = "argoproj.io"
)

// groupKind is an object's API group and kind.
type groupKind struct{ group, kind string }

// helmKinds are the objects that render a Helm release or say where its
// chart is: the index keeps them whatever their names when a target may be
// Helm's.
var helmKinds = map[groupKind]bool{
	{FluxHelmGroup, "HelmRelease"}:      true,
	{FluxSourceGroup, "HelmRepository"}: true,
	{FluxSourceGroup, "GitRepository"}:  true,
	{FluxSourceGroup, "OCIRepository"}:  true,
	{FluxSourceGroup, "HelmChart"}:      true,
	{ArgoGroup, "Application"}:          true,
	{ArgoGroup, "ApplicationSet"}:       true,
}

// helmTokens are in every file that holds one of helmKinds.
var helmTokens = [][]byte{[]byte(FluxHelmGroup), []byte(FluxSourceGroup), []byte(ArgoGroup)}

// MayBeHelm reports whether Helm may render t: helm-controller's labels,
// Helm's release annotation, or an Argo CD application, whose source may
// be a chart.
func MayBeHelm(t Target) bool {
	return helmRelease(t) != "" || ArgoApp(t) != ""
}

// ArgoApp returns the Argo CD application that tracks t ("" if none), as
// Argo CD names it: <namespace>_<name> for applications outside its own
// namespace.
func ArgoApp(t Target) string {
	if id := t.Annotations[ArgoTrackingID]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return app
	}
	return t.Labels[InstanceLabel]
}

// Annotations of a ResourceRecommend that steer rendering; the job copies
// them into Change.Mode and Change.Path.
const (
	// AnnotationMode overrides the run's mode for one ResourceRecommend:
	// auto, inplace or patch.
	AnnotationMode = "recommend-job.io/mode"
	// AnnotationPath names the directory, relative to the repository root,
	// that renders the target: only sources under it, or rendered by a
	// kustomization under it, are considered.
	AnnotationPath = "recommend-job.io/path"
)

// Metadata of live objects written by Argo CD and Flux, which narrow the
// search to what their Application or Kustomization renders.
const (
	// ArgoTrackingID is <app>:<group>/<kind>:<namespace>/<name>.
	ArgoTrackingID = "argocd.argoproj.io/tracking-id"
	// InstanceLabel names the Argo CD application under label tracking;
	// it is used only when an Application of that name is in the repository.
	InstanceLabel = "app.kubernetes.io/instance"
	// FluxNameLabel and FluxNamespaceLabel name the Flux Kustomization
	// that applied the object.
	FluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// Finder locates, in one document, the mapping that holds the resources a
// change sets (a container), or, when direct, that resources mapping itself.
type Finder func(doc *yaml.Node) (m *yaml.Node, direct bool, err error)

// Target identifies a live workload.
type Target struct {
	APIVersion, Kind, Namespace, Name string
	// Labels and Annotations are the live object's. Argo CD's tracking-id
	// annotation (or app.kubernetes.io/instance label) and Flux's
	// kustomize.toolkit.fluxcd.io/name and /namespace labels narrow the
	// search to the path their Application or Kustomization renders, when
	// that object is in the repository.
	Labels, Annotations map[string]string
	// PodPrint is the print of the live pod template: where several
	// sources could define the target, the one whose build has the same
	// print is chosen. "" chooses none.
	PodPrint kinds.PodPrint
}

// String returns the target as Kind.group namespace/name.
func (t Target) String() string {
	gk := t.Kind
	if g := Group(t.APIVersion); g != "" {
		gk += "." + g
	}
	if t.Namespace == "" {
		return gk + " " + t.Name
	}
	return gk + " " + t.Namespace + "/" + t.Name
}

// Sought is what resolving looks for: a target's container, under Path
// when it is set.
type Sought struct {
	Target    Target
	Container string
	Path      string
}

var (
	// ErrTargetNotFound means no manifest under the searched path defines the target.
	ErrTargetNotFound = errors.New("target not found")
	// ErrAmbiguousTarget means several manifests define the target equally
	// well, or a pod template names the container more than once.
	ErrAmbiguousTarget = errors.New("ambiguous target")
	// ErrContainerNotFound means the target's pod template has no container
	// (or native sidecar) of that name, or no pod template at all.
	ErrContainerNotFound = errors.New("container not found")
	// ErrUnsafeFile means the file defining the target cannot be edited
	// faithfully: it is a template, SOPS-encrypted, uses anchors, aliases or
	// merge keys on the edited path, or could only be rewritten with loss.
	ErrUnsafeFile = yamledit.ErrUnsafe
)
