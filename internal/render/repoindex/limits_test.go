package repoindex

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestReadLimited checks that a file is read whole up to the limit, and
// refused above it or when it is not a regular file.
func TestReadLimited(t *testing.T) {
	fsys := fstest.MapFS{
		"small.yaml": {Data: []byte("a: 1\n")},
		"exact.yaml": {Data: []byte(strings.Repeat("x", 100))},
		"large.yaml": {Data: []byte(strings.Repeat("x", 101))},
		"link.yaml":  {Data: []byte("small.yaml"), Mode: fs.ModeSymlink},
		"dir/a.yaml": {Data: []byte("a")},
	}
	tests := []struct {
		name  string
		limit int64
		size  int
		err   error // nil: read; errTest: any error
		why   string
	}{
		{name: "small.yaml", limit: 100, size: 5},
		{name: "exact.yaml", limit: 100, size: 100},
		{name: "large.yaml", limit: 100, err: ErrFileTooLarge, why: "large.yaml is 101 bytes, above max-file-size 100"},
		{name: "large.yaml", limit: 0, size: 101},
		{name: "large.yaml", limit: -1, size: 101},
		{name: "dir", limit: 100, err: errTest, why: "not a regular file"},
		{name: "link.yaml", limit: 100, size: 5}, // the file it points to
		{name: "missing.yaml", limit: 100, err: fs.ErrNotExist, why: "missing.yaml"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s under %d", tt.name, tt.limit), func(t *testing.T) {
			data, info, err := ReadLimited(fsys, tt.name, tt.limit)
			if tt.err != nil {
				if err == nil || tt.err != errTest && !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("ReadLimited = %d bytes, %v; want %v saying %q", len(data), err, tt.err, tt.why)
				}
				return
			}
			if err != nil || len(data) != tt.size || info.Size() != int64(tt.size) {
				t.Errorf("ReadLimited = %d bytes, %v; want %d", len(data), err, tt.size)
			}
		})
	}
}

// errTest stands for any error in a table.
var errTest = errors.New("any error")

// TestCheckAliases checks that aliases that expand too far, or into
// themselves, are refused, and ordinary ones pass.
func TestCheckAliases(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f"} {
		laughs += fmt.Sprintf("%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	tests := []struct {
		name, in string
		bomb     bool
	}{
		{"no alias", "a: 1\nb: [1, 2]\n", false},
		{"an ampersand in text only", "a: 'x & y'\n", false},
		{"ordinary aliases", "base: &b {cpu: 1}\nweb: *b\napi: *b\n", false},
		{"billion laughs", laughs, true},
		{"an anchor holding its own alias", "a: &a [1, *a]\n", true},
		{"does not parse", "a: &a [*a\n", false},
	}
	for _, tt := range tests {
		err := CheckAliases([]byte(tt.in))
		if got := errors.Is(err, ErrAliasBomb); got != tt.bomb {
			t.Errorf("%s: CheckAliases = %v, want a bomb %v", tt.name, err, tt.bomb)
		}
	}
}

// TestExpansion checks that an alias counts what its anchor does each
// time it is reached, and every node is counted once as written.
func TestExpansion(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: &a [1, 2]\nb: *a\nc: *a\n"), &doc); err != nil {
		t.Fatal(err)
	}
	e := Expansion{Weight: func(*yaml.Node) int64 { return 1 }}
	// document 1 + mapping 1 + keys 3 + [1, 2] 3, twice more through b and c.
	if got := e.Size(&doc); got != 14 {
		t.Errorf("Size = %d, want 14", got)
	}
	if got := e.Counted(); got != 10 {
		t.Errorf("Counted = %d, want 10: the nodes as written, aliases included", got)
	}
	if got := e.Size(nil); got != 0 {
		t.Errorf("Size(nil) = %d", got)
	}
}

// TestProofFS checks that a proof reads the run's edits over the
// repository, and refuses files above the limit and alias bombs.
func TestProofFS(t *testing.T) {
	disk := filesys.MakeFsInMemory()
	for name, data := range map[string]string{
		"/r/web.yaml":   "a: 1\n",
		"/r/large.yaml": strings.Repeat("x", 200),
		"/r/bomb.yaml":  "a: &a [1, *a]\n",
	} {
		if err := disk.WriteFile(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	p := ProofFS{FileSystem: disk, Root: "/r", Limit: 100, Files: map[string][]byte{"/r/web.yaml": []byte("a: 2\n"), "/r/new.yaml": []byte("n: 1\n")}}
	if data, err := p.ReadFile("/r/web.yaml"); err != nil || string(data) != "a: 2\n" {
		t.Errorf("edited file = %q, %v; want the edit", data, err)
	}
	if !p.Exists("/r/new.yaml") || p.Exists("/r/none.yaml") {
		t.Error("Exists does not see the new file, or sees a missing one")
	}
	if _, err := p.ReadFile("/r/large.yaml"); !errors.Is(err, ErrFileTooLarge) || !strings.Contains(err.Error(), "large.yaml is 200 bytes") {
		t.Errorf("large file = %v, want ErrFileTooLarge naming it from the root", err)
	}
	if _, err := p.ReadFile("/r/bomb.yaml"); !errors.Is(err, ErrAliasBomb) || !strings.HasPrefix(err.Error(), "bomb.yaml: ") {
		t.Errorf("alias bomb = %v, want ErrAliasBomb naming bomb.yaml", err)
	}
	p.Files["/r/web.yaml"] = []byte("a: &a [1, *a]\n")
	if _, err := p.ReadFile("/r/web.yaml"); !errors.Is(err, ErrAliasBomb) {
		t.Errorf("an edit that is an alias bomb = %v, want ErrAliasBomb", err)
	}
}
