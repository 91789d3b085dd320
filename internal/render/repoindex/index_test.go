package repoindex

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// deployment is a Deployment named name with one container, app, in
// namespace ns ("" for none).
func deployment(name, ns string) string {
	s := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n"
	if ns != "" {
		s += "  namespace: " + ns + "\n"
	}
	return s + "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        resources: {}\n"
}

// web is the target the resolve tests look for, in namespace ns.
func web(name, ns string) Target {
	return Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
}

// resolveIn indexes files (limit: max file size, 0 for none) and resolves
// s under the repository's root.
func resolveIn(files map[string]string, s Sought, limit int64) (DocRef, error) {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	w := Wants{Objects: map[IdentKey]bool{KeyOf(s.Target): true}, Dir: ".", Names: [][]byte{[]byte(s.Target.Name)}}
	if s.Path != "" {
		w.Paths = []string{s.Path}
	}
	idx, err := BuildIndex(context.Background(), fsys, ".", w, limit)
	if err != nil {
		return DocRef{}, err
	}
	ref, _, err := idx.Resolve(s, ".")
	return ref, err
}

const (
	argoHead = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: "
	fluxHead = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  namespace: flux-system\n  name: "
)

// twoOverlays are two environments over one base, with the same name and
// namespace: only a hint tells them apart.
var twoOverlays = map[string]string{
	"base/kustomization.yaml":       "resources:\n- deploy.yaml\n",
	"base/deploy.yaml":              deployment("web", ""),
	"overlays/a/kustomization.yaml": "namespace: shop\nresources:\n- ../../base\n",
	"overlays/b/kustomization.yaml": "namespace: shop\nresources:\n- ../../base\n",
}

func with(files map[string]string, more ...string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// TestResolve checks which document defines a target, as the package's
// doc describes: kustomizations' name transforms, what defines nothing,
// hints that name one directory, environments over bases, and the errors
// that say why none or several do.
func TestResolve(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		s     Sought
		limit int64
		// file, doc and from are the document found and where it is
		// rendered from; err, when set, is the error wanted instead, and
		// why what it says.
		file string
		doc  int
		from string
		err  error
		why  string
	}{
		{name: "a plain manifest",
			files: map[string]string{"apps/web.yaml": deployment("web", "shop")},
			s:     Sought{Target: web("web", "shop")}, file: "apps/web.yaml", from: "apps"},
		{name: "a manifest without a namespace matches any",
			files: map[string]string{"apps/web.yaml": deployment("web", "")},
			s:     Sought{Target: web("web", "shop")}, file: "apps/web.yaml", from: "apps"},
		{name: "an explicit namespace wins over none",
			files: map[string]string{"a/web.yaml": deployment("web", ""), "b/web.yaml": deployment("web", "shop")},
			s:     Sought{Target: web("web", "shop")}, file: "b/web.yaml", from: "b"},
		{name: "the second document of a file",
			files: map[string]string{"apps/all.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n" + deployment("web", "shop")},
			s:     Sought{Target: web("web", "shop")}, file: "apps/all.yaml", doc: 1, from: "apps"},
		{name: "another namespace only",
			files: map[string]string{"apps/web.yaml": deployment("web", "other")},
			s:     Sought{Target: web("web", "shop")}, err: ErrTargetNotFound, why: "defined for other namespaces: other in apps/web.yaml"},
		{name: "namePrefix, nameSuffix and namespace of an overlay",
			files: map[string]string{
				"base/deploy.yaml":                 deployment("web", ""),
				"base/kustomization.yaml":          "resources: [deploy.yaml]\n",
				"overlays/prod/kustomization.yaml": "namespace: prod\nnamePrefix: eu-\nnameSuffix: -v2\nresources:\n- ../../base\n",
			},
			s: Sought{Target: web("eu-web-v2", "prod")}, file: "base/deploy.yaml", from: "overlays/prod"},
		{name: "the name as written is not the overlay's",
			files: map[string]string{
				"base/deploy.yaml":                 deployment("web", ""),
				"overlays/prod/kustomization.yaml": "namespace: prod\nnamePrefix: eu-\nresources:\n- ../../base/deploy.yaml\n",
			},
			s: Sought{Target: web("web", "prod")}, err: ErrTargetNotFound},
		{name: "an environment wins over its base",
			files: map[string]string{
				"base/deploy.yaml":        deployment("web", ""),
				"base/kustomization.yaml": "resources: [deploy.yaml]\n",
				"env/kustomization.yaml":  "resources: [../base]\n",
			},
			s: Sought{Target: web("web", "shop")}, file: "base/deploy.yaml", from: "env"},
		{name: "two environments: ambiguous, with what would tell them apart",
			files: twoOverlays, s: Sought{Target: web("web", "shop")},
			err: ErrAmbiguousTarget, why: AnnotationPath + " annotation naming one of overlays/a, overlays/b"},
		{name: "a path picks one environment",
			files: twoOverlays, s: Sought{Target: web("web", "shop"), Path: "./overlays/b/"},
			file: "base/deploy.yaml", from: "overlays/b"},
		{name: "a path that renders it not",
			files: twoOverlays, s: Sought{Target: web("web", "shop"), Path: "elsewhere"},
			err: ErrTargetNotFound, why: "(path elsewhere) does not render it; base, overlays/a, overlays/b does"},
		{name: "an Argo CD tracking-id picks the Application's path",
			files: with(twoOverlays, "argocd/b.yaml", argoHead+"shop-b\n  namespace: argocd\nspec:\n  source:\n    path: overlays/b\n"),
			s: Sought{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
				Annotations: map[string]string{ArgoTrackingID: "shop-b:apps/Deployment:shop/web"}}},
			file: "base/deploy.yaml", from: "overlays/b"},
		{name: "the instance label names the Application when the repository holds it",
			files: with(twoOverlays, "argocd/a.yaml", argoHead+"shop-a\nspec:\n  sources:\n  - path: ./overlays/a\n"),
			s: Sought{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
				Labels: map[string]string{InstanceLabel: "shop-a"}}},
			file: "base/deploy.yaml", from: "overlays/a"},
		{name: "Flux labels pick the Kustomization's path",
			files: with(twoOverlays, "clusters/a.yaml", fluxHead+"apps-a\nspec:\n  path: ./overlays/a\n"),
			s: Sought{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
				Labels: map[string]string{FluxNameLabel: "apps-a", FluxNamespaceLabel: "flux-system"}}},
			file: "base/deploy.yaml", from: "overlays/a"},
		{name: "a component's resources render through the kustomization listing it",
			files: map[string]string{
				"components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [sidecar.yaml]\n",
				"components/extra/sidecar.yaml":       deployment("extra", ""),
				"env/kustomization.yaml":              "namespace: shop\ncomponents:\n- ../components/extra\n",
			},
			s: Sought{Target: web("extra", "shop")}, file: "components/extra/sidecar.yaml", from: "env"},
		{name: "a patch file defines nothing",
			files: map[string]string{
				"base/deploy.yaml":       deployment("web", ""),
				"env/kustomization.yaml": "resources: [../base/deploy.yaml]\npatches:\n- path: patch.yaml\n",
				"env/patch.yaml":         deployment("web", ""),
			},
			s: Sought{Target: web("web", "shop")}, file: "base/deploy.yaml", from: "env"},
		{name: "a strategic-merge patch defines nothing",
			files: map[string]string{
				"base/deploy.yaml":       deployment("web", ""),
				"env/kustomization.yaml": "resources: [../base/deploy.yaml]\npatchesStrategicMerge:\n- patch.yaml\n",
				"env/patch.yaml":         deployment("web", ""),
			},
			s: Sought{Target: web("web", "shop")}, file: "base/deploy.yaml", from: "env"},
		{name: "a file its kustomization does not list defines nothing",
			files: map[string]string{
				"env/kustomization.yaml": "resources: [other.yaml]\n",
				"env/other.yaml":         deployment("other", ""),
				"env/web.yaml":           deployment("web", ""),
			},
			s: Sought{Target: web("web", "shop")}, err: ErrTargetNotFound},
		{name: "a Flux Kustomization named like a kustomization is a manifest",
			files: map[string]string{"apps/kustomization.yaml": fluxHead + "web\nspec:\n  path: ./x\n"},
			s:     Sought{Target: Target{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "flux-system", Name: "web"}},
			file:  "apps/kustomization.yaml", from: "apps"},
		{name: "hidden directories are not read",
			files: map[string]string{".git/web.yaml": deployment("web", "shop"), "apps/.hidden/web.yaml": deployment("web", "shop")},
			s:     Sought{Target: web("web", "shop")}, err: ErrTargetNotFound},
		{name: "a chart's template is not the manifest",
			files: map[string]string{"charts/web/Chart.yaml": "name: web\n", "charts/web/templates/deploy.yaml": deployment("web", "")},
			s:     Sought{Target: web("web", "shop")}, err: ErrTargetNotFound, why: "a chart's template defines it: charts/web/templates/deploy.yaml"},
		{name: "YAML that does not parse is named",
			files: map[string]string{"apps/web.yaml": "kind: Deployment\nmetadata: {name: web\n"},
			s:     Sought{Target: web("web", "shop")}, err: ErrTargetNotFound, why: "skipped as not valid YAML, although they name it: apps/web.yaml"},
		{name: "a file above the size limit is named",
			files: map[string]string{"apps/web.yaml": deployment("web", "shop") + "# " + strings.Repeat("x", 1536-3-len(deployment("web", "shop"))) + "\n"},
			s:     Sought{Target: web("web", "shop")}, limit: 512, err: ErrFileTooLarge, why: "apps/web.yaml is 1.5 KiB, above max-file-size 512: not read"},
		{name: "a base above the size limit that an overlay renders is named",
			files: map[string]string{
				"base/deploy.yaml":       deployment("web", "") + "# " + strings.Repeat("x", 1000) + "\n",
				"env/kustomization.yaml": "resources: [../base/deploy.yaml]\n",
			},
			s: Sought{Target: web("web", "shop"), Path: "env"}, limit: 512, err: ErrFileTooLarge, why: "base/deploy.yaml"},
		{name: "a Helm-installed target that nothing defines is told to mark its values",
			files: map[string]string{"apps/other.yaml": deployment("other", "shop")},
			s: Sought{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
				Annotations: map[string]string{HelmReleaseName: "shop"}}, Container: "app"},
			err: ErrTargetNotFound, why: `{"$recommend": "shop/web:app"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := resolveIn(tt.files, tt.s, tt.limit)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("Resolve = %s, %v; want %v saying %q", ref.File, err, tt.err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if ref.File != tt.file || ref.Doc != tt.doc || ref.RenderedFrom() != tt.from {
				t.Errorf("Resolve = %s document %d from %s, want %s document %d from %s", ref.File, ref.Doc, ref.RenderedFrom(), tt.file, tt.doc, tt.from)
			}
			if ref.Key != KeyOf(tt.s.Target) {
				t.Errorf("key %+v, want the target's %+v", ref.Key, KeyOf(tt.s.Target))
			}
		})
	}
}

// TestResolveTransforms checks the identity a document has as written and
// as its kustomization renders it, and the deployer a hint names.
func TestResolveTransforms(t *testing.T) {
	files := with(twoOverlays,
		"overlays/b/kustomization.yaml", "namespace: shop\nnamePrefix: b-\nresources:\n- ../../base\n",
		"argocd/b.yaml", argoHead+"shop-b\n  namespace: argocd\nspec:\n  source:\n    path: overlays/b\n")
	target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "b-web",
		Annotations: map[string]string{ArgoTrackingID: "shop-b:apps/Deployment:shop/b-web"}}
	ref, err := resolveIn(files, Sought{Target: target}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ref.RawName != "web" || ref.RawNamespace != "" || ref.Key.Name != "b-web" || ref.Namespace != "shop" {
		t.Errorf("identity as written %q/%q, rendered %q/%q; want /web and shop/b-web", ref.RawNamespace, ref.RawName, ref.Namespace, ref.Key.Name)
	}
	if ref.Chain.Root().File != "overlays/b/kustomization.yaml" {
		t.Errorf("renderer %s, want overlays/b/kustomization.yaml", ref.Chain.Root().File)
	}
	if !strings.Contains(ref.Deployer, "shop-b") {
		t.Errorf("Deployer = %q, want it to name the Application shop-b", ref.Deployer)
	}
}

// TestIndexSymlink checks that a symlinked manifest is not indexed: the
// file it points to is, on its own.
func TestIndexSymlink(t *testing.T) {
	fsys := fstest.MapFS{"apps/web.yaml": {Data: []byte("../real/web.yaml"), Mode: fs.ModeSymlink}}
	target := web("web", "shop")
	idx, err := BuildIndex(context.Background(), fsys, ".", Wants{Objects: map[IdentKey]bool{KeyOf(target): true}, Dir: "."}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if refs := idx.Refs[KeyOf(target)]; len(refs) != 0 {
		t.Errorf("symlink indexed: %+v", refs)
	}
}

// TestIndexUnsafeFile checks that a template or SOPS file that defines a
// target is indexed with the reason it must not be edited.
func TestIndexUnsafeFile(t *testing.T) {
	for name, data := range map[string]string{
		"template": deployment("web", "shop") + "        env: {{ .Values.env }}\n",
		"SOPS":     deployment("web", "shop") + "sops:\n  mac: ENC[x]\n",
	} {
		fsys := fstest.MapFS{"apps/web.yaml": {Data: []byte(data), Mode: 0o640}}
		target := web("web", "shop")
		idx, err := BuildIndex(context.Background(), fsys, ".", Wants{Objects: map[IdentKey]bool{KeyOf(target): true}, Dir: "."}, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := idx.Files["apps/web.yaml"]
		if f == nil || !errors.Is(f.Unsafe, ErrUnsafeFile) {
			t.Errorf("%s: indexed file %+v, want it marked unsafe", name, f)
			continue
		}
		if f.Mode != 0o640 || string(f.Data) != data {
			t.Errorf("%s: kept mode %v and %d bytes, want the file as read", name, f.Mode, len(f.Data))
		}
	}
}

// TestApplicationKustomizations checks that the root kustomizations that
// list an Argo CD Application, directly or through a base, are found.
func TestApplicationKustomizations(t *testing.T) {
	app := argoHead + "web\nspec:\n  source:\n    path: apps/web\n"
	fsys := fstest.MapFS{
		"bootstrap/base/kustomization.yaml": {Data: []byte("resources: [app.yaml]\n")},
		"bootstrap/base/app.yaml":           {Data: []byte(app)},
		"bootstrap/prod/kustomization.yaml": {Data: []byte("namePrefix: prod-\nresources: [../base]\n")},
		"bootstrap/qa/kustomization.yaml":   {Data: []byte("resources: [../base]\n")},
		"apps/web/kustomization.yaml":       {Data: []byte("resources: [deploy.yaml]\n")},
		"apps/web/deploy.yaml":              {Data: []byte(deployment("web", ""))},
		"loose/app.yaml":                    {Data: []byte(app)},
	}
	got, err := ApplicationKustomizations(context.Background(), fsys, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "bootstrap/prod bootstrap/qa" {
		t.Errorf("ApplicationKustomizations = %v, want [bootstrap/prod bootstrap/qa]", got)
	}
}
