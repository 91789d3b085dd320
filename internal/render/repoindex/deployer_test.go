package repoindex

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

const guestbook = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  template:
    spec:
      containers:
      - name: guestbook-ui
`

func argoApp(name, path, dest, kustomize string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  source:
    path: ` + path + `
` + kustomize + `  destination:
    namespace: ` + dest + "\n"
}

func fluxKs(name, path, target string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  path: ` + path + `
  targetNamespace: ` + target + "\n"
}

// TestDeployersOf checks who deploys a shared source and whose target it
// is, for each deployer field that changes where an object lands.
func TestDeployersOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		target Target
		// mine is the target's deployer ("" for none), others those that
		// share the source with other names or namespaces.
		mine   string
		others []string
	}{{
		name: "three Applications, one directory, the destination tells",
		files: map[string]string{
			"apps/a1.yaml": argoApp("demo-app1", "manifests", "demo1", ""),
			"apps/a2.yaml": argoApp("demo-app2", "manifests", "demo2", ""),
			"apps/a3.yaml": argoApp("demo-app3", "./manifests/", "demo3", ""),
		},
		target: Target{Namespace: "demo2", Name: "guestbook-ui"},
		mine:   "demo-app2", others: []string{"demo-app1", "demo-app3"},
	}, {
		name: "tracking-id picks among Applications into one namespace",
		files: map[string]string{
			"apps/a1.yaml": argoApp("demo-app1", "manifests", "demo", ""),
			"apps/a2.yaml": argoApp("demo-app2", "manifests", "demo", "    kustomize:\n      namePrefix: canary-\n"),
		},
		target: Target{Namespace: "demo", Name: "guestbook-ui", Annotations: map[string]string{ArgoTrackingID: "demo-app1:apps/Deployment:demo/guestbook-ui"}},
		mine:   "demo-app1", others: []string{"demo-app2"},
	}, {
		name: "namePrefix names the target",
		files: map[string]string{
			"apps/a1.yaml": argoApp("demo-app1", "manifests", "demo", ""),
			"apps/a2.yaml": argoApp("demo-app2", "manifests", "demo", "    kustomize:\n      namePrefix: canary-\n"),
		},
		target: Target{Namespace: "demo", Name: "canary-guestbook-ui"},
		mine:   "demo-app2", others: []string{"demo-app1"},
	}, {
		name: "a directory Application that does not recurse renders nothing below",
		files: map[string]string{
			"apps/a1.yaml": argoApp("demo-app1", "manifests", "demo1", ""),
			"apps/a2.yaml": argoApp("demo-app2", ".", "demo2", ""),
		},
		target: Target{Namespace: "demo1", Name: "guestbook-ui"},
		mine:   "demo-app1",
	}, {
		name: "exclude leaves the file out",
		files: map[string]string{
			"apps/a1.yaml": argoApp("demo-app1", "manifests", "demo1", ""),
			"apps/a2.yaml": argoApp("demo-app2", "manifests", "demo2", "    directory:\n      exclude: '{deploy*.yaml}'\n"),
		},
		target: Target{Namespace: "demo1", Name: "guestbook-ui"},
		mine:   "demo-app1",
	}, {
		name: "Flux targetNamespace over a kustomization",
		files: map[string]string{
			"manifests/kustomization.yaml": "resources:\n- deployment.yaml\n",
			"clusters/staging.yaml":        fluxKs("apps", "./manifests", "staging"),
			"clusters/production.yaml":     fluxKs("apps-production", "./manifests", "production"),
		},
		target: Target{Namespace: "production", Name: "guestbook-ui"},
		mine:   "apps-production", others: []string{"apps"},
	}, {
		name: "two deployers, one namespace and name: not shared",
		files: map[string]string{
			"clusters/a.yaml": fluxKs("a", "./manifests", "shop"),
			"clusters/b.yaml": fluxKs("b", "./manifests", "shop"),
		},
		target: Target{Namespace: "shop", Name: "guestbook-ui", Labels: map[string]string{FluxNameLabel: "b", FluxNamespaceLabel: "flux-system"}},
		mine:   "b",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"manifests/deployment.yaml": {Data: []byte(guestbook)}}
			for name, data := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			tc.target.APIVersion, tc.target.Kind = "apps/v1", "Deployment"
			w := Wants{Objects: map[IdentKey]bool{KeyOf(tc.target): true}, Dir: "."}
			idx, err := BuildIndex(context.Background(), fsys, ".", w, 0)
			if err != nil {
				t.Fatal(err)
			}
			ref, _, err := idx.Resolve(Sought{Target: tc.target, Container: "guestbook-ui"}, ".")
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			dep := idx.DeployersOf(ref, tc.target)
			mine := ""
			if dep.Mine != nil {
				mine = dep.Mine.Name
			}
			var others []string
			for _, d := range dep.Others {
				others = append(others, d.Name)
			}
			slices.Sort(others)
			if mine != tc.mine || !slices.Equal(others, tc.others) {
				t.Errorf("mine %q, others %v; want %q, %v", mine, others, tc.mine, tc.others)
			}
			if dep.Shared() != (len(tc.others) > 0) {
				t.Errorf("Shared() = %v with others %v", dep.Shared(), others)
			}
		})
	}
}

// TestAddDeployer checks the entry point for deployers that are not files
// of the repository: a live Application added to the index shares the
// directory with the one the repository holds, and names its origin.
func TestAddDeployer(t *testing.T) {
	fsys := fstest.MapFS{
		"manifests/deployment.yaml": {Data: []byte(guestbook)},
		"apps/a1.yaml":              {Data: []byte(argoApp("demo-app1", "manifests", "demo1", ""))},
	}
	target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo1", Name: "guestbook-ui"}
	idx, err := BuildIndex(context.Background(), fsys, ".", Wants{Objects: map[IdentKey]bool{KeyOf(target): true}, Dir: "."}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := idx.Resolve(Sought{Target: target, Container: "guestbook-ui"}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if idx.DeployersOf(ref, target).Shared() {
		t.Fatal("shared before the live Application is added")
	}
	docs, err := yamledit.ParseDocuments([]byte(argoApp("demo-app2", "manifests", "demo2", "")))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.AddDeployer(docs[0], "from the cluster"); err != nil {
		t.Fatal(err)
	}
	dep := idx.DeployersOf(ref, target)
	if !dep.Shared() || dep.Mine == nil || dep.Mine.Name != "demo-app1" || len(dep.Others) != 1 {
		t.Fatalf("deployment = %+v, want demo-app1's, shared with demo-app2", dep)
	}
	if got := dep.Others[0].String(); got != "Argo CD Application argocd/demo-app2 (into demo2) from the cluster" {
		t.Errorf("the live deployer reads %q", got)
	}
	if why := idx.CanPatch(dep.Others[0]); why == "" {
		t.Error("a live deployer can carry a patch in the repository")
	}
	// The same through BuildIndex, which also seeks the name a live
	// deployer's namePrefix gives.
	var prefixed map[string]any
	if err := sigsyaml.Unmarshal([]byte(argoApp("demo-app3", "manifests", "demo3", "    kustomize:\n      namePrefix: live-\n")), &prefixed); err != nil {
		t.Fatal(err)
	}
	live := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo3", Name: "live-guestbook-ui"}
	w := Wants{Objects: map[IdentKey]bool{KeyOf(live): true}, Dir: ".", Names: [][]byte{[]byte(live.Name)},
		DeployerObjects: []DeployerObject{{Object: prefixed, Origin: "from the cluster"}}}
	if idx, err = BuildIndex(context.Background(), fsys, ".", w, 0); err != nil {
		t.Fatal(err)
	}
	if ref, _, err = idx.Resolve(Sought{Target: live, Container: "guestbook-ui"}, "."); err != nil || ref.File != "manifests/deployment.yaml" {
		t.Fatalf("Resolve(%s) = %s, %v; want manifests/deployment.yaml", live, ref.File, err)
	}
	if dep := idx.DeployersOf(ref, live); dep.Mine == nil || dep.Mine.Name != "demo-app3" || !dep.Shared() {
		t.Errorf("deployment of %s = %+v, want demo-app3's, shared with demo-app1", live, dep)
	}
	notDeployer, _ := yamledit.ParseDocuments([]byte(guestbook))
	if err := idx.AddDeployer(notDeployer[0], "x"); err == nil {
		t.Error("AddDeployer took a Deployment")
	}
}
