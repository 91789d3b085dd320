package yamledit

import (
	"errors"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestSourceLines checks that lines are split at the YAML parser's line
// breaks, each line's own break is reported, and a BOM is not part of the
// first line's text.
func TestSourceLines(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		texts  []string
		breaks []string
		def    string
	}{
		{"LF", "a: 1\nb: 2\n", []string{"a: 1", "b: 2", ""}, []string{"\n", "\n", ""}, "\n"},
		{"CRLF without a final break", "a: 1\r\nb: 2", []string{"a: 1", "b: 2"}, []string{"\r\n", ""}, "\r\n"},
		{"CR", "a: 1\rb: 2\r", []string{"a: 1", "b: 2", ""}, []string{"\r", "\r", ""}, "\r"},
		{"NEL, LS and PS", "a\u0085b\u2028c\u2029d", []string{"a", "b", "c", "d"}, []string{"\u0085", "\u2028", "\u2029", ""}, "\u0085"},
		{"mixed", "a\r\nb\nc", []string{"a", "b", "c"}, []string{"\r\n", "\n", ""}, "\r\n"},
		{"one line", "a: 1", []string{"a: 1"}, []string{""}, "\n"},
		{"BOM", "\ufeffa: 1\n", []string{"a: 1", ""}, []string{"\n", ""}, "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSource([]byte(tt.in))
			if s.LineCount() != len(tt.texts) {
				t.Fatalf("LineCount = %d, want %d", s.LineCount(), len(tt.texts))
			}
			for i := range tt.texts {
				if got := string(s.Text(i + 1)); got != tt.texts[i] {
					t.Errorf("Text(%d) = %q, want %q", i+1, got, tt.texts[i])
				}
				if got := s.LineBreak(i + 1); got != tt.breaks[i] {
					t.Errorf("LineBreak(%d) = %q, want %q", i+1, got, tt.breaks[i])
				}
				if got := s.LineOf(s.LineStart(i + 1)); got != i+1 {
					t.Errorf("LineOf(LineStart(%d)) = %d", i+1, got)
				}
			}
			if got := s.DefaultBreak(); got != tt.def {
				t.Errorf("DefaultBreak = %q, want %q", got, tt.def)
			}
		})
	}
}

// TestScalarRange checks that a scalar's bytes are found with its quotes,
// escapes and doubled quotes included, and that what is not a one-line
// scalar without tag or anchor is not spliceable.
func TestScalarRange(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // the bytes of the value of key v; "" for no splice
	}{
		{"plain", "v: 100m # c\n", "100m"},
		{"double-quoted with an escaped quote", `v: "a\"b" # c` + "\n", `"a\"b"`},
		{"single-quoted with a doubled quote", "v: 'it''s'\n", "'it''s'"},
		{"tagged", "v: !!str 1\n", ""},
		{"anchored", "v: &a 1\n", ""},
		{"block scalar", "v: |\n  x\n", ""},
		{"plain over two lines", "v: a\n  b\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := ParseDocuments([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			_, v, _ := Lookup(DocRoot(docs[0]), "v")
			s := NewSource([]byte(tt.in))
			start, end, err := s.ScalarRange(v)
			if tt.want == "" {
				if !errors.Is(err, errNoSplice) {
					t.Fatalf("ScalarRange = %q, %v; want no splice", tt.in[start:end], err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.in[start:end]; got != tt.want {
				t.Errorf("ScalarRange = %q, want %q", got, tt.want)
			}
		})
	}
	// Columns count characters, not bytes.
	in := "k: {é: 1, v: xyz}\n"
	docs, _ := ParseDocuments([]byte(in))
	_, k, _ := Lookup(DocRoot(docs[0]), "k")
	_, v, _ := Lookup(k, "v")
	start, end, err := NewSource([]byte(in)).ScalarRange(v)
	if err != nil || in[start:end] != "xyz" {
		t.Errorf("after a multi-byte key: ScalarRange = %q, %v; want xyz", in[start:end], err)
	}
}

// TestApplySplices checks that splices are made in offset order, deeper
// insertions first at one offset, and that overlapping ones are refused.
func TestApplySplices(t *testing.T) {
	tests := []struct {
		name   string
		edits  []Splice
		want   string
		refuse bool
	}{
		{"replace and insert, out of order", []Splice{{Start: 6, End: 6, Text: "!"}, {Start: 0, End: 5, Text: "HELLO"}}, "HELLO !world", false},
		{"deeper first at one offset", []Splice{{Start: 5, End: 5, Text: "<outer>", Depth: 1}, {Start: 5, End: 5, Text: "<inner>", Depth: 3}}, "hello<inner><outer> world", false},
		{"delete", []Splice{{Start: 5, End: 11}}, "hello", false},
		{"overlap", []Splice{{Start: 0, End: 5, Text: "x"}, {Start: 3, End: 7, Text: "y"}}, "", true},
		{"past the end", []Splice{{Start: 10, End: 20}}, "", true},
		{"backwards", []Splice{{Start: 4, End: 2}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte("hello world")
			got, err := ApplySplices(data, tt.edits)
			if tt.refuse {
				if !errors.Is(err, errNoSplice) {
					t.Fatalf("ApplySplices = %q, %v; want no splice", got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("ApplySplices = %q, %v; want %q", got, err, tt.want)
			}
			if string(data) != "hello world" {
				t.Errorf("input changed to %q", data)
			}
		})
	}
}

// TestLastLineAndRegion checks where a block node ends, and the lines a
// region holds: below its key, or from a sequence item's dash.
func TestLastLineAndRegion(t *testing.T) {
	in := "spec:\n  containers:\n  - name: app\n    resources:\n      cpu: 1\n\n    note: |\n      two\n      lines\n\n  - name: side\n# end\n"
	docs, err := ParseDocuments([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSource([]byte(in))
	_, spec, _ := Lookup(DocRoot(docs[0]), "spec")
	_, ctrs, _ := Lookup(spec, "containers")
	app := ctrs.Content[0]
	_, res, _ := Lookup(app, "resources")
	if last, err := s.LastLine(app); err != nil || last != 9 {
		t.Errorf("LastLine(app) = %d, %v; want 9, the block scalar's last non-blank line", last, err)
	}
	r, err := s.RegionOf(docs[0], res)
	if err != nil || r.First != 5 || r.Last != 5 {
		t.Errorf("RegionOf(resources) = %d-%d, %v; want 5-5", r.First, r.Last, err)
	}
	r, err = s.RegionOf(docs[0], app)
	if err != nil || r.First != 3 || r.Last != 9 {
		t.Errorf("RegionOf(app) = %d-%d, %v; want 3-9", r.First, r.Last, err)
	}
	if _, err := s.RegionOf(docs[0], DocRoot(docs[0])); err == nil {
		t.Error("RegionOf(the document's root) = nil error, want a refusal: the top level is not re-serialised")
	}
	if parent, key := ParentOf(docs[0], res); parent != app || key == nil || key.Value != "resources" {
		t.Errorf("ParentOf(resources) = %v, %v; want the app item and its resources key", parent, key)
	}
	if parent, key := ParentOf(docs[0], app); parent != ctrs || key != nil {
		t.Errorf("ParentOf(app) = %v, %v; want the list and no key", parent, key)
	}
}

// TestInsertIntoEmptyFlowMapping checks that keys added to an empty flow
// mapping go inside its braces, in flow style.
func TestInsertIntoEmptyFlowMapping(t *testing.T) {
	for in, want := range map[string]string{
		"{}\n":           "{cpu: 1}\n",
		"a: 1\nr: { }\n": "a: 1\nr: {cpu: 1 }\n",
		"[{}]\n":         "[{cpu: 1}]\n",
	} {
		docs, err := ParseDocuments([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		m := DocRoot(docs[0])
		if _, r, _ := Lookup(m, "r"); r != nil {
			m = r
		} else if m.Kind != yaml.MappingNode {
			m = m.Content[0]
		}
		p := &Planner{Src: NewSource([]byte(in))}
		p.Insert(m, []Entry{{Key: "cpu", Value: "1"}})
		out, err := p.Splice()
		if err != nil || string(out) != want {
			t.Errorf("Insert into %q = %q, %v; want %q", in, out, err, want)
		}
	}
}

// TestLastCommentedEntry checks that the commented-out list entries after
// a line are found, notes between them passed over, and a note after the
// last one left out.
func TestLastCommentedEntry(t *testing.T) {
	in := "args:\n- a\n# - b\n\n# a note\n#- c\n#-\n# trailing note\nnext: 1\n"
	s := NewSource([]byte(in))
	if got := s.LastCommentedEntry(2); got != 7 {
		t.Errorf("LastCommentedEntry(2) = %d, want 7", got)
	}
	if got := s.LastCommentedEntry(9); got != 9 {
		t.Errorf("LastCommentedEntry(9) = %d, want 9: none follow", got)
	}
	if got := NewSource([]byte("- a\n# a note\nb: 1\n")).LastCommentedEntry(1); got != 1 {
		t.Errorf("LastCommentedEntry past a note alone = %d, want 1", got)
	}
}
