package helmsource

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// TestSetPaths checks the edits planned for values keys below a values
// mapping: a quantity replaced unless it already holds the value, missing
// keys added with what goes below them, an empty value filled, list items
// followed where they exist; and the refusals.
func TestSetPaths(t *testing.T) {
	cpu := func(p ...helm.Step) Assignment {
		return Assignment{Path: p, Quantity: resource.MustParse("250m")}
	}
	k := helm.Key
	tests := []struct {
		name string
		in   string
		as   []Assignment
		want string // the file after the edit; "" for a refusal
	}{
		{"replaced, comments kept",
			"web: # the web tier\n  resources:\n    requests:\n      cpu: 1 # was\n",
			[]Assignment{cpu(k("web"), k("resources"), k("requests"), k("cpu"))},
			"web: # the web tier\n  resources:\n    requests:\n      cpu: 250m # was\n"},
		{"already the value, spelled otherwise",
			"web:\n  resources:\n    requests:\n      cpu: '0.25'\n",
			[]Assignment{cpu(k("web"), k("resources"), k("requests"), k("cpu"))},
			"web:\n  resources:\n    requests:\n      cpu: '0.25'\n"},
		{"missing keys added",
			"web:\n  image: x\n",
			[]Assignment{cpu(k("web"), k("resources"), k("requests"), k("cpu")), {Path: helm.Path{k("web"), k("resources"), k("limits"), k("memory")}, Quantity: resource.MustParse("1Gi")}},
			"web:\n  image: x\n  resources:\n    requests:\n      cpu: 250m\n    limits:\n      memory: 1Gi\n"},
		{"an empty value filled",
			"web:\n  resources: {}\n",
			[]Assignment{cpu(k("web"), k("resources"), k("requests"), k("cpu"))},
			"web:\n  resources:\n    requests:\n      cpu: 250m\n"},
		{"a list item followed",
			"workers:\n- name: a\n- name: b\n  cpu: 1\n",
			[]Assignment{cpu(k("workers"), helm.Index(1), k("cpu"))},
			"workers:\n- name: a\n- name: b\n  cpu: 250m\n"},
		{"a list item that is not there", "workers:\n- name: a\n", []Assignment{cpu(k("workers"), helm.Index(3), k("cpu"))}, ""},
		{"a new key below a list", "web: {}\n", []Assignment{cpu(k("web"), k("list"), helm.Index(0), k("cpu"))}, ""},
		{"a scalar where a mapping goes", "web: big\n", []Assignment{cpu(k("web"), k("cpu"))}, ""},
		{"a mapping where the quantity goes", "cpu: {a: 1}\n", []Assignment{cpu(k("cpu"))}, ""},
		{"an anchored mapping on the way", "web: &w {cpu: 1}\napi: *w\n", []Assignment{cpu(k("web"), k("cpu"))}, ""},
		{"a key twice", "web: {cpu: 1}\nweb: {cpu: 2}\n", []Assignment{cpu(k("web"), k("cpu"))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := yamledit.ParseDocuments([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			root := yamledit.DocRoot(docs[0])
			p := &yamledit.Planner{Src: yamledit.NewSource([]byte(tt.in)), Step: yamledit.IndentStep(root)}
			err = SetPaths(p, root, KeysPath("spec", "values"), tt.as)
			if tt.want == "" {
				if !errors.Is(err, repoindex.ErrUnsafeFile) {
					t.Fatalf("SetPaths = %v, want ErrUnsafeFile", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Splice()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("edited\n%q\nwant\n%q", out, tt.want)
			}
			for _, m := range p.Muts {
				m()
			}
			if _, err := yamledit.Verify(out, docs, nil); err != nil {
				t.Errorf("the edit does not mean the planned tree: %v", err)
			}
		})
	}
}
