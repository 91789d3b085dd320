package edits

import (
	"errors"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestFileBytes covers a file's bytes as edited and as they were: Dirty,
// SetData, Revert and CurrentDocs following them.
func TestFileBytes(t *testing.T) {
	orig := []byte("kind: A\n---\nkind: B\n")
	fe := newFile(&repoindex.IndexedFile{Name: "f.yaml", Data: orig})
	steps := []struct {
		name  string
		do    func()
		dirty bool
		docs  int // documents CurrentDocs returns, -1 for an error
	}{
		{name: "as read", do: func() {}, docs: 2},
		{name: "new bytes", do: func() { fe.SetData([]byte("kind: A\n")) }, dirty: true, docs: 1},
		{name: "bytes that do not parse", do: func() { fe.SetData([]byte("kind: [\n")) }, dirty: true, docs: -1},
		{name: "reverted", do: fe.Revert, docs: 2},
		{name: "set back to the same bytes", do: func() { fe.SetData([]byte(string(orig))) }, docs: 2},
	}
	for _, s := range steps {
		s.do()
		if fe.Dirty() != s.dirty {
			t.Errorf("%s: Dirty = %v, want %v", s.name, fe.Dirty(), s.dirty)
		}
		docs, err := fe.CurrentDocs()
		switch {
		case s.docs < 0 && (err == nil || !strings.Contains(err.Error(), "f.yaml")):
			t.Errorf("%s: CurrentDocs error %v, want one naming f.yaml", s.name, err)
		case s.docs >= 0 && (err != nil || len(docs) != s.docs):
			t.Errorf("%s: CurrentDocs = %d documents, %v; want %d", s.name, len(docs), err, s.docs)
		}
	}
}

// TestApplyAt covers setting values at a path of mapping keys from a
// document's root, creating the keys that are missing.
func TestApplyAt(t *testing.T) {
	const widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n"
	tests := []struct {
		name   string
		in     string
		doc    int
		path   []string
		direct bool
		want   string // "" when the input must stay as it is
		err    error  // sentinel, or errAny
	}{{
		name: "missing keys are created under the last one there",
		in:   widget,
		path: []string{"spec", "app"},
		want: widget + "  app:\n    resources:\n      requests:\n        cpu: 250m\n",
	}, {
		name:   "the resources mapping itself, created",
		in:     widget,
		path:   []string{"spec", "res"},
		direct: true,
		want:   widget + "  res:\n    requests:\n      cpu: 250m\n",
	}, {
		name:   "the resources mapping itself, its value replaced",
		in:     widget + "  res:\n    requests:\n      cpu: 1 # was\n",
		path:   []string{"spec", "res"},
		direct: true,
		want:   widget + "  res:\n    requests:\n      cpu: 250m # was\n",
	}, {
		name: "an empty key is filled",
		in:   widget + "  app:\n",
		path: []string{"spec", "app"},
		want: widget + "  app:\n    resources:\n      requests:\n        cpu: 250m\n",
	}, {
		name: "in the second document",
		in:   "kind: Other\n---\n" + widget,
		doc:  1,
		path: []string{"spec", "app"},
		want: "kind: Other\n---\n" + widget + "  app:\n    resources:\n      requests:\n        cpu: 250m\n",
	}, {
		name: "a key on the way is not a mapping",
		in:   widget,
		path: []string{"spec", "size", "app"},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "a key on the way is defined twice",
		in:   widget + "spec:\n  size: 2\n",
		path: []string{"spec", "app"},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "the document is gone",
		in:   widget,
		doc:  1,
		path: []string{"spec"},
		err:  errAny,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := newFile(&repoindex.IndexedFile{Name: "w.yaml", Data: []byte(tt.in)})
			changed, err := fe.ApplyAt(requests("app", "cpu", "250m"), tt.doc, tt.path, tt.direct)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.err == errAny && err == nil, tt.err != nil && tt.err != errAny && !errors.Is(err, tt.err): //nolint:errorlint // errAny is a marker of the table, not an error
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if msg := firstDiff([]byte(want), fe.Data); msg != "" {
				t.Errorf("%s\ngot:\n%s", msg, fe.Data)
			}
			if changed != (tt.want != "") {
				t.Errorf("changed = %v, want %v", changed, tt.want != "")
			}
		})
	}
}
