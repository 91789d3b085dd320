package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

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
	ErrUnsafeFile = errors.New("unsafe file")
	// ErrInvalidChange means the change itself is malformed: missing target
	// fields or container, or a resource name or quantity that is not valid.
	ErrInvalidChange = errors.New("invalid change")
)

// Target identifies a live workload.
type Target struct {
	APIVersion, Kind, Namespace, Name string
}

// String returns the target as Kind.group namespace/name.
func (t Target) String() string {
	gk := t.Kind
	if g := group(t.APIVersion); g != "" {
		gk += "." + g
	}
	if t.Namespace == "" {
		return gk + " " + t.Name
	}
	return gk + " " + t.Namespace + "/" + t.Name
}

// Change asks that one container of a target get these resource values.
type Change struct {
	Target    Target
	Container string
	// Requests maps a resource name ("cpu", "memory") to a Kubernetes
	// quantity ("250m", "512Mi"); only these keys are set.
	Requests map[string]string
	// Limits is the same for limits; nil or empty leaves limits alone.
	Limits map[string]string
}

// Result says what happened to one Change.
type Result struct {
	Change Change
	// File is the slash-separated path, relative to the repository root, of
	// the file that defines the target ("" if none).
	File string
	// Changed reports that the file's bytes changed because of this change.
	Changed bool
	// Err says why the change could not be applied; nil when it was applied
	// or the file was already up to date.
	Err error
}

// Outcome is what Apply did.
type Outcome struct {
	// Results holds one Result per Change, in the order given.
	Results []Result
	// Files lists the files written: sorted, relative to the root, slash-separated.
	Files []string
}

// Apply finds, under root/path, the file that defines each change's target
// and sets the values. It writes only files whose bytes changed, and returns
// per-change results plus the list of written files.
//
// The returned error is for problems that stop the whole render: root or path
// unreadable, path escaping root, or ctx done. Per-change problems are
// reported in Result.Err and do not stop the other changes. Nothing is
// written before every change has been worked out.
func Apply(ctx context.Context, root, path string, changes []Change) (*Outcome, error) {
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
	wanted := map[identKey]bool{}
	for i, c := range changes {
		out.Results[i].Change = c
		if err := c.validate(); err != nil {
			out.Results[i].Err = err
			continue
		}
		wanted[keyOf(c.Target)] = true
	}

	idx, err := buildIndex(ctx, r.FS(), dir, wanted)
	if err != nil {
		return nil, err
	}

	byFile := map[string][]int{}
	docOf := make([]int, len(changes))
	for i, c := range changes {
		res := &out.Results[i]
		if res.Err != nil {
			continue
		}
		ref, err := idx.lookup(c.Target, dir)
		if err != nil {
			res.Err = err
			continue
		}
		res.File = ref.file
		docOf[i] = ref.doc
		byFile[ref.file] = append(byFile[ref.file], i)
	}

	var dirty []*fileEdit
	for _, name := range slices.Sorted(maps.Keys(byFile)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f := idx.files[name]
		fe := newFileEdit(f)
		for _, i := range byFile[name] {
			res := &out.Results[i]
			if f.unsafe != nil {
				res.Err = fmt.Errorf("%s: %w", name, f.unsafe)
				continue
			}
			res.Changed, res.Err = fe.apply(changes[i], docOf[i])
		}
		if !bytes.Equal(fe.data, fe.orig) {
			dirty = append(dirty, fe)
		}
	}

	// Writes are not interrupted by ctx so that the tree is never left with
	// only some of the edits that were reported.
	for _, fe := range dirty {
		if err := writeFile(r, fe.name, fe.data, fe.mode); err != nil {
			for _, i := range byFile[fe.name] {
				if res := &out.Results[i]; res.Changed {
					res.Changed = false
					res.Err = err
				}
			}
			continue
		}
		out.Files = append(out.Files, fe.name)
	}
	return out, nil
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

// leadingZero matches quantities YAML 1.1 readers (sigs.k8s.io/yaml among
// them) would take for octal or signed numbers when written as plain scalars.
var leadingZero = regexp.MustCompile(`^[+-]|^0[0-9]`)

func (c Change) validate() error {
	t := c.Target
	if t.APIVersion == "" || t.Kind == "" || t.Name == "" {
		return fmt.Errorf("%w: target %q needs apiVersion, kind and name", ErrInvalidChange, t)
	}
	if c.Container == "" {
		return fmt.Errorf("%w: %s: no container named", ErrInvalidChange, t)
	}
	for _, section := range []struct {
		name   string
		values map[string]string
	}{{"requests", c.Requests}, {"limits", c.Limits}} {
		for name, value := range section.values {
			if errs := validation.IsQualifiedName(name); len(errs) > 0 {
				return fmt.Errorf("%w: %s: resource name %q: %s", ErrInvalidChange, t, name, errs[0])
			}
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return fmt.Errorf("%w: %s: %s.%s %q: %v", ErrInvalidChange, t, section.name, name, value, err)
			}
			if q.Sign() < 0 || leadingZero.MatchString(value) {
				return fmt.Errorf("%w: %s: %s.%s %q is not a plain non-negative quantity", ErrInvalidChange, t, section.name, name, value)
			}
		}
	}
	return nil
}
