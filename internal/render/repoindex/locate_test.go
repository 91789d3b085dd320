package repoindex

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

func parseDoc(t *testing.T, in string) *yaml.Node {
	t.Helper()
	docs, err := yamledit.ParseDocuments([]byte(in))
	if err != nil || len(docs) != 1 {
		t.Fatalf("parse %q: %d documents, %v", in, len(docs), err)
	}
	return docs[0]
}

// TestLocateContainer checks that a container is found in the pod
// template its kind has, a native sidecar among the init containers, and
// that every node on the way is safe to edit.
func TestLocateContainer(t *testing.T) {
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n"
	tests := []struct {
		name, in, container string
		// pod and field are where the container is; err the error wanted
		// instead, and why what it says.
		pod, field string
		err        error
		why        string
	}{
		{name: "a container", container: "app",
			in:  deploy + "      containers:\n      - name: side\n      - name: app\n        image: x\n",
			pod: "spec.template.spec", field: "containers"},
		{name: "a CronJob's", container: "app",
			in:  "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: job}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: app}]\n",
			pod: "spec.jobTemplate.spec.template.spec", field: "containers"},
		{name: "a custom kind shaped like a CronJob", container: "app",
			in:  "apiVersion: example.com/v1\nkind: Batch\nmetadata: {name: b}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: app}]\n",
			pod: "spec.jobTemplate.spec.template.spec", field: "containers"},
		{name: "a native sidecar", container: "proxy",
			in:  deploy + "      containers: [{name: app}]\n      initContainers:\n      - name: proxy\n        restartPolicy: Always\n",
			pod: "spec.template.spec", field: "initContainers"},
		{name: "a plain init container", container: "migrate",
			in:  deploy + "      containers: [{name: app}]\n      initContainers: [{name: migrate}]\n",
			err: ErrContainerNotFound, why: "not a native sidecar"},
		{name: "no such container", container: "db",
			in:  deploy + "      containers: [{name: app}]\n",
			err: ErrContainerNotFound, why: `no container "db" in spec.template.spec`},
		{name: "no pod template", container: "app",
			in:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n",
			err: ErrContainerNotFound, why: "no pod template (spec.template.spec)"},
		{name: "twice", container: "app",
			in:  deploy + "      containers:\n      - name: app\n      - name: app\n",
			err: ErrAmbiguousTarget, why: "appears 2 times"},
		{name: "containers is not a list", container: "app",
			in:  deploy + "      containers: {name: app}\n",
			err: ErrContainerNotFound, why: "is not a list"},
		{name: "the container anchored", container: "app",
			in:  deploy + "      containers:\n      - &c\n        name: app\n      initContainers: [*c]\n",
			err: ErrUnsafeFile, why: `container "app" has an anchor`},
		{name: "the pod spec merged", container: "app",
			in:  "base: &b {containers: [{name: app}]}\n" + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      <<: *b\n",
			err: ErrUnsafeFile, why: "merge key"},
		{name: "an anchor on another container is no concern", container: "app",
			in:  deploy + "      containers:\n      - &s {name: side}\n      - name: app\n      initContainers: [*s]\n",
			pod: "spec.template.spec", field: "containers"},
		{name: "the list defined twice", container: "app",
			in:  deploy + "      containers: [{name: app}]\n      containers: [{name: app}]\n",
			err: ErrUnsafeFile, why: "defined twice"},
		{name: "a document that is no mapping", container: "app",
			in: "- a\n", err: ErrContainerNotFound, why: "not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, at, err := LocateContainer(parseDoc(t, tt.in), tt.container)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("LocateContainer = %v; want %v saying %q", err, tt.err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name, _ := yamledit.ScalarField(c, "name"); name != tt.container {
				t.Errorf("found container %q, want %q", name, tt.container)
			}
			if strings.Join(at.Pod, ".") != tt.pod || at.Field != tt.field {
				t.Errorf("at %v.%s, want %s.%s", at.Pod, at.Field, tt.pod, tt.field)
			}
			if c2, err := FindContainer(parseDoc(t, tt.in), tt.container); err != nil || c2.Line != c.Line {
				t.Errorf("FindContainer disagrees with LocateContainer: %v", err)
			}
		})
	}
}

// TestMappingAt checks that a missing or null key gives nil, and a node
// on the way that is not a mapping or unsafe gives an error.
func TestMappingAt(t *testing.T) {
	root := yamledit.DocRoot(parseDoc(t, "x: &x {y: 1}\na:\n  b:\n    c: {x: 1}\n  n: ~\n  s: text\n  al: *x\n"))
	tests := []struct {
		keys string
		want string // the key x's value in the result; "nil" for nil
		err  error
	}{
		{keys: "a.b.c", want: "1"},
		{keys: "a.missing.c", want: "nil"},
		{keys: "a.n.c", want: "nil"},
		{keys: "a.s.c", err: ErrContainerNotFound},
		{keys: "a.al", err: ErrUnsafeFile},
		{keys: "x", err: ErrUnsafeFile},
	}
	for _, tt := range tests {
		m, err := MappingAt(root, strings.Split(tt.keys, "."))
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("MappingAt(%s) = %v, want %v", tt.keys, err, tt.err)
			}
			continue
		}
		got := "nil"
		if m != nil {
			_, v, _ := yamledit.Lookup(m, "x")
			got = v.Value
		}
		if err != nil || got != tt.want {
			t.Errorf("MappingAt(%s) = %s, %v; want %s", tt.keys, got, err, tt.want)
		}
	}
}

// resolveMarked indexes files and resolves s, with the index.
func resolveMarked(files map[string]string, s Sought) (*Index, DocRef, Finder, error) {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	w := Wants{Objects: map[IdentKey]bool{KeyOf(s.Target): true}, Dir: "."}
	idx, err := BuildIndex(context.Background(), fsys, ".", w, 0)
	if err != nil {
		return nil, DocRef{}, nil, err
	}
	ref, find, err := idx.Resolve(s, ".")
	return idx, ref, find, err
}

// TestMarkers checks that a marker maps a file to one container's
// resources: on the resources key, or on the key of a mapping that holds
// them, or on a mapping that is the resources itself; and that a marker
// that would be ambiguous or cannot be patched is refused.
func TestMarkers(t *testing.T) {
	const mark = ` # {"$recommend": "shop/web:app"}`
	target := Sought{Target: web("web", "shop"), Container: "app"}
	tests := []struct {
		name  string
		files map[string]string
		// holder is a key of the marked mapping, direct whether it is the
		// resources itself; err the error wanted instead.
		holder string
		direct bool
		err    error
	}{
		{name: "on the resources key",
			files:  map[string]string{"charts/web/values.yaml": "web:\n  image: x\n  resources:" + mark + "\n    requests: {cpu: 1}\n"},
			holder: "image"},
		{name: "on the key above resources",
			files:  map[string]string{"values.yaml": "web:" + mark + "\n  image: x\n  resources: {}\n"},
			holder: "image"},
		{name: "on the resources themselves, under another name",
			files:  map[string]string{"values.yaml": "webResources:" + mark + "\n  requests: {cpu: 1}\n"},
			holder: "requests", direct: true},
		{name: "wins over a manifest",
			files: map[string]string{
				"values.yaml":   "web:\n  resources:" + mark + "\n    limits: {}\n",
				"apps/web.yaml": deployment("web", "shop"),
			},
			holder: "resources"},
		{name: "twice",
			files: map[string]string{"a.yaml": "resources:" + mark + "\n  cpu: 1\n", "b.yaml": "resources:" + mark + "\n  cpu: 1\n"},
			err:   ErrAmbiguousTarget},
		{name: "in a file two environments render, with no hint",
			files: map[string]string{
				"base/kustomization.yaml": "resources: [deploy.yaml]\n",
				"base/deploy.yaml":        deployment("web", "") + "      - name: x\n        resources:" + mark + "\n          cpu: 1\n",
				"a/kustomization.yaml":    "resources: [../base]\n",
				"b/kustomization.yaml":    "resources: [../base]\n",
			},
			err: ErrAmbiguousTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, ref, find, err := resolveMarked(tt.files, target)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Resolve = %s, %v; want %v", ref.File, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if find == nil {
				t.Fatal("no finder for a marker")
			}
			docs, err := yamledit.ParseDocuments(idx.Files[ref.File].Data)
			if err != nil {
				t.Fatal(err)
			}
			m, direct, err := find(docs[ref.Doc])
			if err != nil {
				t.Fatal(err)
			}
			if !HasKey(m, tt.holder) || direct != tt.direct {
				t.Errorf("marked mapping holds %q: %v, direct %v; want it to, direct %v", tt.holder, HasKey(m, tt.holder), direct, tt.direct)
			}
		})
	}
}

// TestMarkedObject checks the object and keys a marked mapping has in a
// kustomize build, and that a mapping inside a list is refused.
func TestMarkedObject(t *testing.T) {
	const mark = ` # {"$recommend": "shop/web:app"}`
	hr := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web}\nspec:\n  values:\n    web:\n      resources:" + mark + "\n        cpu: 1\n"
	ref := DocRef{File: "hr.yaml", Key: IdentKey{Group: FluxHelmGroup, Kind: "HelmRelease", Name: "p-web"}, Namespace: "shop"}
	id, keys, direct, err := MarkedObject(parseDoc(t, hr), ref, "shop/web:app")
	if err != nil {
		t.Fatal(err)
	}
	if id != FluxHelmGroup+"/HelmRelease/shop/p-web" || !slices.Equal(keys, []string{"spec", "values", "web"}) || direct {
		t.Errorf("MarkedObject = %s, %v, %v; want the HelmRelease's id, [spec values web], false", id, keys, direct)
	}
	inList := "apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems:\n- resources:" + mark + "\n    cpu: 1\n"
	if _, _, _, err := MarkedObject(parseDoc(t, inList), ref, "shop/web:app"); !errors.Is(err, ErrUnsafeFile) {
		t.Errorf("marker in a list: %v, want ErrUnsafeFile", err)
	}
	if _, _, _, err := MarkedObject(parseDoc(t, hr), DocRef{File: "values.yaml"}, "shop/web:app"); !errors.Is(err, ErrUnsafeFile) {
		t.Errorf("marker outside an object: %v, want ErrUnsafeFile", err)
	}
	if _, _, _, err := MarkedObject(parseDoc(t, hr), ref, "shop/other:app"); !errors.Is(err, ErrAmbiguousTarget) {
		t.Errorf("marker that is not there: %v, want an error", err)
	}
}

// TestIdentity checks the small functions that name objects.
func TestIdentity(t *testing.T) {
	for av, want := range map[string]string{"apps/v1": "apps", "v1": "", "argoproj.io/v1alpha1": "argoproj.io"} {
		if got := Group(av); got != want {
			t.Errorf("Group(%s) = %q, want %q", av, got, want)
		}
	}
	for _, tt := range []struct {
		t    Target
		want string
	}{
		{web("web", "shop"), "Deployment.apps shop/web"},
		{Target{APIVersion: "v1", Kind: "Pod", Name: "p"}, "Pod p"},
	} {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	for p, want := range map[string]string{"./apps/web/": "apps/web", "/apps": "apps", ".": ".", "": ".", "../x": "x", "a//b/../c": "a/c"} {
		if got := CleanRepoPath(p); got != want {
			t.Errorf("CleanRepoPath(%q) = %q, want %q", p, got, want)
		}
	}
	for name, want := range map[string]bool{"a.yaml": true, "a.YML": true, "a.json": false, "yaml": false} {
		if got := IsYAMLName(name); got != want {
			t.Errorf("IsYAMLName(%s) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"kustomization.yaml": true, "dir/kustomization.yml": true, "Kustomization": true, "kustomization.json": false, "my-kustomization.yaml": false} {
		if got := IsKustomizationName(name); got != want {
			t.Errorf("IsKustomizationName(%s) = %v", name, got)
		}
	}
	for _, tt := range []struct {
		in   string
		key  IdentKey
		ns   string
		isOK bool
	}{
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n", IdentKey{"apps", "Deployment", "web"}, "shop", true},
		{"apiVersion: v1\nkind: Pod\nmeta: &m {name: p}\nmetadata: *m\n", IdentKey{"", "Pod", "p"}, "", true},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: ''}\n", IdentKey{}, "", false},
		{"kind: Pod\nmetadata: {name: p}\n", IdentKey{}, "", false},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\n", IdentKey{}, "", false},
		{"[a]\n", IdentKey{}, "", false},
	} {
		key, ns, ok := Identify(parseDoc(t, tt.in))
		if key != tt.key || ns != tt.ns || ok != tt.isOK {
			t.Errorf("Identify(%q) = %+v, %q, %v; want %+v, %q, %v", tt.in, key, ns, ok, tt.key, tt.ns, tt.isOK)
		}
	}
	if got := MarkerValue("shop", "web", "app"); got != "shop/web:app" {
		t.Errorf("MarkerValue = %q", got)
	}
}

// TestArgoHints checks the Argo CD application a target names, and when
// Helm may render it.
func TestArgoHints(t *testing.T) {
	tests := []struct {
		name        string
		labels, ann map[string]string
		app         string
		helm        bool
	}{
		{name: "none"},
		{name: "tracking-id", ann: map[string]string{ArgoTrackingID: "argocd_shop:apps/Deployment:shop/web"}, app: "argocd_shop", helm: true},
		{name: "tracking-id over the label", ann: map[string]string{ArgoTrackingID: "a:apps/Deployment:shop/web"}, labels: map[string]string{InstanceLabel: "b"}, app: "a", helm: true},
		{name: "instance label", labels: map[string]string{InstanceLabel: "b"}, app: "b", helm: true},
		{name: "Helm's annotation", ann: map[string]string{HelmReleaseName: "r"}, helm: true},
		{name: "helm-controller's label", labels: map[string]string{FluxHelmName: "r"}, helm: true},
		{name: "managed by Helm", labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}, helm: true},
		{name: "Flux Kustomization", labels: map[string]string{FluxNameLabel: "apps"}},
	}
	for _, tt := range tests {
		target := Target{Labels: tt.labels, Annotations: tt.ann}
		if got := ArgoApp(target); got != tt.app {
			t.Errorf("%s: ArgoApp = %q, want %q", tt.name, got, tt.app)
		}
		if got := MayBeHelm(target); got != tt.helm {
			t.Errorf("%s: MayBeHelm = %v, want %v", tt.name, got, tt.helm)
		}
	}
}

// TestArgoGlob checks Argo CD's include and exclude patterns.
func TestArgoGlob(t *testing.T) {
	tests := []struct {
		pattern, rel string
		want         bool
	}{
		{"*.yaml", "web.yaml", true},
		{"*.yaml", "sub/web.yaml", true}, // by its base name
		{"sub/*.yaml", "sub/web.yaml", true},
		{"{deploy*.yaml,svc.yaml}", "deploy-web.yaml", true},
		{"{deploy*.yaml, svc.yaml}", "svc.yaml", true},
		{"{deploy*.yaml,svc.yaml}", "config.yaml", false},
		{"*.json", "web.yaml", false},
	}
	for _, tt := range tests {
		if got := ArgoGlob(tt.pattern, tt.rel); got != tt.want {
			t.Errorf("ArgoGlob(%q, %q) = %v, want %v", tt.pattern, tt.rel, got, tt.want)
		}
	}
}
