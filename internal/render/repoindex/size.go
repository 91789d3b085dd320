package repoindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// DefaultMaxFileSize is the size above which Apply does not read a file
// unless WithMaxFileSize says otherwise: 4 MiB. Parsing a YAML file takes
// several times its size in memory, and kustomize more again, so a file far
// larger would take a run past the memory a small job has.
const DefaultMaxFileSize int64 = 4 << 20

// maxAliasNodes bounds the nodes that aliases may add to a file read for a
// proof: kustomize copies every alias's anchor in full, so a few lines of
// nested aliases (a "billion laughs") expand to gigabytes, and an anchor
// holding its own alias recurses until the stack limit kills the process.
const maxAliasNodes = 1 << 16

// ErrFileTooLarge means a file is above the size limit (WithMaxFileSize)
// and was not read: what it defines is not found, and a kustomization that
// includes it is not built.
var ErrFileTooLarge = errors.New("file too large")

// ErrAliasBomb marks a file whose aliases expand beyond maxAliasNodes, or
// into themselves.
var ErrAliasBomb = errors.New("aliases expand too far")

// Skip is a file Apply did not read.
type Skip struct {
	// File is slash-separated, relative to the repository root.
	File string
	// Size is the file's size in bytes.
	Size int64
	// Err says why; it wraps ErrFileTooLarge.
	Err error
}

// tooLarge is the error of a file of size bytes above limit.
func tooLarge(name string, size, limit int64) error {
	return fmt.Errorf("%w: %s is %s, above max-file-size %s: not read", ErrFileTooLarge, name, humanSize(size), limitString(limit))
}

// limitString spells a limit as the setting would: 4Mi, 1Ki, 1000.
func limitString(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// humanSize spells a size in bytes, KiB, MiB or GiB, with one decimal
// where it is not whole.
func humanSize(n int64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[u]
}

// ReadLimited reads a regular file of fsys unless it is above limit
// (limit <= 0: no limit), which it learns from the open file's metadata
// before reading a byte. A file that grows past the limit while it is read
// is refused too.
func ReadLimited(fsys fs.FS, name string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	info, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("read %s: not a regular file", name)
	}
	if limit > 0 && info.Size() > limit {
		return nil, nil, tooLarge(name, info.Size(), limit)
	}
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	// One byte more than the size, to meet the end without growing.
	data := make([]byte, 0, info.Size()+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, nil, tooLarge(name, int64(len(data)), limit)
	}
	return data, info, nil
}

// Budget bounds the bytes held at once by concurrent readers. A weight
// above the whole budget counts as the budget: such a reader waits to be
// alone. A nil budget bounds nothing.
type Budget struct {
	mu   sync.Mutex
	cond sync.Cond
	free int64
	size int64
}

// NewBudget returns a budget of n bytes, or nil when n <= 0.
func NewBudget(n int64) *Budget {
	if n <= 0 {
		return nil
	}
	b := &Budget{free: n, size: n}
	b.cond.L = &b.mu
	return b
}

// Acquire waits until n bytes are free and takes them.
func (b *Budget) Acquire(n int64) {
	if b == nil {
		return
	}
	n = min(max(n, 0), b.size)
	b.mu.Lock()
	for b.free < n {
		b.cond.Wait()
	}
	b.free -= n
	b.mu.Unlock()
}

// Release gives back n bytes taken by acquire.
func (b *Budget) Release(n int64) {
	if b == nil {
		return
	}
	n = min(max(n, 0), b.size)
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// CheckAliases refuses YAML whose aliases would add more than maxAliasNodes
// nodes when expanded, or expand into themselves. Text that does not parse
// is left for its reader to refuse, which it does before expanding.
func CheckAliases(data []byte) error {
	// No anchor, no alias.
	if bytes.IndexByte(data, '&') < 0 || bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	// Decoded here rather than with yamledit.ParseDocuments, which refuses what is
	// not UTF-8: kustomize reads UTF-16 too.
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		n := new(yaml.Node)
		if err := dec.Decode(n); err != nil {
			break // the end, or an error kustomize reports before expanding
		}
		docs = append(docs, n)
	}
	e := Expansion{Weight: func(*yaml.Node) int64 { return 1 }}
	var expanded int64
	for _, d := range docs {
		n := e.Size(d)
		if n < 0 {
			return fmt.Errorf("%w: an anchor holds an alias of itself", ErrAliasBomb)
		}
		expanded += n
	}
	if literal := int64(e.Counted()); expanded-literal > maxAliasNodes {
		return fmt.Errorf("%w: its aliases add more than %d nodes", ErrAliasBomb, maxAliasNodes)
	}
	return nil
}

// Expansion counts what YAML nodes amount to once their aliases are
// expanded, as a decoder copies them: an alias counts what its anchor
// does, each time it is reached, so a few lines of aliases can count
// gigabytes before any is copied.
type Expansion struct {
	// Weight is what one node counts besides its content.
	Weight func(*yaml.Node) int64
	sizes  map[*yaml.Node]int64
}

// Size returns what n expands to, or -1 when an anchor in it holds an
// alias of itself. Nodes already counted are not walked again.
func (e *Expansion) Size(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	if e.sizes == nil {
		e.sizes = map[*yaml.Node]int64{}
	}
	if s, ok := e.sizes[n]; ok {
		return s // -1 while n is being counted: a cycle
	}
	e.sizes[n] = -1
	s := e.Weight(n)
	if n.Kind == yaml.AliasNode {
		s = e.Size(n.Alias)
	} else {
		for _, c := range n.Content {
			k := e.Size(c)
			if k < 0 {
				s = -1
				break
			}
			s = min(s+k, 1<<50) // no overflow, far above any limit
		}
	}
	e.sizes[n] = s
	return s
}

// Counted is how many nodes Size has counted, each once as written.
func (e *Expansion) Counted() int { return len(e.sizes) }

// ProofFS is the repository on disk as kustomize reads it for a proof:
// with the edited and new files laid over it, files above the size limit
// refused before they are read, and YAML whose aliases expand too far
// refused before kustomize expands them.
type ProofFS struct {
	filesys.FileSystem
	Root  string            // absolute, to name files in errors
	Files map[string][]byte // edited, by absolute path
	Limit int64             // <= 0: none
}

// rel names a file of the repository in errors, as the report does.
func (p ProofFS) rel(name string) string {
	if r, err := filepath.Rel(p.Root, name); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return name
}

// ReadFile implements filesys.FileSystem.
func (p ProofFS) ReadFile(name string) ([]byte, error) {
	data, ok := p.Files[filepath.Clean(name)]
	if !ok {
		if err := p.checkSize(name); err != nil {
			return nil, err
		}
		var err error
		if data, err = p.FileSystem.ReadFile(name); err != nil {
			return nil, err
		}
		if p.Limit > 0 && int64(len(data)) > p.Limit {
			return nil, tooLarge(p.rel(name), int64(len(data)), p.Limit)
		}
	}
	if err := CheckAliases(data); err != nil {
		return nil, fmt.Errorf("%s: %w", p.rel(name), err)
	}
	return data, nil
}

// Open implements filesys.FileSystem.
func (p ProofFS) Open(name string) (filesys.File, error) {
	if err := p.checkSize(name); err != nil {
		return nil, err
	}
	return p.FileSystem.Open(name)
}

// checkSize refuses a file on disk above the limit.
func (p ProofFS) checkSize(name string) error {
	if p.Limit <= 0 {
		return nil
	}
	info, err := os.Stat(name)
	if err == nil && info.Mode().IsRegular() && info.Size() > p.Limit {
		return tooLarge(p.rel(name), info.Size(), p.Limit)
	}
	return nil // a missing file is the reader's to report
}

// Exists implements filesys.FileSystem.
func (p ProofFS) Exists(name string) bool {
	_, ok := p.Files[filepath.Clean(name)]
	return ok || p.FileSystem.Exists(name)
}

// CleanedAbs implements filesys.FileSystem.
func (p ProofFS) CleanedAbs(name string) (filesys.ConfirmedDir, string, error) {
	if abs, err := filepath.Abs(name); err == nil {
		if _, ok := p.Files[abs]; ok {
			return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
		}
	}
	return p.FileSystem.CleanedAbs(name)
}
