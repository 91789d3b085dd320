package edits

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

const substituted = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources:
          requests:
            cpu: ${CPU}
`

// fluxApp is a Flux Kustomization that deploys app into shop, with
// postBuild.substitute's entries subst.
func fluxApp(subst string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./app\n  targetNamespace: shop\n  postBuild:\n    substitute:\n" + subst
}

// TestViaDeployerVariables covers a request written as a variable that
// the target's Flux Kustomization fills: the value is set where the
// deployer sets the variable, and refused where it does not.
func TestViaDeployerVariables(t *testing.T) {
	tests := []struct {
		name    string
		subst   string
		cpu     string
		want    string // the substitute entries after, "" when refused
		changed bool
		err     error
	}{{
		name:    "a quoted value",
		subst:   "      CPU: \"300m\" # tuned\n",
		cpu:     "250m",
		want:    "      CPU: \"250m\" # tuned\n",
		changed: true,
	}, {
		name:    "a bare number stays a string",
		subst:   "      CPU: \"1\"\n",
		cpu:     "2",
		want:    "      CPU: \"2\"\n",
		changed: true,
	}, {
		name:    "a plain value becoming a bare number is quoted",
		subst:   "      CPU: 500m # tuned\n",
		cpu:     "2",
		want:    "      CPU: \"2\" # tuned\n",
		changed: true,
	}, {
		name:    "a plain value",
		subst:   "      CPU: 500m\n",
		cpu:     "250m",
		want:    "      CPU: 250m\n",
		changed: true,
	}, {
		name:  "the same quantity changes nothing",
		subst: "      CPU: 500m\n",
		cpu:   "0.5",
		want:  "      CPU: 500m\n",
	}, {
		name:  "a variable the deployer does not set",
		subst: "      MEMORY: 1Gi\n",
		cpu:   "250m",
		err:   repoindex.ErrSharedSource,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t, map[string]string{
				"app/web.yaml":      substituted,
				"clusters/app.yaml": fluxApp(tt.subst),
			})
			c := webChange("app", tt.cpu)
			c.Target.Labels = map[string]string{repoindex.FluxNameLabel: "web", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
			ref, find, err := r.w.Index.Resolve(c.sought(), ".")
			if err != nil {
				t.Fatal(err)
			}
			var res Placed
			done, d, touched := r.w.ViaDeployer(c, ref, find, &res)
			if !done {
				t.Fatal("ViaDeployer left a value written as a variable to the usual placement")
			}
			data, _, _ := r.w.FileEdits("clusters/app.yaml")
			if tt.err != nil {
				if !errors.Is(res.Err, tt.err) {
					t.Errorf("error %v, want %v", res.Err, tt.err)
				}
				if string(data) != "" && string(data) != fluxApp(tt.subst) {
					t.Errorf("a refused change edited the deployer:\n%s", data)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if d == nil || d.File != "clusters/app.yaml" || res.File != "clusters/app.yaml" || !slices.Equal(touched, []string{"clusters/app.yaml"}) || res.Changed != tt.changed {
				t.Errorf("ViaDeployer = %v, %v, %+v; want the deployer's file, changed %v", d, touched, res, tt.changed)
			}
			if msg := firstDiff([]byte(fluxApp(tt.want)), data); msg != "" {
				t.Error(msg)
			}
			if data, orig, _ := r.w.FileEdits("app/web.yaml"); string(data) != string(orig) {
				t.Errorf("the manifest was edited:\n%s", data)
			}
		})
	}
}

// TestViaDeployerPatch covers a source that two Flux Kustomizations
// deploy into different namespaces: the change goes in the patches of the
// target's own deployer, and a second change updates that patch rather
// than adding another.
func TestViaDeployerPatch(t *testing.T) {
	flux := func(name, ns string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name + "\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./app\n  targetNamespace: " + ns + "\n"
	}
	r := newTestRepo(t, map[string]string{
		"app/web.yaml":        webManifest,
		"clusters/shop.yaml":  flux("web", "shop"),
		"clusters/stage.yaml": flux("web-stage", "stage"),
	})
	for _, cpu := range []string{"250m", "200m"} {
		c := webChange("app", cpu)
		c.Target.Labels = map[string]string{repoindex.FluxNameLabel: "web", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
		ref, find, err := r.w.Index.Resolve(c.sought(), ".")
		if err != nil {
			t.Fatal(err)
		}
		var res Placed
		done, d, touched := r.w.ViaDeployer(c, ref, find, &res)
		if !done || res.Err != nil || !res.Changed || d == nil || d.File != "clusters/shop.yaml" || !slices.Equal(touched, []string{"clusters/shop.yaml"}) {
			t.Fatalf("cpu %s: ViaDeployer = %v, %v, %v, %+v; want a changed patch in clusters/shop.yaml", cpu, done, d, touched, res)
		}
		doc, err := r.w.Doc("clusters/shop.yaml", 0)
		if err != nil {
			t.Fatal(err)
		}
		ds := repoindex.DecodeDeployers(doc, "clusters/shop.yaml", "clusters/shop.yaml", 0)
		if len(ds) != 1 || len(ds[0].Patches) != 1 {
			t.Fatalf("cpu %s: the deployer decodes as %+v, want one with one patch", cpu, ds)
		}
		patch, _ := ds[0].Patches[0].(map[string]any)
		text, _ := patch["patch"].(string)
		target, _ := patch["target"].(map[string]any)
		if !strings.Contains(text, "cpu: "+cpu) || target["kind"] != "Deployment" || target["name"] != "web" || target["group"] != "apps" {
			t.Errorf("cpu %s: the patch is %v", cpu, patch)
		}
	}
	for _, f := range []string{"app/web.yaml", "clusters/stage.yaml"} {
		if data, orig, ok := r.w.FileEdits(f); ok && string(data) != string(orig) {
			t.Errorf("%s was edited:\n%s", f, data)
		}
	}
}
