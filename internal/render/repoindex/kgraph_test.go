package repoindex

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// environments are two overlays of one base that share a patch, a canary
// built on one of them, and a kustomization that reaches the base twice.
var environments = map[string]string{
	"base/kustomization.yaml": "resources: [deploy.yaml]\n",
	"base/deploy.yaml":        deployment("web", ""),
	"overlays/a/kustomization.yaml": "resources: [../../base]\npatches:\n- path: ../../patches/cpu.yaml\n- path: ../../patches/canary.yaml\n" +
		"configMapGenerator:\n- name: web-values\n  files: [values.yaml]\n",
	"overlays/a/values.yaml":               "replicas: 1\n",
	"overlays/b/kustomization.yaml":        "resources: [../../base]\npatches:\n- path: ../../patches/cpu.yaml\n  target: {kind: Deployment}\n",
	"overlays/a-canary/kustomization.yaml": "resources: [../a]\npatches:\n- path: ../../patches/canary.yaml\n",
	"patches/cpu.yaml":                     deployment("web", ""),
	"patches/canary.yaml":                  deployment("web", ""),
	"twice/x1/kustomization.yaml":          "resources: [../../base]\n",
	"twice/x2/kustomization.yaml":          "resources: [../../base]\n",
	"twice/kustomization.yaml":             "nameSuffix: -t\nresources: [x1, x2]\n", // renders web-t
}

func indexOf(t *testing.T, files map[string]string, w Wants) *Index {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	if w.Objects == nil {
		w.Objects = map[IdentKey]bool{KeyOf(web("web", "")): true}
	}
	w.Dir = "."
	idx, err := BuildIndex(context.Background(), fsys, ".", w, 0)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func dirsOf(ks []*Kustomization) string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Dir)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestKustomizationGraph checks what includes what, which kustomizations
// are environments, and which read a file.
func TestKustomizationGraph(t *testing.T) {
	idx := indexOf(t, environments, Wants{})
	k := idx.Graph.ByDir
	for _, tt := range []struct {
		k, other string
		want     bool
	}{
		{"overlays/a-canary", "overlays/a", true},
		{"overlays/a-canary", "base", true},
		{"overlays/a", "base", true},
		{"overlays/a", "overlays/b", false},
		{"base", "overlays/a", false},
		{"overlays/a", "overlays/a", false},
	} {
		if got := k[tt.k].Includes(k[tt.other]); got != tt.want {
			t.Errorf("%s includes %s = %v, want %v", tt.k, tt.other, got, tt.want)
		}
	}
	for dir, want := range map[string]bool{"base": false, "overlays/a": false, "overlays/b": true, "overlays/a-canary": true, "twice": true} {
		if got := idx.IsEnv(k[dir]); got != want {
			t.Errorf("IsEnv(%s) = %v, want %v", dir, got, want)
		}
	}
	for file, want := range map[string]string{
		"base/deploy.yaml":              "base overlays/a overlays/a-canary overlays/b twice twice/x1 twice/x2",
		"patches/cpu.yaml":              "overlays/a overlays/a-canary overlays/b",
		"overlays/a/values.yaml":        "overlays/a overlays/a-canary",
		"overlays/b/kustomization.yaml": "overlays/b",
		"elsewhere.yaml":                "",
	} {
		if got := dirsOf(idx.Readers(file)); got != want {
			t.Errorf("Readers(%s) = %s, want %s", file, got, want)
		}
	}
	if sel := k["overlays/b"].Selectors["patches/cpu.yaml"]; sel.Kind != "Deployment" {
		t.Errorf("overlays/b's patch selects %+v, want every Deployment", sel)
	}
	if _, ok := k["overlays/a"].Selectors["patches/cpu.yaml"]; ok {
		t.Error("a patch without a target counts as one that selects several objects")
	}
	for _, tt := range []struct {
		file, k string
		want    bool
	}{
		{"patches/cpu.yaml", "overlays/a", true},     // overlays/b patches with it too
		{"patches/canary.yaml", "overlays/a", false}, // the canary is built on a
		{"patches/canary.yaml", "overlays/a-canary", true},
		{"overlays/a/values.yaml", "overlays/a", false},
	} {
		if got := idx.Graph.SharedPatch(tt.file, k[tt.k]); got != tt.want {
			t.Errorf("SharedPatch(%s, %s) = %v, want %v", tt.file, tt.k, got, tt.want)
		}
	}
}

// TestSharedFor checks why a document must not be edited in place for
// its renderer: another environment that does not include the renderer
// renders it too, or the renderer renders it twice.
func TestSharedFor(t *testing.T) {
	for _, tt := range []struct {
		name, root string
		paths      []string
		want       string
	}{
		{"another environment renders it", "overlays/b", nil, "base/deploy.yaml is also rendered by overlays/a-canary, twice"},
		{"what is built on the renderer does not count", "overlays/a-canary", nil, "base/deploy.yaml is also rendered by overlays/b, twice"},
		{"a declared path is an environment", "overlays/b", []string{"overlays/a"}, "base/deploy.yaml is also rendered by overlays/a, overlays/a-canary, twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			idx := indexOf(t, environments, Wants{Paths: tt.paths})
			var ref *DocRef
			for _, r := range idx.Refs[KeyOf(web("web", ""))] {
				if r.File == "base/deploy.yaml" && r.Chain.Root().Dir == tt.root {
					ref = &r
				}
			}
			if ref == nil {
				t.Fatalf("no candidate rendered by %s", tt.root)
			}
			if got := idx.SharedFor(*ref); got != tt.want {
				t.Errorf("SharedFor = %q, want %q", got, tt.want)
			}
		})
	}
	idx := indexOf(t, map[string]string{
		"base/deploy.yaml":            deployment("web", ""),
		"twice/x1/kustomization.yaml": "resources: [../../base/deploy.yaml]\n",
		"twice/x2/kustomization.yaml": "resources: [../../base/deploy.yaml]\n",
		"twice/kustomization.yaml":    "resources: [x1, x2]\n",
	}, Wants{})
	for _, r := range idx.Refs[KeyOf(web("web", ""))] {
		if r.Chain.Root().Dir == "twice" {
			if got := idx.SharedFor(r); got != "twice/kustomization.yaml renders base/deploy.yaml more than once" {
				t.Errorf("SharedFor twice = %q", got)
			}
			return
		}
	}
	t.Error("no candidate rendered by twice")
}

// TestCanPatch checks which deployers can carry a patch of their own in
// the repository.
func TestCanPatch(t *testing.T) {
	app := func(name, source string) string {
		return argoHead + name + "\n  namespace: argocd\nspec:\n  source:\n" + source
	}
	files := map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml":        deployment("web", ""),
		"plain/deploy.yaml":       deployment("web", ""),
		"argocd/k.yaml":           app("k", "    path: base\n"),
		"argocd/d.yaml":           app("d", "    path: plain\n"),
		"argocd/dir.yaml":         app("dir", "    path: base\n    directory: {recurse: true}\n"),
		"argocd/h.yaml":           app("h", "    path: base\n    helm: {}\n"),
		"clusters/f.yaml":         fluxHead + "f\nspec:\n  path: ./plain\n",
	}
	idx := indexOf(t, files, Wants{})
	want := map[string]string{
		"k": "", "f": "",
		"d":   "its path plain has no kustomization",
		"dir": "plain directory",
		"h":   "Helm chart",
	}
	for _, d := range idx.Deployers {
		w, ok := want[d.Name]
		if !ok {
			t.Errorf("unexpected deployer %s", d)
			continue
		}
		delete(want, d.Name)
		got := idx.CanPatch(d)
		if (w == "") != (got == "") || !strings.Contains(got, w) {
			t.Errorf("CanPatch(%s) = %q, want %q", d.Name, got, w)
		}
	}
	for name := range want {
		t.Errorf("deployer %s not indexed", name)
	}
}
