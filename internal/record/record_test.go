package record

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

func TestMerge(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	e := func(commit string, age time.Duration, mergedAs string) gitops.Pushed {
		return gitops.Pushed{Commit: commit, Time: now.Add(-age), MergedAs: mergedAs}
	}
	keep := 30 * 24 * time.Hour
	tests := []struct {
		name                   string
		current, learnt, added []gitops.Pushed
		checked                []string
		want                   []string
	}{
		{name: "added to what was",
			current: []gitops.Pushed{e("a", time.Hour, "")}, added: []gitops.Pushed{e("b", 0, "")},
			want: []string{"a:", "b:"}},
		{name: "what a check learnt kept, what it settled dropped",
			current: []gitops.Pushed{e("a", time.Hour, ""), e("b", time.Hour, ""), e("c", time.Hour, "")},
			learnt:  []gitops.Pushed{e("a", time.Hour, "m")}, checked: []string{"a", "b"},
			want: []string{"a:m", "c:"}},
		{name: "a commit another run recorded meanwhile is kept",
			current: []gitops.Pushed{e("a", time.Hour, ""), e("z", time.Minute, "")},
			learnt:  []gitops.Pushed{e("a", time.Hour, "")}, checked: []string{"a"},
			want: []string{"a:", "z:"}},
		{name: "what was learnt is not forgotten by a later run's own copy",
			current: []gitops.Pushed{e("a", time.Hour, "m")}, learnt: []gitops.Pushed{e("a", time.Hour, "")}, checked: []string{"a"},
			want: []string{"a:m"}},
		{name: "older than keep left out",
			current: []gitops.Pushed{e("old", keep+time.Hour, "m"), e("a", time.Hour, "")},
			want:    []string{"a:"}},
		{name: "the same commit pushed again is one entry",
			current: []gitops.Pushed{e("a", time.Hour, "")}, added: []gitops.Pushed{e("a", 0, "")},
			want: []string{"a:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range Merge(tt.current, tt.learnt, tt.added, tt.checked, keep, now) {
				got = append(got, p.Commit+":"+p.MergedAs)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Merge() = %v, want %v", got, tt.want)
			}
		})
	}
}

// limited is a fake apiserver's ConfigMaps that refuses, as the
// apiserver does, a ConfigMap whose data and binary data take more than
// 1 MiB together; largest is the most one held.
func limited(t *testing.T) (*fake.Clientset, *int) {
	t.Helper()
	client := fake.NewClientset()
	largest := new(int)
	check := func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
		size := 0
		for _, v := range cm.Data {
			size += len(v)
		}
		for _, v := range cm.BinaryData {
			size += len(v)
		}
		if size > 1<<20 {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, cm.Name,
				field.ErrorList{field.TooLong(field.NewPath(""), "", 1<<20)})
		}
		*largest = max(*largest, size)
		return false, nil, nil
	}
	client.PrependReactor("create", "configmaps", check)
	client.PrependReactor("update", "configmaps", check)
	return client, largest
}

// TestStoreRoundTrip writes the record, reads it back, and bounds it to
// the newest MaxEntries.
func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	client, _ := limited(t)
	s := New(client.CoreV1().ConfigMaps("recommend-job"), "recommend-job", "")
	if got, err := s.Load(ctx); err != nil || got != nil {
		t.Fatalf("Load() of no record = %v, %v; want nothing", got, err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed {
		for i := range MaxEntries + 10 {
			cur = append(cur, gitops.Pushed{Commit: fmt.Sprintf("%040d", i), Time: start.Add(time.Duration(i) * time.Minute),
				Changes: "Recommend-Job-Change: shop/web app cpu 1 500m\n"})
		}
		return cur
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxEntries || got[0].Commit != fmt.Sprintf("%040d", MaxEntries+9) || got[len(got)-1].Commit != fmt.Sprintf("%040d", 10) {
		t.Fatalf("Load() = %d entries from %s to %s, want the newest %d", len(got), got[0].Commit, got[len(got)-1].Commit, MaxEntries)
	}
}

// TestStorePages writes a record larger than a ConfigMap may be: it is
// written in pages, each accepted, read back whole, and a later write of
// fewer pages deletes the pages of the generation it replaced.
func TestStorePages(t *testing.T) {
	ctx := context.Background()
	client, largest := limited(t)
	cms := client.CoreV1().ConfigMaps("recommend-job")
	s := New(cms, "recommend-job", "")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 2))
	var want []gitops.Pushed
	for i := range 12 {
		// Random values: they compress about as little as real ones.
		var b strings.Builder
		for j := range 10000 {
			fmt.Fprintf(&b, "Recommend-Job-Change: team-%d/app-%d-%d main cpu %dm %dm\n", j%40, i, j, r.IntN(4000), r.IntN(4000))
		}
		want = append(want, gitops.Pushed{Commit: fmt.Sprintf("%040x", i), Branch: fmt.Sprintf("recommend-job/team-%d", i),
			PullRequest: i + 1, Time: start.Add(time.Duration(12-i) * time.Hour), Changes: b.String()})
	}
	if err := s.Update(ctx, func([]gitops.Pushed) []gitops.Pushed { return want }); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 2 {
		t.Errorf("the record takes %d ConfigMaps, want pages", len(list.Items))
	}
	if *largest > MaxPage {
		t.Errorf("a ConfigMap of the record holds %d bytes, want at most %d", *largest, MaxPage)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got[0].Changes != want[0].Changes || got[11].Changes != want[11].Changes {
		t.Fatalf("Load() = %d entries, want the %d written, whole", len(got), len(want))
	}
	if err := s.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed { return cur[:1] }); err != nil {
		t.Fatal(err)
	}
	if list, err = cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("after a write of one entry the record takes %d ConfigMaps, want 1: the old pages deleted", len(list.Items))
	}
}

// TestUpdateRefusesUnreadable checks that a record that is there but
// cannot be read is neither read nor written over: Load and Update fail,
// and every ConfigMap of the record is as it was. Before, Update replaced
// it with the run's entries, dropping every other commit.
func TestUpdateRefusesUnreadable(t *testing.T) {
	ctx := context.Background()
	var bomb bytes.Buffer
	w := gzip.NewWriter(&bomb)
	if _, err := w.Write(make([]byte, maxData+1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	notJSON := func() []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte("[{\"commit\":"))
		_ = w.Close()
		return b.Bytes()
	}()
	tests := []struct {
		name string
		// spoil spoils the record of a few pages.
		spoil func(t *testing.T, cms corev1client.ConfigMapInterface)
	}{
		{name: "not gzip", spoil: setData([]byte("not gzip"), nil)},
		{name: "inflates past the bound", spoil: setData(bomb.Bytes(), nil)},
		{name: "not JSON", spoil: setData(notJSON, nil)},
		{name: "a page missing", spoil: func(t *testing.T, cms corev1client.ConfigMapInterface) {
			if err := cms.Delete(ctx, pageOf(t, cms), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a page edited", spoil: func(t *testing.T, cms corev1client.ConfigMapInterface) {
			page, err := cms.Get(ctx, pageOf(t, cms), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			page.BinaryData[key][100] ^= 1
			if _, err := cms.Update(ctx, page, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, _ := limited(t)
			cms := client.CoreV1().ConfigMaps("recommend-job")
			s := New(cms, "recommend-job", "")
			r := rand.New(rand.NewPCG(3, 4))
			var b strings.Builder
			for j := range 100000 {
				fmt.Fprintf(&b, "Recommend-Job-Change: team-%d/app-%d main cpu %dm %dm\n", j%40, j, r.IntN(4000), r.IntN(4000))
			}
			if err := s.Update(ctx, func([]gitops.Pushed) []gitops.Pushed {
				return []gitops.Pushed{{Commit: "a", Time: time.Now(), Changes: b.String()}}
			}); err != nil {
				t.Fatal(err)
			}
			tt.spoil(t, cms)
			before, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(ctx); !errors.Is(err, ErrUnreadable) {
				t.Errorf("Load() = %v, want ErrUnreadable", err)
			}
			err = s.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed {
				return append(cur, gitops.Pushed{Commit: "b", Time: time.Now()})
			})
			if !errors.Is(err, ErrUnreadable) {
				t.Errorf("Update() = %v, want ErrUnreadable", err)
			}
			after, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Items, after.Items); diff != "" {
				t.Errorf("Update() of an unreadable record changed it (-before +after):\n%s", diff)
			}
		})
	}
}

// setData returns a spoiler that sets the record's own data, with the
// annotations of a record of before the pages (none) when ann is nil.
func setData(data []byte, ann map[string]string) func(*testing.T, corev1client.ConfigMapInterface) {
	return func(t *testing.T, cms corev1client.ConfigMapInterface) {
		t.Helper()
		ctx := context.Background()
		cm, err := cms.Get(ctx, DefaultName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.BinaryData = map[string][]byte{key: data}
		cm.Annotations = ann
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// pageOf returns the name of a page of the record, other than its own.
func pageOf(t *testing.T, cms corev1client.ConfigMapInterface) string {
	t.Helper()
	list, err := cms.List(context.Background(), metav1.ListOptions{LabelSelector: labelRecord + "=" + DefaultName})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("the record has no pages")
	}
	return list.Items[0].Name
}

func TestSuperseded(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	e := func(commit string, pr int, age time.Duration, mergedAs string) gitops.Pushed {
		return gitops.Pushed{Commit: commit, Branch: fmt.Sprintf("recommend-job/g%d", pr), PullRequest: pr, Time: now.Add(-age), MergedAs: mergedAs}
	}
	tests := []struct {
		name   string
		kept   []gitops.Pushed
		onBase []string
		want   []string
	}{
		{name: "an open pull request keeps its newest commit",
			kept: []gitops.Pushed{e("a1", 1, 48*time.Hour, ""), e("a2", 1, 24*time.Hour, ""), e("a3", 1, 0, "")},
			want: []string{"a3"}},
		{name: "each pull request its own",
			kept: []gitops.Pushed{e("a1", 1, 24*time.Hour, ""), e("b1", 2, 48*time.Hour, "")},
			want: []string{"a1", "b1"}},
		{name: "a commit merged by squash stays",
			kept: []gitops.Pushed{e("a1", 1, 24*time.Hour, "m1"), e("a2", 1, 0, "")},
			want: []string{"a1", "a2"}},
		{name: "a commit on the base branch stays",
			kept: []gitops.Pushed{e("a1", 1, 24*time.Hour, ""), e("a2", 1, 0, "")}, onBase: []string{"a1"},
			want: []string{"a1", "a2"}},
		{name: "direct pushes all stay",
			kept: []gitops.Pushed{e("d1", 0, 24*time.Hour, ""), e("d2", 0, 0, "")},
			want: []string{"d1", "d2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var merged []gitops.RecordedChange
			for _, c := range tt.onBase {
				merged = append(merged, gitops.RecordedChange{Commit: c})
			}
			var got []string
			for _, p := range Superseded(tt.kept, merged) {
				got = append(got, p.Commit)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Superseded() = %v, want %v", got, tt.want)
			}
		})
	}
}
