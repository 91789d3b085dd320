package yamledit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// set is one value to write: the scalar at keys, from the root of
// document doc.
type set struct {
	doc   int
	keys  []string
	value string
}

// nested is the entry that creates keys down to value.
func nested(keys []string, value string) Entry {
	if len(keys) == 1 {
		return Entry{Key: keys[0], Value: value}
	}
	return Entry{Key: keys[0], Children: []Entry{nested(keys[1:], value)}}
}

// plan plans s the three ways the package splices: a missing key is added
// with what goes below it, an empty value is filled, a scalar replaced.
// Every mapping on the way is a scope, smallest first.
func plan(p *Planner, docs []*yaml.Node, s set) error {
	m := DocRoot(docs[s.doc])
	p.Step = IndentStep(m)
	for i, key := range s.keys {
		k, v, dup := Lookup(m, key)
		switch {
		case dup:
			return fmt.Errorf("%w: %s twice", ErrUnsafe, key)
		case k == nil:
			p.Insert(m, []Entry{nested(s.keys[i:], s.value)})
			return nil
		}
		if err := UnsafeNode(v, key); err != nil {
			return err
		}
		switch {
		case i == len(s.keys)-1:
			p.Replace(k, v, s.value)
			return nil
		case IsNull(v):
			p.Fill(m, k, v, []Entry{nested(s.keys[i+1:], s.value)})
			return nil
		}
		m = v
		p.Scopes = append([]*yaml.Node{v}, p.Scopes...)
	}
	return nil
}

// edit makes the sets as the package's doc says a caller does: splice,
// check the result means the model; else re-serialise the smallest scope
// that passes the check with the comments; else refuse. It returns the
// file and "splice" or "subtree".
func edit(in string, sets ...set) (string, string, error) {
	data := []byte(in)
	docs, err := ParseDocuments(data)
	if err != nil {
		return "", "", err
	}
	if err := UnsafeFile(data, docs); err != nil {
		return "", "", err
	}
	src := NewSource(data)
	p := &Planner{Src: src}
	for _, s := range sets {
		if err := plan(p, docs, s); err != nil {
			return "", "", err
		}
	}
	var regions []Region
	for _, n := range p.Scopes {
		if r, err := src.RegionOf(docs[sets[0].doc], n); err == nil {
			regions = append(regions, r)
		}
	}
	out, err := p.Splice()
	for _, m := range p.Muts {
		m()
	}
	if err == nil {
		if _, err = Verify(out, docs, nil); err == nil {
			return string(out), "splice", nil
		}
	}
	comments := CollectComments(docs)
	for _, r := range regions {
		out, rerr := src.Reserialise(r, p.Step)
		if rerr == nil {
			if _, rerr = Verify(out, docs, comments); rerr == nil {
				return string(out), "subtree", nil
			}
		}
	}
	return "", "", fmt.Errorf("%w: %w", ErrUnsafe, err)
}

func keys(path string) []string { return strings.Split(path, ".") }

// TestSplice checks that each kind of splice changes exactly the values
// asked for: every other byte (comments, quoting, anchors elsewhere, line
// breaks, documents, a missing final newline, a BOM) stays.
func TestSplice(t *testing.T) {
	tests := []struct {
		name string
		in   string
		sets []set
		want string
	}{
		{"plain scalar, comments kept",
			"# head\nr: # resources\n  cpu: 100m # keep\n  memory: 1Gi\n",
			[]set{{keys: keys("r.cpu"), value: "250m"}},
			"# head\nr: # resources\n  cpu: 250m # keep\n  memory: 1Gi\n"},
		{"double-quoted scalar keeps its quotes",
			"r:\n  cpu: \"100m\"\n",
			[]set{{keys: keys("r.cpu"), value: "250m"}},
			"r:\n  cpu: \"250m\"\n"},
		{"single-quoted scalar keeps its quotes",
			"r:\n  memory: '1Gi'   # spaced comment\n",
			[]set{{keys: keys("r.memory"), value: "512Mi"}},
			"r:\n  memory: '512Mi'   # spaced comment\n"},
		{"quoted quantities elsewhere untouched",
			"a: \"0.50\"\nb: '1e3'\nr:\n  cpu: 1\n",
			[]set{{keys: keys("r.cpu"), value: "2"}},
			"a: \"0.50\"\nb: '1e3'\nr:\n  cpu: 2\n"},
		{"key added after the last entry",
			"r:\n  cpu: 1\nx: 1\n",
			[]set{{keys: keys("r.memory"), value: "1Gi"}},
			"r:\n  cpu: 1\n  memory: 1Gi\nx: 1\n"},
		{"CRLF kept on added lines",
			"a: 1\r\nr:\r\n  cpu: 1\r\n",
			[]set{{keys: keys("r.memory"), value: "1Gi"}},
			"a: 1\r\nr:\r\n  cpu: 1\r\n  memory: 1Gi\r\n"},
		{"CRLF kept around a replaced value",
			"r:\r\n  cpu: 1 # c\r\nx: 2\r\n",
			[]set{{keys: keys("r.cpu"), value: "3"}},
			"r:\r\n  cpu: 3 # c\r\nx: 2\r\n"},
		{"no final newline stays missing",
			"r:\n  cpu: 1",
			[]set{{keys: keys("r.memory"), value: "1Gi"}},
			"r:\n  cpu: 1\n  memory: 1Gi"},
		{"nested mapping added, indented by the file's step",
			"spec:\n    x: 1\nr:\n    cpu: 1\n",
			[]set{{keys: keys("r.limits.cpu"), value: "2"}},
			"spec:\n    x: 1\nr:\n    cpu: 1\n    limits:\n        cpu: 2\n"},
		{"flow mapping stays flow",
			"r: {cpu: 1}\n",
			[]set{{keys: keys("r.memory"), value: "1Gi"}},
			"r: {cpu: 1, memory: 1Gi}\n"},
		{"JSON mapping quotes what it adds",
			`{"r": {"cpu": "1"}}` + "\n",
			[]set{{keys: keys("r.memory"), value: "1Gi"}},
			`{"r": {"cpu": "1", "memory": "1Gi"}}` + "\n"},
		{"{} filled as a block mapping, its comment on the key",
			"r: {} # none yet\nx: 1\n",
			[]set{{keys: keys("r.cpu"), value: "1"}},
			"r: # none yet\n  cpu: 1\nx: 1\n"},
		{"nothing filled",
			"r:\nx: 1\n",
			[]set{{keys: keys("r.cpu"), value: "1"}},
			"r:\n  cpu: 1\nx: 1\n"},
		{"~ filled",
			"r: ~\nx: 1\n",
			[]set{{keys: keys("r.cpu"), value: "1"}},
			"r:\n  cpu: 1\nx: 1\n"},
		{"null filled",
			"r: null\n",
			[]set{{keys: keys("r.cpu"), value: "1"}},
			"r:\n  cpu: 1\n"},
		{"{} alone on its line below comments takes that line",
			"r:\n  # requests go here\n  {}\nx: 1\n",
			[]set{{keys: keys("r.cpu"), value: "1"}},
			"r:\n  # requests go here\n  cpu: 1\nx: 1\n"},
		{"commented-out entries stay with their mapping",
			"r:\n  cpu: 1\n  # memory: 1Gi\n\n# about x\nx: 1\n",
			[]set{{keys: keys("r.memory"), value: "2Gi"}},
			"r:\n  cpu: 1\n  # memory: 1Gi\n  memory: 2Gi\n\n# about x\nx: 1\n"},
		{"anchors and aliases elsewhere untouched",
			"base: &b {x: 1}\nother: *b\nr:\n  cpu: 1\n",
			[]set{{keys: keys("r.cpu"), value: "2"}},
			"base: &b {x: 1}\nother: *b\nr:\n  cpu: 2\n"},
		{"only the named document changes",
			"# first\nr:\n  cpu: 1\n---\n# second\nr:\n  cpu: 1\n...\n",
			[]set{{doc: 1, keys: keys("r.cpu"), value: "2"}},
			"# first\nr:\n  cpu: 1\n---\n# second\nr:\n  cpu: 2\n...\n"},
		{"a byte order mark stays",
			"\ufeffcpu: 1\n",
			[]set{{keys: keys("cpu"), value: "2"}},
			"\ufeffcpu: 2\n"},
		{"two values in one file",
			"r:\n  requests:\n    cpu: 1\n  limits:\n    cpu: 2\n",
			[]set{{keys: keys("r.requests.cpu"), value: "500m"}, {keys: keys("r.limits.memory"), value: "1Gi"}},
			"r:\n  requests:\n    cpu: 500m\n  limits:\n    cpu: 2\n    memory: 1Gi\n"},
		{"a key added to a nested mapping stays inside it",
			"r:\n  requests:\n    cpu: 1\n",
			[]set{{keys: keys("r.requests.memory"), value: "1Gi"}, {keys: keys("r.limits.cpu"), value: "2"}},
			"r:\n  requests:\n    cpu: 1\n    memory: 1Gi\n  limits:\n    cpu: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, err := edit(tt.in, tt.sets...)
			if err != nil {
				t.Fatalf("edit: %v", err)
			}
			if got != tt.want {
				t.Errorf("edited file:\n%q\nwant\n%q", got, tt.want)
			}
			if how != "splice" {
				t.Errorf("edited by %s, want splice", how)
			}
		})
	}
}

// TestSpliceImpossible checks the values that cannot be spliced: the
// subtree that holds them is re-serialised on its own lines, every line
// outside it byte-identical, or the file is refused.
func TestSpliceImpossible(t *testing.T) {
	tests := []struct {
		name string
		in   string
		set  set
		// want is the file re-serialised; "" when it is refused.
		want string
	}{
		{"block scalar value",
			"# top\nr:\n  cpu: |\n    1\nx: 1 # keep\n",
			set{keys: keys("r.cpu"), value: "250m"},
			"# top\nr:\n  cpu: 250m\nx: 1 # keep\n"},
		{"tagged value",
			"r:\n  cpu: !!str 1\nx: 1\n",
			set{keys: keys("r.cpu"), value: "250m"},
			"r:\n  cpu: 250m\nx: 1\n"},
		{"plain value folded over two lines",
			"r:\n  cpu: 1\n    000m\nx: 1\n",
			set{keys: keys("r.cpu"), value: "250m"},
			"r:\n  cpu: 250m\nx: 1\n"},
		{"key after a block scalar with an indentation indicator",
			"r:\n  note: |2\n     text\nx: 1\n",
			set{keys: keys("r.cpu"), value: "1"},
			"r:\n  note: |2\n     text\n  cpu: 1\nx: 1\n"},
		{"tagged value in a flow mapping: refused",
			"r: {cpu: !!str 1}\n",
			set{keys: keys("r.cpu"), value: "2"},
			""},
		{"empty value in a flow mapping: refused",
			"a: {r: , x: 1}\n",
			set{keys: keys("a.r.cpu"), value: "2"},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, err := edit(tt.in, tt.set)
			if tt.want == "" {
				if !errors.Is(err, ErrUnsafe) {
					t.Fatalf("edit = %q by %s, %v; want ErrUnsafe", got, how, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("edit: %v", err)
			}
			if how != "subtree" {
				t.Errorf("edited by %s, want subtree", how)
			}
			if got != tt.want {
				t.Errorf("edited file:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestRefusals checks that what cannot be edited on its own is refused
// before anything is planned.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name, in string
		set      set
		why      string // in the error
	}{
		{"anchored mapping on the way", "r: &r\n  cpu: 1\nq: *r\n", set{keys: keys("r.cpu"), value: "2"}, "anchor (&r)"},
		{"alias on the way", "base: &b {cpu: 1}\nr: *b\n", set{keys: keys("r.cpu"), value: "2"}, "alias (*b)"},
		{"merge key on the way", "base: &b {cpu: 1}\nr:\n  <<: *b\n  memory: 1\n", set{keys: keys("r.cpu"), value: "2"}, "merge key"},
		{"anchored value", "r:\n  cpu: &c 1\nq: *c\n", set{keys: keys("r.cpu"), value: "2"}, "anchor (&c)"},
		{"key twice", "r:\n  cpu: 1\n  cpu: 2\n", set{keys: keys("r.cpu"), value: "3"}, "twice"},
		{"template", "r:\n  cpu: {{ .Values.cpu }}\n", set{keys: keys("r.cpu"), value: "3"}, "template"},
		{"SOPS", "r:\n  cpu: 1\nsops:\n  mac: ENC[x]\n", set{keys: keys("r.cpu"), value: "3"}, "SOPS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := edit(tt.in, tt.set)
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("edit = %q, %v; want ErrUnsafe saying %q", got, err, tt.why)
			}
		})
	}
}

func TestReplaceQuoted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cpu: 500m # tuned\n", "cpu: \"2\" # tuned\n"},
		{"cpu: '1'\n", "cpu: \"2\"\n"},
		{"cpu:\n", "cpu: \"2\"\n"},
	}
	for _, tt := range tests {
		src := NewSource([]byte(tt.in))
		docs, err := ParseDocuments(src.Data)
		if err != nil {
			t.Fatal(err)
		}
		k, v, _ := Lookup(DocRoot(docs[0]), "cpu")
		p := &Planner{Src: src}
		p.ReplaceQuoted(k, v, "2")
		got, err := p.Splice()
		if err != nil || string(got) != tt.want || p.Err() != nil {
			t.Errorf("ReplaceQuoted in %q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
