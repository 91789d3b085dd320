package yamledit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func mustParse(t *testing.T, in string) []*yaml.Node {
	t.Helper()
	docs, err := ParseDocuments([]byte(in))
	if err != nil {
		t.Fatalf("parse %q: %v", in, err)
	}
	return docs
}

// TestVerify checks that an edited file passes only when it means the
// model, whatever its style, and keeps the model's comments when asked.
func TestVerify(t *testing.T) {
	const model = "# c\na: 1\nb: x\n"
	tests := []struct {
		name, edited string
		comments     bool
		ok           bool
	}{
		{"same", model, true, true},
		{"other style", "{a: 1, 'b': \"x\"} # c\n", true, true},
		{"comment dropped, not checked", "a: 1\nb: x\n", false, true},
		{"comment dropped", "a: 1\nb: x\n", true, false},
		{"comment doubled", "# c\na: 1 # c\nb: x\n", true, false},
		{"value differs", "# c\na: 2\nb: x\n", true, false},
		{"tag differs", "# c\na: \"1\"\nb: x\n", true, false},
		{"key added", "# c\na: 1\nb: x\nc: y\n", true, false},
		{"another document", "# c\na: 1\nb: x\n---\na: 1\n", true, false},
		{"does not parse", "a: [\n", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := mustParse(t, model)
			var comments []string
			if tt.comments {
				comments = CollectComments(docs)
			}
			_, err := Verify([]byte(tt.edited), docs, comments)
			if (err == nil) != tt.ok {
				t.Errorf("Verify = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestSameNode checks that style does not count and meaning does.
func TestSameNode(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"a: x", "'a': \"x\"", true},
		{"a: [1, 2]", "a:\n- 1\n- 2", true},
		{"a: 1 # c", "a: 1", true},
		{"a: 1", "a: '1'", false},
		{"a: [1, 2]", "a: [2, 1]", false},
		{"a: &x 1", "a: 1", false},
		{"a: 1\nb: 2", "b: 2\na: 1", false},
		{"a: ~", "a: null", false},
	}
	for _, tt := range tests {
		if got := SameNode(mustParse(t, tt.a)[0], mustParse(t, tt.b)[0]); got != tt.same {
			t.Errorf("SameNode(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

// TestCollectComments checks that every comment line is found, sorted,
// and that a file without any gives an empty list, not nil.
func TestCollectComments(t *testing.T) {
	docs := mustParse(t, "# z head\na: 1 # m line\n# b foot\n---\nb: 2 # a other\n")
	want := []string{"# a other", "# b foot", "# m line", "# z head"}
	if got := CollectComments(docs); !slices.Equal(got, want) {
		t.Errorf("CollectComments = %q, want %q", got, want)
	}
	if got := CollectComments(mustParse(t, "a: 1\n")); got == nil || len(got) != 0 {
		t.Errorf("CollectComments without comments = %#v, want an empty list", got)
	}
}

// TestParseDocuments checks that positions count from the start of the
// stream, and that what is not UTF-8 is refused.
func TestParseDocuments(t *testing.T) {
	docs := mustParse(t, "a: 1\n---\nb: 2\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	if k, _, _ := Lookup(DocRoot(docs[1]), "b"); k == nil || k.Line != 3 {
		t.Errorf("second document's key at line %v, want 3", k)
	}
	if _, err := ParseDocuments([]byte("a: \xff\n")); err == nil {
		t.Error("invalid UTF-8 parsed")
	}
	if docs := mustParse(t, ""); len(docs) != 0 {
		t.Errorf("empty stream: %d documents", len(docs))
	}
	if DocRoot(nil) != nil || DocRoot(DocRoot(docs[0])) != nil {
		t.Error("DocRoot of what is not a document is not nil")
	}
}

// TestLookup checks keys found as written: no alias or merge key
// resolved, a second occurrence reported.
func TestLookup(t *testing.T) {
	root := DocRoot(mustParse(t, "a: 1\nb: x\nb: y\nbase: &s {n: web}\nref: *s\nn: 3\nt: !!str 4\nnull: ~\n<<: {m: 1}\n")[0])
	if k, v, dup := Lookup(root, "a"); k == nil || v.Value != "1" || dup {
		t.Errorf("Lookup(a) = %v, %v, %v", k, v, dup)
	}
	if _, v, dup := Lookup(root, "b"); !dup || v.Value != "x" {
		t.Errorf("Lookup(b) = %v, dup %v; want the first and dup", v, dup)
	}
	if k, _, _ := Lookup(root, "m"); k != nil {
		t.Error("Lookup resolved a merge key")
	}
	if k, _, _ := Lookup(DocRoot(mustParse(t, "[a]")[0]), "a"); k != nil {
		t.Error("Lookup found a key in a list")
	}
	for _, tt := range []struct {
		m, key, want string
		ok           bool
	}{
		{"root", "a", "", false}, // an int
		{"root", "b", "", false}, // twice
		{"root", "t", "4", true},
		{"root", "null", "", false},
		{"ref", "n", "web", true}, // through the alias
		{"root", "missing", "", false},
	} {
		m := root
		if tt.m == "ref" {
			_, m, _ = Lookup(root, "ref")
			m = m.Alias
		}
		if got, ok := ScalarField(m, tt.key); got != tt.want || ok != tt.ok {
			t.Errorf("ScalarField(%s, %s) = %q, %v; want %q, %v", tt.m, tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if got, ok := ScalarField(DocRoot(mustParse(t, "base: &s {n: web}\nx: *s\n")[0]), "x"); ok {
		t.Errorf("ScalarField of an alias of a mapping = %q, want none", got)
	}
}

// TestIsNull checks the empty values a fill turns into a mapping.
func TestIsNull(t *testing.T) {
	for in, want := range map[string]bool{
		"v:": true, "v: ~": true, "v: null": true, "v: {}": true, "v: Null": true,
		"v: ''": false, "v: []": false, "v: 0": false, "v: {a: 1}": false, "v: 'null'": false,
	} {
		_, v, _ := Lookup(DocRoot(mustParse(t, in)[0]), "v")
		if got := IsNull(v); got != want {
			t.Errorf("IsNull(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestSameQuantity checks that a value is compared as a quantity, however
// it is spelled.
func TestSameQuantity(t *testing.T) {
	tests := []struct {
		in, want string
		same     bool
	}{
		{"v: 0.25", "250m", true},
		{"v: '250m'", "0.25", true},
		{"v: 1Gi", "1073741824", true},
		{"v: 1G", "1Gi", false},
		{"v: ~", "0", false},
		{"v: lots", "1", false},
		{"v: ' 2 '", "2", true},
	}
	for _, tt := range tests {
		_, v, _ := Lookup(DocRoot(mustParse(t, tt.in)[0]), "v")
		if got := SameQuantity(v, resource.MustParse(tt.want)); got != tt.same {
			t.Errorf("SameQuantity(%q, %s) = %v, want %v", tt.in, tt.want, got, tt.same)
		}
	}
}

// TestEntries checks the lines and flow text written for new keys.
func TestEntries(t *testing.T) {
	entries := ResourceEntries(
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("250m")},
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	)
	lines := BlockLines(entries, 2, 4, nil)
	want := []string{"  requests:", "      cpu: 250m", "      memory: 1Gi", "  limits:", "      memory: 2Gi"}
	if !slices.Equal(lines, want) {
		t.Errorf("BlockLines = %q, want %q", lines, want)
	}
	if q := entries[0].Children[1].Quantity; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("memory entry's quantity = %s, want 1Gi", q.String())
	}
	if got := ResourceEntries(nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}); len(got) != 1 || got[0].Key != "limits" {
		t.Errorf("ResourceEntries without requests = %+v, want limits alone", got)
	}
	if got := FlowText(entries, false); got != "requests: {cpu: 250m, memory: 1Gi}, limits: {memory: 2Gi}" {
		t.Errorf("FlowText = %q", got)
	}
	if got := FlowText(entries[1:], true); got != `"limits": {"memory": "2Gi"}` {
		t.Errorf("FlowText as JSON = %q", got)
	}
	if got := BlockText([]string{"a", "b"}, "\r\n", false); got != "a\r\nb\r\n" {
		t.Errorf("BlockText = %q", got)
	}
	if got := BlockText([]string{"a", "b"}, "\n", true); got != "\na\nb" {
		t.Errorf("BlockText after a last line without a break = %q", got)
	}
	root := DocRoot(mustParse(t, "p: a\nd: \"a\"\ns: 'a'\n")[0])
	for key, want := range map[string]string{"p": "1Gi", "d": `"1Gi"`, "s": "'1Gi'"} {
		_, v, _ := Lookup(root, key)
		if got := Styled(v, "1Gi"); got != want {
			t.Errorf("Styled(%s) = %s, want %s", key, got, want)
		}
	}
}

// TestIndentStep checks the step is read from the container first, then
// the document, and is 2 when neither nests a block mapping.
func TestIndentStep(t *testing.T) {
	doc := DocRoot(mustParse(t, "spec:\n    template:\n        x: 1\nc:\n  - name: a\n    env:\n       k: v\nflow: {a: {b: 1}}\n")[0])
	_, c, _ := Lookup(doc, "c")
	_, flow, _ := Lookup(doc, "flow")
	tests := []struct {
		name  string
		nodes []*yaml.Node
		want  int
	}{
		{"container first", []*yaml.Node{c, doc}, 3},
		{"the document", []*yaml.Node{flow, doc}, 4},
		{"nothing nested", []*yaml.Node{flow}, 2},
		{"nil", []*yaml.Node{nil}, 2},
	}
	for _, tt := range tests {
		if got := IndentStep(tt.nodes...); got != tt.want {
			t.Errorf("%s: IndentStep = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestUnsafeNode checks the refusals of nodes an edit could not change on
// their own, anywhere below for UnsafeTree.
func TestUnsafeNode(t *testing.T) {
	root := DocRoot(mustParse(t, "clean: {a: 1}\nanchored: &x {a: 1}\nalias: *x\nmerged: {<<: *x, b: 2}\ndeep: {a: {b: &y 1}}\n")[0])
	for _, tt := range []struct {
		key            string
		node, subtree  bool
		nodeWhy, treeW string
	}{
		{key: "clean"},
		{key: "anchored", node: true, subtree: true, nodeWhy: "anchor (&x)"},
		{key: "alias", node: true, subtree: true, nodeWhy: "alias (*x)"},
		{key: "merged", node: true, subtree: true, nodeWhy: "merge key"},
		{key: "deep", subtree: true, treeW: "anchor (&y)"},
	} {
		_, v, _ := Lookup(root, tt.key)
		err := UnsafeNode(v, tt.key)
		if (err != nil) != tt.node || err != nil && !strings.Contains(err.Error(), tt.nodeWhy) {
			t.Errorf("UnsafeNode(%s) = %v, want refused %v saying %q", tt.key, err, tt.node, tt.nodeWhy)
		}
		err = UnsafeTree(v, tt.key)
		if (err != nil) != tt.subtree || tt.treeW != "" && !strings.Contains(err.Error(), tt.treeW) {
			t.Errorf("UnsafeTree(%s) = %v, want refused %v", tt.key, err, tt.subtree)
		}
	}
}

// TestWriteFile checks that a file is replaced whole with its given
// permissions, whatever the umask, and no temporary file is left.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "apps", "web.yaml"), []byte("old content, longer than the new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	for _, perm := range []os.FileMode{0o640, 0o666} {
		if err := WriteFile(r, "apps/web.yaml", []byte("a: 1\n"), perm); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(dir, "apps", "web.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != perm {
			t.Errorf("mode %v, want %v", info.Mode().Perm(), perm)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "apps", "web.yaml"))
	if string(data) != "a: 1\n" {
		t.Errorf("content %q", data)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "apps"))
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
	if err := WriteFile(r, "../outside.yaml", []byte("x"), 0o644); err == nil {
		t.Error("wrote outside the root")
	}
	if err := WriteFile(r, "missing/web.yaml", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "missing/web.yaml") {
		t.Errorf("write into a missing directory = %v, want an error naming the file", err)
	}
}
