package record

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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

// TestStoreRoundTrip writes the record, reads it back, bounds it to the
// newest MaxEntries, and replaces a record it cannot read.
func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset()
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
	cm, err := client.CoreV1().ConfigMaps("recommend-job").Get(ctx, DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size := len(cm.BinaryData[key]); size > 512<<10 {
		t.Errorf("the record of %d entries takes %d bytes, want well under the apiserver's 1 MiB", MaxEntries, size)
	}

	cm.BinaryData = map[string][]byte{key: []byte("not gzip")}
	if _, err := client.CoreV1().ConfigMaps("recommend-job").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx); err == nil {
		t.Error("Load() of a record that cannot be read: no error")
	}
	if err := s.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed {
		return append(cur, gitops.Pushed{Commit: "a", Time: start})
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx); err != nil || len(got) != 1 || got[0].Commit != "a" {
		t.Errorf("Load() after replacing an unreadable record = %v, %v; want the one new entry", got, err)
	}
}
