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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// DefaultName is the record's ConfigMap.
const DefaultName = "recommend-job-record"

// key is the ConfigMap's binary data key: the entries as gzipped JSON.
const key = "pushed.json.gz"

// MaxEntries bounds the record, newest kept: far more than the pull
// requests of the weeks a change is watched, and small enough that the
// ConfigMap stays well under the apiserver's 1 MiB.
const MaxEntries = 4000

// maxData bounds what the record's data inflates to when read.
const maxData = 16 << 20

// attempts is how often Update tries when another run wrote the record
// between its read and its write.
const attempts = 5

// ConfigMaps is the little of the apiserver's ConfigMap API the record
// needs; client-go's typed ConfigMapInterface is one.
type ConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
}

// Store reads and writes the record.
type Store struct {
	client ConfigMaps
	// Namespace and Name say where the record is, for messages.
	Namespace, Name string
}

// New returns the store of the ConfigMap name (DefaultName when empty)
// of namespace, through client.
func New(client ConfigMaps, namespace, name string) *Store {
	return &Store{client: client, Namespace: namespace, Name: cmp.Or(name, DefaultName)}
}

// Load returns the recorded commits; none when there is no record yet.
func (s *Store) Load(ctx context.Context) ([]gitops.Pushed, error) {
	cm, err := s.client.Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record %s/%s: %w", s.Namespace, s.Name, err)
	}
	entries, err := decode(cm)
	if err != nil {
		return nil, fmt.Errorf("reading the record %s/%s: %w", s.Namespace, s.Name, err)
	}
	return entries, nil
}

// Update applies change to the recorded commits and writes the result,
// reading again and retrying when another run wrote the record meanwhile.
// The result is bounded to MaxEntries, the newest kept.
func (s *Store) Update(ctx context.Context, change func([]gitops.Pushed) []gitops.Pushed) error {
	var err error
	for range attempts {
		if err = s.update(ctx, change); !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing the record %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (s *Store) update(ctx context.Context, change func([]gitops.Pushed) []gitops.Pushed) error {
	cm, err := s.client.Get(ctx, s.Name, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	var entries []gitops.Pushed
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "recommend-job"}}}
	} else if entries, err = decode(cm); err != nil {
		// A record that cannot be read is replaced: what it held proves
		// nothing any more.
		entries = nil
	}
	entries = change(entries)
	slices.SortStableFunc(entries, func(a, b gitops.Pushed) int { return b.Time.Compare(a.Time) })
	if len(entries) > MaxEntries {
		entries = entries[:MaxEntries]
	}
	data, err := encode(entries)
	if err != nil {
		return err
	}
	cm.BinaryData = map[string][]byte{key: data}
	cm.Data = nil
	if create {
		_, err = s.client.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		_, err = s.client.Update(ctx, cm, metav1.UpdateOptions{})
	}
	return err
}

func encode(entries []gitops.Pushed) ([]byte, error) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if err := json.NewEncoder(w).Encode(entries); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decode(cm *corev1.ConfigMap) ([]gitops.Pushed, error) {
	data, ok := cm.BinaryData[key]
	if !ok {
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
		return nil, errors.New("the record inflates past its bound")
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
