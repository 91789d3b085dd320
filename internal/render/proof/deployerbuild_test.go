package proof

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// indexedRepo writes files to a temporary repository and indexes what
// renders Deployment web.
func indexedRepo(t *testing.T, files map[string]string) Repo {
	t.Helper()
	dir := writeTree(t, files)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	w := repoindex.Wants{Objects: map[repoindex.IdentKey]bool{{Group: "apps", Kind: "Deployment", Name: "web"}: true}, Dir: "."}
	idx, err := repoindex.BuildIndex(context.Background(), root.FS(), ".", w, repoindex.DefaultMaxFileSize)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Repo{Index: idx, Abs: abs, Limit: repoindex.DefaultMaxFileSize}
}

const annotatedWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    size: ${SIZE}
    tier: ${TIER:=gold}
    owner: ${OWNER}
spec:
  template:
    spec:
      containers:
        - name: app
          image: nginx:1.0
`

// TestBuildAs covers building a deployer's path as the deployer does: its
// overrides merged into the kustomization there, the one generated for a
// directory without one, its namespaces and its postBuild substitution.
func TestBuildAs(t *testing.T) {
	repo := indexedRepo(t, map[string]string{
		"app/kustomization.yaml": "resources: [web.yaml]\n",
		"app/web.yaml":           annotatedWeb,
		"plain/web.yaml":         strings.Replace(proofWeb, "name: web", "name: web\n  namespace: own", 1),
		"plain/skip.yaml":        strings.Replace(proofWeb, "name: web", "name: skipped", 1),
		"plain/values.yaml":      "replicas: 2\n",
	})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(repo.Abs, "out")); err != nil {
		t.Fatal(err)
	}
	edited := map[string][]byte{filepath.Join(repo.Abs, "app", "web.yaml"): []byte(strings.Replace(annotatedWeb, "nginx:1.0", "nginx:1.1", 1))}
	tests := []struct {
		name    string
		files   map[string][]byte
		d       repoindex.Deployer
		want    map[string]map[string]string // build id: field path: value
		wantErr string
	}{{
		name: "Argo CD: destination, name prefix and image",
		d:    repoindex.Deployer{Kind: repoindex.ArgoApplication, Path: "app", Destination: "shop", NamePrefix: "p-", Images: []any{"nginx:1.25"}},
		want: map[string]map[string]string{"apps/Deployment/shop/p-web": {"metadata.namespace": "shop", "image": "nginx:1.25", "size": "${SIZE}"}},
	}, {
		name: "Flux: target namespace and substitution with defaults",
		d:    repoindex.Deployer{Kind: repoindex.FluxKustomization, Path: "app", TargetNamespace: "prod", Substitute: map[string]string{"SIZE": "big"}},
		want: map[string]map[string]string{"apps/Deployment/prod/web": {"metadata.namespace": "prod", "size": "big", "tier": "gold", "owner": "${OWNER}", "image": "nginx:1.0"}},
	}, {
		name:  "files laid over the repository",
		files: edited,
		d:     repoindex.Deployer{Kind: repoindex.FluxKustomization, Path: "app", NameSuffix: "-x"},
		want:  map[string]map[string]string{"apps/Deployment//web-x": {"image": "nginx:1.1"}},
	}, {
		name: "Argo CD directory without a kustomization, excluding a file",
		d:    repoindex.Deployer{Kind: repoindex.ArgoApplication, Path: "plain", Directory: true, Destination: "shop", Exclude: "skip.yaml"},
		want: map[string]map[string]string{"apps/Deployment/own/web": {"metadata.namespace": "own"}},
	}, {
		name:    "a path that leads out of the repository",
		d:       repoindex.Deployer{Kind: repoindex.FluxKustomization, Path: "out"},
		wantErr: "path out is not a directory of the repository",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d
			out, err := repo.BuildAs(tt.files, &d)
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if len(out) != len(tt.want) {
				t.Errorf("built %d objects, want %d: %v", len(out), len(tt.want), keys(out))
			}
			for id, fields := range tt.want {
				obj := out[id]
				if obj == nil {
					t.Errorf("%s is not built; built %v", id, keys(out))
					continue
				}
				for field, want := range fields {
					if got := fieldOf(obj, field); got != want {
						t.Errorf("%s %s = %q, want %q", id, field, got, want)
					}
				}
			}
		})
	}
	if _, ok := edited[filepath.Join(repo.Abs, "app", "kustomization.yaml")]; ok {
		t.Error("BuildAs wrote its kustomization into the caller's files")
	}
}

// keys lists the ids of a build.
func keys(out map[string]map[string]any) []string {
	var ids []string
	for id := range out {
		ids = append(ids, id)
	}
	return ids
}

// fieldOf reads the few fields TestBuildAs looks at.
func fieldOf(obj map[string]any, field string) string {
	meta, _ := obj["metadata"].(map[string]any)
	switch field {
	case "metadata.namespace":
		s, _ := meta["namespace"].(string)
		return s
	case "image":
		spec, _ := obj["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		pod, _ := tmpl["spec"].(map[string]any)
		ctrs, _ := pod["containers"].([]any)
		c, _ := ctrs[0].(map[string]any)
		s, _ := c["image"].(string)
		return s
	}
	ann, _ := meta["annotations"].(map[string]any)
	s, _ := ann[field].(string)
	return s
}

// TestProveBuild covers the proof of a kustomization's build before and
// after the edited files, and CheckExternal's refusals.
func TestProveBuild(t *testing.T) {
	repo := indexedRepo(t, map[string]string{
		"base/kustomization.yaml":   "resources: [web.yaml]\n",
		"base/web.yaml":             proofWeb,
		"env/kustomization.yaml":    "namespace: shop\nresources: [../base]\n",
		"remote/kustomization.yaml": "resources:\n- ../base\n- https://github.com/example/repo//base?ref=v1\n",
		"wraps/kustomization.yaml":  "resources: [../remote]\n",
	})
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: repo.Abs}
	web := filepath.Join(repo.Abs, "base", "web.yaml")
	env := filepath.Join(repo.Abs, "env")
	change := cpuChange("web", "200m")
	tests := []struct {
		name    string
		edited  map[string][]byte
		wantErr string
	}{
		{name: "the change shows", edited: map[string][]byte{web: []byte(strings.Replace(proofWeb, "300m", "200m", 1))}},
		{name: "the change does not show", edited: map[string][]byte{web: []byte("# only a comment\n" + proofWeb)}, wantErr: "renders resources.requests.cpu 300m, want 200m"},
		{name: "the edit breaks the build", edited: map[string][]byte{web: []byte("kind: [\n")}, wantErr: "does not build after the edit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ProveBuild(fsys, env, tt.edited, []Expectation{change}, nil), tt.wantErr)
		})
	}
	for dir, want := range map[string]string{"env": "", "remote": "remote/kustomization.yaml uses resources that are remote", "wraps": "remote/kustomization.yaml uses resources that are remote"} {
		checkErr(t, repo.CheckExternal(dir), want)
	}
}

// TestWithout checks that Without drops the named files, by slash name,
// and leaves the map it was given alone.
func TestWithout(t *testing.T) {
	abs := filepath.FromSlash("/repo")
	a, b := filepath.Join(abs, "a", "x.yaml"), filepath.Join(abs, "b.yaml")
	edited := map[string][]byte{a: []byte("a"), b: []byte("b")}
	out := Without(edited, abs, []string{"a/x.yaml", "missing.yaml"})
	if _, ok := out[a]; ok || string(out[b]) != "b" || len(out) != 1 {
		t.Errorf("Without = %q, want only b.yaml", out)
	}
	if len(edited) != 2 {
		t.Errorf("Without changed its argument: %q", edited)
	}
}

// TestProveOthersRefusals covers the other environments that read an
// edited file and cannot be proved unchanged: one that fetches remote
// resources, and one that does not build.
func TestProveOthersRefusals(t *testing.T) {
	tests := []struct {
		name    string
		other   string
		wantErr string
	}{
		{name: "remote resources", other: "resources:\n- ../base\n- https://github.com/example/repo//base?ref=v1\n", wantErr: "b/kustomization.yaml also reads base/web.yaml and cannot be checked"},
		{name: "a build that fails", other: "resources:\n- ../base\npatches:\n- path: missing.yaml\n", wantErr: "b/kustomization.yaml also reads base/web.yaml and does not build"},
		{name: "an environment built on the target's", other: "namespace: b\nresources:\n- ../a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := indexedRepo(t, map[string]string{
				"base/kustomization.yaml": "resources: [web.yaml]\n",
				"base/web.yaml":           proofWeb,
				"a/kustomization.yaml":    "namespace: a\nresources: [../base]\n",
				"b/kustomization.yaml":    tt.other,
			})
			fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: repo.Abs}
			web := filepath.Join(repo.Abs, "base", "web.yaml")
			edited := map[string][]byte{web: []byte(strings.Replace(proofWeb, "300m", "200m", 1))}
			checkErr(t, repo.ProveOthers(fsys, "a", []string{"base/web.yaml"}, edited), tt.wantErr)
		})
	}
}
