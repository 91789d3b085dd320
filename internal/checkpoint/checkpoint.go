// Package checkpoint keeps what a run folded of each target's history (its
// containers' folds in day slots, see recommend.Slots) between runs, so
// that the next run reads only what is new. Checkpoints are ConfigMaps of
// the job's namespace, written whole by a run that succeeded, a
// generation at a time: pages of gzipped JSON, each far below the
// apiserver's 1 MiB, labelled and listed in pages. Each page carries the
// SHA-256 of its data, so that an edited or damaged page is ignored and
// its targets read cold. A shard keeps its own.
package checkpoint

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations of a checkpoint's pages.
const (
	labelManagedBy  = "app.kubernetes.io/managed-by"
	labelCheckpoint = "recommend-job.io/checkpoint"
	labelShard      = "recommend-job.io/shard"
	annGeneration   = "recommend-job.io/generation"
	annPages        = "recommend-job.io/pages"
	annSHA256       = "recommend-job.io/sha256"
)

// dataKey is the binary data key of a page: its entries as gzipped JSON.
const dataKey = "entries.json.gz"

// MaxPage bounds the compressed data of one page, a quarter of the
// apiserver's 1 MiB limit on an object.
const MaxPage = 256 << 10

// maxInflated bounds what one page's data inflates to when read.
const maxInflated = 16 << 20

// listPage is how many ConfigMaps one list request asks for.
const listPage = 50

// Entry is the checkpoint of one target: what identifies the history it
// folded, up to when, and per container and resource the folds.
type Entry struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// UID is the target's, so that a target deleted and created again
	// under the same name starts cold.
	UID string `json:"uid"`
	// Settings identifies the settings the folds were made with (window,
	// half-life, resolution, peak interval): another run's settings fold
	// other values.
	Settings string `json:"settings"`
	// End is the end of the history folded in: the next run reads from
	// there.
	End time.Time `json:"end"`
	// Containers are the target's containers when the folds were made.
	Containers []string `json:"containers"`
	// Folds are the encoded folds (recommend.Slots) by "container/resource".
	Folds map[string][]byte `json:"folds"`
}

// Key names the target of e in a Checkpoint.
func (e Entry) Key() string { return e.Namespace + "/" + e.Kind + "/" + e.Name }

// Packed is an Entry as a run holds it from the load, or from its fold,
// to the save: compressed alone, about a tenth of the entry's folds, so
// that a run over tens of thousands of targets holds megabytes of them,
// not a hundred.
type Packed struct {
	// Namespace and End are the entry's, which a run reads of every
	// entry without unpacking it.
	Namespace string
	End       time.Time
	key       string
	data      []byte // gzipped JSON of the entry alone
	raw       int    // the length of that JSON
}

// Pack compresses e.
func Pack(e Entry) (Packed, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return Packed{}, fmt.Errorf("packing the checkpoint of %s: %w", e.Key(), err)
	}
	z := compressors.Get().(*compressor)
	defer compressors.Put(z)
	data, err := z.compress(raw)
	if err != nil {
		return Packed{}, fmt.Errorf("packing the checkpoint of %s: %w", e.Key(), err)
	}
	return Packed{Namespace: e.Namespace, End: e.End, key: e.Key(), data: data, raw: len(raw)}, nil
}

// Key names the target of p, as Entry.Key.
func (p Packed) Key() string { return p.key }

// Entry is p unpacked.
func (p Packed) Entry() (Entry, error) {
	raw, err := inflate(p.data, nil)
	if err != nil {
		return Entry{}, fmt.Errorf("the checkpoint of %s: %w", p.key, err)
	}
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Entry{}, fmt.Errorf("the checkpoint of %s: %w", p.key, err)
	}
	return e, nil
}

// compressor gzips at the best compression with one writer, which takes
// about a megabyte: a run packs an entry per target, and a writer each
// would be that much garbage per target.
type compressor struct {
	buf bytes.Buffer
	w   *gzip.Writer
}

var compressors = sync.Pool{New: func() any {
	z := &compressor{}
	z.w, _ = gzip.NewWriterLevel(&z.buf, gzip.BestCompression) // a valid level: no error
	return z
}}

// compress returns raw gzipped, in a slice of its own.
func (z *compressor) compress(raw []byte) ([]byte, error) {
	z.start()
	if _, err := z.w.Write(raw); err != nil {
		return nil, err
	}
	return z.finish()
}

// start begins a new stream, written to z.w.
func (z *compressor) start() {
	z.buf.Reset()
	z.w.Reset(&z.buf)
}

// finish ends the stream and returns it, in a slice of its own.
func (z *compressor) finish() ([]byte, error) {
	if err := z.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(z.buf.Bytes()), nil
}

// Want is what a run needs of a target's checkpoint for it to stand for
// the history it folded.
type Want struct {
	UID, Settings string
	Containers    []string
	// Window is how far back the run reads; a checkpoint that ends before
	// the window's start holds nothing of it.
	Window time.Duration
}

// Mismatch says why e cannot stand for the history the run wants as of
// now, in the words of the evidence ("checkpoint of another UID"); empty
// when it can.
func (e Entry) Mismatch(w Want, now time.Time) string {
	switch {
	case e.UID != w.UID:
		return "checkpoint of another UID"
	case e.Settings != w.Settings:
		return "checkpoint of other settings"
	case !slices.Equal(sortedCopy(e.Containers), sortedCopy(w.Containers)):
		return "checkpoint of other containers"
	case e.End.After(now):
		return "checkpoint from the future"
	case now.Sub(e.End) >= w.Window:
		return "checkpoint older than the window"
	}
	return ""
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Checkpoint is what a shard's last successful run kept, by Entry.Key.
type Checkpoint struct {
	Entries map[string]Packed
	// Generation is when the run that wrote it ended; zero when there is
	// none. Skipped are the pages left out as unreadable, with why.
	Generation time.Time
	Skipped    []string
}

// Age is how long ago the checkpoint of namespace was written: that of the
// oldest End of its entries; false when it has none.
func (c *Checkpoint) Age(namespace string, now time.Time) (time.Duration, bool) {
	var oldest time.Time
	for _, e := range c.Entries {
		if e.Namespace == namespace && (oldest.IsZero() || e.End.Before(oldest)) {
			oldest = e.End
		}
	}
	if oldest.IsZero() {
		return 0, false
	}
	return now.Sub(oldest), true
}

// ConfigMaps is the little of the apiserver's ConfigMap API the store
// needs, in the job's namespace; client-go's ConfigMapInterface is one.
type ConfigMaps interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Store reads and writes one shard's checkpoint.
type Store struct {
	client    ConfigMaps
	namespace string
	shard     int
}

// New returns the store of shard's checkpoint in namespace, the job's.
func New(client ConfigMaps, namespace string, shard int) *Store {
	return &Store{client: client, namespace: namespace, shard: shard}
}

func (s *Store) selector() string {
	return labelCheckpoint + "=true," + labelShard + "=" + strconv.Itoa(s.shard)
}

// pages lists the shard's pages, a page of the list at a time.
func (s *Store) pages(ctx context.Context) ([]corev1.ConfigMap, error) {
	var out []corev1.ConfigMap
	opts := metav1.ListOptions{LabelSelector: s.selector(), Limit: listPage}
	for {
		list, err := s.client.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the checkpoints in %s: %w", s.namespace, err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// Load returns the newest complete generation of the shard's checkpoint:
// one whose every page is there. A page that is not what its writer wrote
// (its checksum differs, its data does not decode) is skipped, and its
// entries are missing: their targets are read cold. No checkpoint is no
// error.
func (s *Store) Load(ctx context.Context) (*Checkpoint, error) {
	all, err := s.pages(ctx)
	if err != nil {
		return nil, err
	}
	byGen := map[string][]corev1.ConfigMap{}
	for _, cm := range all {
		byGen[cm.Annotations[annGeneration]] = append(byGen[cm.Annotations[annGeneration]], cm)
	}
	gens := make([]string, 0, len(byGen))
	for g := range byGen {
		gens = append(gens, g)
	}
	// Newest first; generations are RFC 3339 times in UTC, which sort as
	// text.
	slices.SortFunc(gens, func(a, b string) int { return strings.Compare(b, a) })
	out := &Checkpoint{Entries: map[string]Packed{}}
	for _, g := range gens {
		pages := byGen[g]
		at, err := time.Parse(time.RFC3339Nano, g)
		if err != nil || !complete(pages) {
			continue
		}
		out.Generation = at
		for _, cm := range pages {
			entries, err := decode(&cm)
			if err != nil {
				out.Skipped = append(out.Skipped, cm.Name+": "+err.Error())
				continue
			}
			for _, e := range entries {
				p, err := Pack(e)
				if err != nil {
					return nil, err
				}
				out.Entries[p.Key()] = p
			}
		}
		return out, nil
	}
	return out, nil
}

// complete reports whether pages are all the pages their generation says
// it has.
func complete(pages []corev1.ConfigMap) bool {
	n, err := strconv.Atoi(pages[0].Annotations[annPages])
	if err != nil || n != len(pages) {
		return false
	}
	for _, cm := range pages {
		if cm.Annotations[annPages] != pages[0].Annotations[annPages] {
			return false
		}
	}
	return true
}

// Saved is what a Save wrote: how many bytes its pages hold, and the
// entries it left out as larger than a page.
type Saved struct {
	Bytes   int
	LeftOut []LeftOut
}

// LeftOut is an entry too large for a page: its target is read cold by
// the next run, and every other target's checkpoint is saved.
type LeftOut struct {
	// Key names the target, as Entry.Key.
	Key string
	// Bytes is the entry's size, packed; Unpacked its size before, set
	// when that is what a page could not hold (folds so alike that they
	// pack small).
	Bytes, Unpacked int
}

// Why says why the entry was left out, in the words of the evidence.
func (l LeftOut) Why() string {
	if l.Unpacked > 0 {
		return fmt.Sprintf("checkpoint left out: %d bytes unpacked, more than a page's %d", l.Unpacked, maxInflated)
	}
	return fmt.Sprintf("checkpoint left out: %d bytes packed, more than a page's %d", l.Bytes, MaxPage)
}

// Save writes entries as a new generation of the shard's checkpoint, at
// at (when the run ended), then deletes the older generations: a run that
// stops half-way leaves an incomplete generation, which Load passes over.
// An entry larger than a page is left out, named in what it returns: one
// target's many containers must not stop the others' checkpoints.
func (s *Store) Save(ctx context.Context, entries []Packed, at time.Time) (Saved, error) {
	slices.SortFunc(entries, func(a, b Packed) int { return cmp.Compare(a.key, b.key) })
	batches, leftOut := paginate(entries)
	old, err := s.pages(ctx)
	if err != nil {
		return Saved{}, err
	}
	gen := at.UTC().Format(time.RFC3339Nano)
	saved := Saved{LeftOut: leftOut}
	// A page is made as it is written: a run holds one page's data, not
	// the checkpoint's.
	for i, batch := range batches {
		data, err := page(batch)
		if err != nil {
			return saved, err
		}
		sum := sha256.Sum256(data)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("recommend-job-checkpoint-%d-%d-%d", s.shard, at.UnixMilli(), i),
			Namespace: s.namespace,
			Labels:    map[string]string{labelManagedBy: "recommend-job", labelCheckpoint: "true", labelShard: strconv.Itoa(s.shard)},
			Annotations: map[string]string{annGeneration: gen, annPages: strconv.Itoa(len(batches)),
				annSHA256: hex.EncodeToString(sum[:])},
		}, BinaryData: map[string][]byte{dataKey: data}}
		if _, err := s.client.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return saved, fmt.Errorf("writing the checkpoint %s/%s: %w", s.namespace, cm.Name, err)
		}
		saved.Bytes += len(data)
	}
	for _, cm := range old {
		if cm.Annotations[annGeneration] == gen {
			continue
		}
		if err := s.client.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return saved, fmt.Errorf("deleting the checkpoint %s/%s: %w", s.namespace, cm.Name, err)
		}
	}
	return saved, nil
}

// paginate splits entries into the batches of pages of at most MaxPage
// bytes of gzipped JSON each, which inflate to at most maxInflated, as
// Load reads them; it leaves out an entry larger than a page alone. Each
// entry is sized as packed, alone; a page takes entries while their sum
// stays below the bound, which their compression together only lowers.
func paginate(entries []Packed) ([][]Packed, []LeftOut) {
	var batches [][]Packed
	var batch []Packed
	var leftOut []LeftOut
	// A page's JSON is its entries', a comma between two, in brackets and
	// a newline: raw starts at those three bytes and counts each comma.
	sum, raw := 0, 3
	for _, p := range entries {
		if len(p.data) > MaxPage {
			leftOut = append(leftOut, LeftOut{Key: p.key, Bytes: len(p.data)})
			continue
		}
		if 3+p.raw > maxInflated {
			leftOut = append(leftOut, LeftOut{Key: p.key, Bytes: len(p.data), Unpacked: p.raw})
			continue
		}
		if len(batch) > 0 && (sum+len(p.data) > MaxPage || raw+1+p.raw > maxInflated) {
			batches = append(batches, batch)
			batch, sum, raw = nil, 0, 3
		}
		batch = append(batch, p)
		sum += len(p.data)
		raw += 1 + p.raw
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	return batches, leftOut
}

// page is the data of a page of entries: their JSON array, gzipped.
func page(entries []Packed) ([]byte, error) {
	z := compressors.Get().(*compressor)
	defer compressors.Put(z)
	z.start()
	var raw []byte
	for i, p := range entries {
		sep := ","
		if i == 0 {
			sep = "["
		}
		var err error
		if raw, err = inflate(p.data, append(raw[:0], sep...)); err != nil {
			return nil, fmt.Errorf("the checkpoint of %s: %w", p.key, err)
		}
		if _, err := z.w.Write(raw); err != nil {
			return nil, err
		}
	}
	if _, err := z.w.Write([]byte("]\n")); err != nil {
		return nil, err
	}
	return z.finish()
}

// inflaters keep the readers of inflate, each with its window of 32 KiB.
var inflaters sync.Pool

// inflate appends what data inflates to to dst; more than maxInflated is
// an error.
func inflate(data, dst []byte) ([]byte, error) {
	r, _ := inflaters.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		err = r.Reset(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	defer inflaters.Put(r)
	b := bytes.NewBuffer(dst)
	n, err := b.ReadFrom(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	if n > maxInflated {
		return nil, errors.New("unreadable: it inflates past its bound")
	}
	return b.Bytes(), nil
}

// errTampered is the error of a page whose data is not what its writer
// wrote.
var errTampered = errors.New("its data does not match its checksum")

func decode(cm *corev1.ConfigMap) ([]Entry, error) {
	data := cm.BinaryData[dataKey]
	sum := sha256.Sum256(data)
	if cm.Annotations[annSHA256] != hex.EncodeToString(sum[:]) {
		return nil, errTampered
	}
	raw, err := inflate(data, nil)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	return entries, nil
}

// Evidence says where a window's history came from: "7d: 6d from
// checkpoint + 1d read" when kept of it came from the checkpoint, or
// "7d read: " and why not (a Mismatch) when none did.
func Evidence(window, kept time.Duration, why string) string {
	if kept <= 0 {
		if why == "" {
			why = "no checkpoint"
		}
		return span(window) + " read: " + why
	}
	return span(window) + ": " + span(kept) + " from checkpoint + " + span(window-kept) + " read"
}

// span writes d in days, hours and minutes, e.g. 6d23h, 1h, 7d.
func span(d time.Duration) string {
	d = d.Round(time.Minute)
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	hours, d := d/time.Hour, d%time.Hour
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if hours > 0 {
		fmt.Fprintf(&b, "%dh", hours)
	}
	if mins := d / time.Minute; mins > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%dm", mins)
	}
	return b.String()
}
