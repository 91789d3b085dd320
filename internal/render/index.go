package render

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxPrefilterNames bounds the number of target names searched for in the
// raw bytes before parsing; past it, scanning every file for every name costs
// more than parsing it.
const maxPrefilterNames = 64

// identKey is what a manifest must share with a Target, namespace aside.
type identKey struct{ group, kind, name string }

func keyOf(t Target) identKey { return identKey{group(t.APIVersion), t.Kind, t.Name} }

// group returns the API group of an apiVersion: "apps" for apps/v1, "" for v1.
func group(apiVersion string) string {
	g, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return g
}

// docRef points at one document that defines a wanted object.
type docRef struct {
	file      string
	doc       int
	key       identKey
	namespace string // "" when the manifest does not set one
}

// indexedFile is a file holding at least one wanted object, kept as read so
// that it is edited exactly as it was indexed.
type indexedFile struct {
	name   string
	data   []byte
	docs   []*yaml.Node
	mode   fs.FileMode
	unsafe error // why the file must not be edited, if it must not
}

// index maps wanted objects to the documents that define them.
type index struct {
	refs  map[identKey][]docRef
	files map[string]*indexedFile
	// broken lists files that mention a wanted name but do not parse, to
	// explain a target that is not found.
	broken map[string][]string
}

// buildIndex walks dir in fsys and indexes the documents that define one of
// the wanted objects. Files that are not YAML, do not parse, or hold no
// Kubernetes object are skipped; hidden directories and symlinks are not
// followed.
func buildIndex(ctx context.Context, fsys fs.FS, dir string, wanted map[identKey]bool) (*index, error) {
	idx := &index{
		refs:   map[identKey][]docRef{},
		files:  map[string]*indexedFile{},
		broken: map[string][]string{},
	}
	if len(wanted) == 0 {
		return idx, nil
	}
	var paths []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		// A symlinked manifest would be indexed twice or edited through
		// the link; the file it points to is indexed on its own.
		if d.Type().IsRegular() && isYAMLName(d.Name()) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", dir, err)
	}

	var names [][]byte
	if len(wanted) <= maxPrefilterNames {
		for k := range wanted {
			names = append(names, []byte(k.name))
		}
	}
	scans := make([]scan, len(paths))
	errs := make([]error, len(paths))
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
				scans[i], errs[i] = scanFile(fsys, paths[i], wanted, names)
			}
		})
	}
	wg.Wait()
	for i, s := range scans {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, n := range s.brokenFor {
			idx.broken[n] = append(idx.broken[n], paths[i])
		}
		if s.file == nil {
			continue
		}
		idx.files[s.file.name] = s.file
		for _, r := range s.refs {
			idx.refs[r.key] = append(idx.refs[r.key], r)
		}
	}
	return idx, nil
}

func isYAMLName(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// scan is what one file contributes to the index.
type scan struct {
	file      *indexedFile
	refs      []docRef
	brokenFor []string // wanted names the file mentions although it does not parse
}

func scanFile(fsys fs.FS, p string, wanted map[identKey]bool, names [][]byte) (scan, error) {
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		return scan{}, fmt.Errorf("read %s: %w", p, err)
	}
	if names != nil && !mayDefine(data, names) {
		return scan{}, nil
	}
	docs, err := parseDocuments(data)
	if err != nil {
		var s scan
		for k := range wanted {
			if !slices.Contains(s.brokenFor, k.name) && bytes.Contains(data, []byte(k.name)) {
				s.brokenFor = append(s.brokenFor, k.name)
			}
		}
		return s, nil
	}
	var s scan
	for i, d := range docs {
		key, ns, ok := identify(d)
		if ok && wanted[key] {
			s.refs = append(s.refs, docRef{file: p, doc: i, key: key, namespace: ns})
		}
	}
	if len(s.refs) == 0 {
		return scan{}, nil
	}
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return scan{}, fmt.Errorf("stat %s: %w", p, err)
	}
	s.file = &indexedFile{
		name:   p,
		data:   data,
		docs:   docs,
		mode:   info.Mode().Perm(),
		unsafe: unsafeFile(data, docs),
	}
	return s, nil
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

// identify returns the identity of the Kubernetes object in doc, if it is one.
func identify(doc *yaml.Node) (identKey, string, bool) {
	root := docRoot(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return identKey{}, "", false
	}
	apiVersion, ok1 := scalarField(root, "apiVersion")
	kind, ok2 := scalarField(root, "kind")
	_, meta, dup := lookup(root, "metadata")
	if !ok1 || !ok2 || apiVersion == "" || kind == "" || meta == nil || dup {
		return identKey{}, "", false
	}
	if meta.Kind == yaml.AliasNode && meta.Alias != nil {
		meta = meta.Alias
	}
	name, ok := scalarField(meta, "name")
	if !ok || name == "" {
		return identKey{}, "", false
	}
	ns, _ := scalarField(meta, "namespace")
	return identKey{group(apiVersion), kind, name}, ns, true
}

// lookup picks the document that defines t. A manifest without a namespace
// matches any namespace, but one whose namespace is explicit and equal wins.
func (idx *index) lookup(t Target, dir string) (docRef, error) {
	var explicit, implicit []docRef
	for _, r := range idx.refs[keyOf(t)] {
		switch r.namespace {
		case t.Namespace:
			if r.namespace != "" {
				explicit = append(explicit, r)
			} else {
				implicit = append(implicit, r)
			}
		case "":
			implicit = append(implicit, r)
		}
	}
	found := explicit
	if len(found) == 0 {
		found = implicit
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		err := fmt.Errorf("%w: %s under %s", ErrTargetNotFound, t, dir)
		var others []string
		for _, r := range idx.refs[keyOf(t)] {
			others = append(others, fmt.Sprintf("%s in %s", r.namespace, r.file))
		}
		if len(others) > 0 {
			err = fmt.Errorf("%w (defined for other namespaces: %s)", err, strings.Join(others, ", "))
		}
		if broken := idx.broken[t.Name]; len(broken) > 0 {
			err = fmt.Errorf("%w (skipped as not valid YAML, although they name it: %s)", err, strings.Join(broken, ", "))
		}
		return docRef{}, err
	}
	var where []string
	for _, r := range found {
		where = append(where, fmt.Sprintf("%s (document %d)", r.file, r.doc+1))
	}
	slices.Sort(where)
	return docRef{}, fmt.Errorf("%w: %s is defined in %s", ErrAmbiguousTarget, t, strings.Join(where, ", "))
}
