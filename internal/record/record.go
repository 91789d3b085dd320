// Package record keeps the job's own record of what it pushed: each
// commit, its branch and pull request, and the request changes it holds.
// The record is a ConfigMap in the job's namespace, which the job's
// service account may write and the tenants may not; verification of
// merged changes, their corrections and holds trust nothing else (see
// gitops.Pushed).
package record

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// DefaultName is the record's ConfigMap.
const DefaultName = "recommend-job-record"

// Labels and annotations of the record and its pages.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	// labelRecord names, on a page, the record it belongs to.
	labelRecord   = "recommend-job.io/record"
	annGeneration = "recommend-job.io/generation"
	annPages      = "recommend-job.io/pages"
	annSHA256     = "recommend-job.io/sha256"
)

// key is the binary data key of the record and of each of its pages: a
// piece of the entries' gzipped JSON.
const key = "pushed.json.gz"

// MaxPage bounds the piece of the gzipped JSON one ConfigMap holds, the
// record's own or a page's: three quarters of the apiserver's 1 MiB on a
// ConfigMap's data, so that no write is refused for its size.
const MaxPage = 768 << 10

// MaxPages bounds the ConfigMaps of the record, its own included. With
// maxData it is the record's budget, which a write enforces by leaving
// out the oldest commits.
const MaxPages = 16

// MaxEntries bounds the record, newest kept: far more than the pull
// requests of the weeks a change is watched.
const MaxEntries = 4000

// maxData bounds what the record's data inflates to. A write keeps the
// record under it, so that what one run writes the next can read, however
// well its changes compress.
const maxData = 64 << 20

// attempts is how often Update tries when another run wrote the record
// between its read and its write.
const attempts = 5

// orphanAge is how old a page of no generation of the record's must be
// before a write deletes it: a younger one may be another run's, written
// before its record.
const orphanAge = time.Hour

// ErrUnreadable is the error of a record that is there but cannot be
// read: a page missing, data that is not what its writer wrote or that
// does not decode. Update does not write over it.
var ErrUnreadable = errors.New("the record cannot be read")

// ConfigMaps is the little of the apiserver's ConfigMap API the record
// needs; client-go's typed ConfigMapInterface is one.
type ConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Store reads and writes the record: the ConfigMap Name, which holds the
// first piece of its data and says which generation of pages holds the
// rest, with the SHA-256 of the whole.
type Store struct {
	client ConfigMaps
	log    *slog.Logger
	// Namespace and Name say where the record is, for messages.
	Namespace, Name string
}

// Option sets an optional setting of a Store.
type Option func(*Store)

// WithLogger logs through log what a write leaves out to stay within
// the record's budget, and the pages it could not delete.
func WithLogger(log *slog.Logger) Option {
	return func(s *Store) { s.log = log }
}

// New returns the store of the ConfigMap name (DefaultName when empty)
// of namespace, through client.
func New(client ConfigMaps, namespace, name string, opts ...Option) *Store {
	s := &Store{client: client, Namespace: namespace, Name: cmp.Or(name, DefaultName),
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Load returns the recorded commits; none when there is no record yet.
func (s *Store) Load(ctx context.Context) ([]gitops.Pushed, error) {
	_, entries, err := s.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the record %s/%s: %w", s.Namespace, s.Name, err)
	}
	return entries, nil
}

// Update applies change to the recorded commits and writes the result,
// reading again and retrying when another run wrote the record meanwhile.
// The result is bounded to MaxEntries and to the record's budget, the
// newest kept. A record that cannot be read (ErrUnreadable) is left as
// it is: nothing is written.
func (s *Store) Update(ctx context.Context, change func([]gitops.Pushed) []gitops.Pushed) error {
	var err error
	for range attempts {
		if err = s.update(ctx, change); !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if errors.Is(err, ErrUnreadable) {
		return fmt.Errorf("writing the record %s/%s: %w; it is left as it is (delete it, and the ConfigMaps labelled %s=%s, to start a new one)",
			s.Namespace, s.Name, err, labelRecord, s.Name)
	}
	if err != nil {
		return fmt.Errorf("writing the record %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (s *Store) update(ctx context.Context, change func([]gitops.Pushed) []gitops.Pushed) error {
	head, entries, err := s.read(ctx)
	if err != nil {
		return err
	}
	create := head == nil
	if create {
		head = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
			Labels: map[string]string{labelManagedBy: "recommend-job"}}}
	}
	oldGen, oldPages := head.Annotations[annGeneration], pagesOf(head)
	entries = change(entries)
	slices.SortStableFunc(entries, func(a, b gitops.Pushed) int { return b.Time.Compare(a.Time) })
	if len(entries) > MaxEntries {
		s.log.WarnContext(ctx, "the record keeps the newest commits only: left out the oldest", "record", s.Name,
			"leftOut", len(entries)-MaxEntries, "maxEntries", MaxEntries, "newestLeftOut", entries[MaxEntries].Time)
		entries = entries[:MaxEntries]
	}
	pieces, n, err := encode(entries)
	if err != nil {
		return err
	}
	if n < len(entries) {
		s.log.WarnContext(ctx, "the record is over its budget: left out its oldest commits, which are not verified once merged",
			"record", s.Name, "leftOut", len(entries)-n, "newestLeftOut", entries[n].Time, "budget", fmt.Sprintf("%d pages of %d bytes, %d bytes inflated", MaxPages, MaxPage, maxData))
	}
	sum := sha256.New()
	for _, p := range pieces {
		sum.Write(p)
	}
	gen, err := generation()
	if err != nil {
		return err
	}
	// The pages first, the record that names them last: a write cut
	// short leaves the record as it was, and pages of no generation.
	var written []string
	for i, p := range pieces[1:] {
		page := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.pageName(gen, i+1), Namespace: s.Namespace,
			Labels:      map[string]string{labelManagedBy: "recommend-job", labelRecord: s.Name},
			Annotations: map[string]string{annGeneration: gen}},
			BinaryData: map[string][]byte{key: p}}
		if _, err := s.client.Create(ctx, page, metav1.CreateOptions{}); err != nil {
			s.delete(ctx, written)
			return fmt.Errorf("writing page %s: %w", page.Name, err)
		}
		written = append(written, page.Name)
	}
	if head.Annotations == nil {
		head.Annotations = map[string]string{}
	}
	head.Annotations[annGeneration] = gen
	head.Annotations[annPages] = strconv.Itoa(len(pieces))
	head.Annotations[annSHA256] = hex.EncodeToString(sum.Sum(nil))
	head.BinaryData = map[string][]byte{key: pieces[0]}
	head.Data = nil
	if create {
		_, err = s.client.Create(ctx, head, metav1.CreateOptions{})
	} else {
		_, err = s.client.Update(ctx, head, metav1.UpdateOptions{})
	}
	if err != nil {
		s.delete(ctx, written)
		return err
	}
	var old []string
	for i := 1; i < oldPages; i++ {
		old = append(old, s.pageName(oldGen, i))
	}
	s.delete(ctx, old)
	s.sweep(ctx, gen)
	return nil
}

// read returns the record and its entries; no record is none and no
// error. A record that is there but cannot be read is ErrUnreadable.
func (s *Store) read(ctx context.Context) (*corev1.ConfigMap, []gitops.Pushed, error) {
	head, err := s.client.Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := s.data(ctx, head)
	if err != nil {
		return nil, nil, err
	}
	entries, err := decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return head, entries, nil
}

// data returns the record's gzipped JSON, its pieces put together and
// checked against its checksum. A record of before the pages is its one
// piece, unchecked.
func (s *Store) data(ctx context.Context, head *corev1.ConfigMap) ([]byte, error) {
	first := head.BinaryData[key]
	if _, paged := head.Annotations[annPages]; !paged {
		return first, nil
	}
	n, gen := pagesOf(head), head.Annotations[annGeneration]
	if n < 1 || n > MaxPages || gen == "" {
		return nil, fmt.Errorf("%w: it says it has %q pages of generation %q", ErrUnreadable, head.Annotations[annPages], gen)
	}
	data := slices.Clone(first)
	for i := 1; i < n; i++ {
		name := s.pageName(gen, i)
		page, err := s.client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: its page %s is missing", ErrUnreadable, name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading page %s: %w", name, err)
		}
		data = append(data, page.BinaryData[key]...)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != head.Annotations[annSHA256] {
		return nil, fmt.Errorf("%w: its data does not match its checksum", ErrUnreadable)
	}
	return data, nil
}

// pagesOf is how many pieces the record's data is in, its own included:
// one for a record of before the pages.
func pagesOf(head *corev1.ConfigMap) int {
	v, ok := head.Annotations[annPages]
	if !ok {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

func (s *Store) pageName(gen string, i int) string {
	return fmt.Sprintf("%s-%s-%d", s.Name, gen, i)
}

// generation names a new generation of pages, unique to its writer: a
// time, for people, and a random part, for two runs that write at once.
func generation() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("naming the record's pages: %w", err)
	}
	return strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b), nil
}

// delete deletes pages the record no longer names. One that cannot be
// deleted is only logged: the record is whole without it, and a later
// write's sweep deletes it.
func (s *Store) delete(ctx context.Context, names []string) {
	for _, name := range names {
		if err := s.client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.log.WarnContext(ctx, "cannot delete a page the record no longer needs", "page", name, "error", err)
		}
	}
}

// sweep deletes the pages of generations other than gen old enough not
// to be another run's that has yet to write its record: those of writes
// that were cut short.
func (s *Store) sweep(ctx context.Context, gen string) {
	var orphans []string
	// In list pages of a few: each page of the record is up to MaxPage.
	opts := metav1.ListOptions{LabelSelector: labelRecord + "=" + s.Name, Limit: listPage}
	for {
		list, err := s.client.List(ctx, opts)
		if err != nil {
			s.log.WarnContext(ctx, "cannot list the record's pages to delete those of writes cut short", "error", err)
			return
		}
		for _, cm := range list.Items {
			if cm.Annotations[annGeneration] != gen && time.Since(cm.CreationTimestamp.Time) > orphanAge {
				orphans = append(orphans, cm.Name)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	s.delete(ctx, orphans)
}

// listPage is how many of the record's pages one list request asks for.
const listPage = 4

// encode returns the gzipped JSON of the newest n of entries, ordered
// newest first, in pieces of at most MaxPage bytes: n is as many as fit
// the record's budget, inflated (maxData) and gzipped (MaxPages pieces).
func encode(entries []gitops.Pushed) ([][]byte, int, error) {
	raws := make([][]byte, len(entries))
	size := len("[]\n")
	n := 0
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, 0, err
		}
		if size+len(b)+1 > maxData {
			break
		}
		raws[i], size, n = b, size+len(b)+1, i+1
	}
	for {
		data, err := gzipped(raws[:n])
		if err != nil {
			return nil, 0, err
		}
		if len(data) <= MaxPages*MaxPage || n == 0 {
			var pieces [][]byte
			for len(data) > MaxPage {
				pieces, data = append(pieces, data[:MaxPage]), data[MaxPage:]
			}
			return append(pieces, data), n, nil
		}
		// Fewer, in proportion, and at least one fewer.
		n = min(n-1, int(float64(n)*float64(MaxPages*MaxPage)/float64(len(data))))
	}
}

func gzipped(raws [][]byte) ([]byte, error) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	for i, r := range raws {
		sep := ","
		if i == 0 {
			sep = "["
		}
		if _, err := w.Write(append([]byte(sep), r...)); err != nil {
			return nil, err
		}
	}
	end := "]\n"
	if len(raws) == 0 {
		end = "[]\n"
	}
	if _, err := w.Write([]byte(end)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decode(data []byte) ([]gitops.Pushed, error) {
	if data == nil {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxData+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxData {
		return nil, fmt.Errorf("it inflates past %d bytes", maxData)
	}
	var entries []gitops.Pushed
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// Merge returns current with learnt and added folded in: an entry per
// commit, what was learnt of a commit (MergedAs) kept, entries older than
// keep left out, and the commits gone (settled as never merged) dropped.
// settled lists the commits a verification checked: those of them not in
// learnt are gone.
func Merge(current, learnt, added []gitops.Pushed, settled []string, keep time.Duration, now time.Time) []gitops.Pushed {
	byCommit := map[string]gitops.Pushed{}
	var order []string
	put := func(e gitops.Pushed) {
		old, ok := byCommit[e.Commit]
		if !ok {
			order = append(order, e.Commit)
		}
		if ok && e.MergedAs == "" {
			e.MergedAs = old.MergedAs
		}
		byCommit[e.Commit] = e
	}
	for _, e := range current {
		put(e)
	}
	kept := map[string]bool{}
	for _, e := range learnt {
		kept[e.Commit] = true
		put(e)
	}
	for _, c := range settled {
		if !kept[c] {
			delete(byCommit, c)
		}
	}
	for _, e := range added {
		put(e)
	}
	var out []gitops.Pushed
	for _, c := range order {
		if e, ok := byCommit[c]; ok && now.Sub(e.Time) <= keep {
			out = append(out, e)
			delete(byCommit, c)
		}
	}
	return out
}

// Superseded returns kept without the commits that a newer commit of the
// same pull request replaced. kept are the recorded commits a verification
// kept, all of whose pull requests the forge answered for; merged are the
// changes it found on the base branch. A commit of a pull request stops
// being its head once the job pushes a newer one, and the forge merges
// only a head: such a commit can never be merged, unless it was merged
// before the newer one was pushed, in which case the newer one is not
// kept (its pull request was merged with another head) or the older one
// is on the base branch. Only an open pull request's latest commit is
// kept, then, however often the job pushes to it.
func Superseded(kept []gitops.Pushed, merged []gitops.RecordedChange) []gitops.Pushed {
	onBase := map[string]bool{}
	for _, c := range merged {
		onBase[c.Commit] = true
	}
	type pr struct {
		branch string
		number int
	}
	newest := map[pr]time.Time{}
	for _, e := range kept {
		k := pr{e.Branch, e.PullRequest}
		if t, ok := newest[k]; e.PullRequest > 0 && (!ok || e.Time.After(t)) {
			newest[k] = e.Time
		}
	}
	var out []gitops.Pushed
	for _, e := range kept {
		replaced := e.PullRequest > 0 && e.MergedAs == "" && !onBase[e.Commit] && e.Time.Before(newest[pr{e.Branch, e.PullRequest}])
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}
