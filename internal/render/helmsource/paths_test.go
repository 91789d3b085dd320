package helmsource

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestValuesFrom checks the values a HelmRelease takes from a ConfigMap
// its build renders: a whole values file, or one value at targetPath, a
// quoted one as a string; and that what cannot be read is refused.
func TestValuesFrom(t *testing.T) {
	out := map[string]map[string]any{
		"/ConfigMap/shop/web-values-5f8d9g7h2k": {"metadata": map[string]any{"name": "web-values-5f8d9g7h2k"},
			"data": map[string]any{"values.yaml": "replicas: 2\nweb: {image: x}\n", "cpu": "500m", "tag": `"1.10"`, "bad": "a: [\n"}},
		"/ConfigMap/other/plain": {"metadata": map[string]any{"name": "plain"}, "data": map[string]any{"values.yaml": "a: 1\n"}},
	}
	tests := []struct {
		name                  string
		kind, cm, key, target string
		ns                    string
		want                  map[string]any
		why                   string // the error wanted instead
	}{
		{name: "a generated ConfigMap's values file", kind: "ConfigMap", cm: "web-values", ns: "shop",
			want: map[string]any{"replicas": 2.0, "web": map[string]any{"image": "x"}}},
		{name: "one value at targetPath", kind: "ConfigMap", cm: "web-values", key: "cpu", target: "web.resources.requests.cpu", ns: "shop",
			want: map[string]any{"web": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "500m"}}}}},
		{name: "a quoted value is a string", kind: "ConfigMap", cm: "web-values", key: "tag", target: "image.tag", ns: "shop",
			want: map[string]any{"image": map[string]any{"tag": "1.10"}}},
		{name: "another namespace's", kind: "ConfigMap", cm: "plain", ns: "shop", why: "not rendered with the HelmRelease"},
		{name: "a Secret", kind: "Secret", cm: "web-values", ns: "shop", why: "only ConfigMaps"},
		{name: "a missing key", kind: "ConfigMap", cm: "web-values", key: "none", ns: "shop", why: "the ConfigMap has no such key"},
		{name: "values that do not parse", kind: "ConfigMap", cm: "web-values", key: "bad", ns: "shop", why: "valuesFrom ConfigMap shop/web-values key bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ValuesFrom(tt.kind, tt.cm, tt.key, tt.target, tt.ns, out)
			if tt.why != "" {
				if err == nil || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("ValuesFrom = %v, %v; want an error saying %q", l.Values, err, tt.why)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(l.Values, tt.want) {
				t.Errorf("ValuesFrom = %v, %v; want %v", l.Values, err, tt.want)
			}
			if l.Writable || l.File != "" {
				t.Errorf("a ConfigMap's layer is writable %v, file %q: want neither", l.Writable, l.File)
			}
		})
	}
}

// TestGeneratedName checks kustomize's generator suffix.
func TestGeneratedName(t *testing.T) {
	for _, tt := range []struct {
		n, name string
		want    bool
	}{
		{"web-values-5f8d9g7h2k", "web-values", true},
		{"web-values", "web-values", false},
		{"web-values-5f8d9g7h2", "web-values", false},
		{"web-values-5f8d9-7h2k", "web-values", false},
		{"web-values-other-5f8d9g7h2k", "web-values", false},
	} {
		if got := GeneratedName(tt.n, tt.name); got != tt.want {
			t.Errorf("GeneratedName(%q, %q) = %v, want %v", tt.n, tt.name, got, tt.want)
		}
	}
}

// TestDeployer checks the order in which a live object's metadata names
// what deploys it.
func TestDeployer(t *testing.T) {
	tests := []struct {
		name        string
		labels, ann map[string]string
		want        string
	}{
		{name: "nothing"},
		{name: "helm-controller, its namespace defaulted", labels: map[string]string{repoindex.FluxHelmName: "web", repoindex.InstanceLabel: "x"}, want: "helmrelease/shop/web"},
		{name: "helm-controller", labels: map[string]string{repoindex.FluxHelmName: "web", repoindex.FluxHelmNamespace: "flux"}, want: "helmrelease/flux/web"},
		{name: "tracking-id over Flux", ann: map[string]string{repoindex.ArgoTrackingID: "argocd_web:apps/Deployment:shop/web"},
			labels: map[string]string{repoindex.FluxNameLabel: "apps"}, want: "argocd/argocd_web"},
		{name: "Flux Kustomization", labels: map[string]string{repoindex.FluxNameLabel: "apps", repoindex.FluxNamespaceLabel: "flux-system"}, want: "kustomization/flux-system/apps"},
		{name: "Helm's annotations over the instance label", ann: map[string]string{repoindex.HelmReleaseName: "r"},
			labels: map[string]string{repoindex.InstanceLabel: "r"}, want: "helm/shop/r"},
		{name: "the instance label last", labels: map[string]string{repoindex.InstanceLabel: "web"}, want: "argocd/web"},
	}
	for _, tt := range tests {
		got := Deployer(repoindex.Target{Namespace: "shop", Name: "web", Labels: tt.labels, Annotations: tt.ann})
		if got != tt.want {
			t.Errorf("%s: Deployer = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestPaths checks reading and setting values at paths through mappings
// and lists, and what they refuse.
func TestPaths(t *testing.T) {
	p := helm.Path{helm.Key("web"), helm.Key("containers"), helm.Index(1), helm.Key("cpu")}
	obj := map[string]any{"web": map[string]any{"containers": []any{map[string]any{"cpu": "1"}, map[string]any{"cpu": "2"}}}}
	if got := DigPath(obj, p); got != "2" {
		t.Errorf("DigPath = %v, want 2", got)
	}
	for _, bad := range []helm.Path{
		{helm.Key("web"), helm.Key("containers"), helm.Index(5)},
		{helm.Key("web"), helm.Index(0)},
		{helm.Key("web"), helm.Key("containers"), helm.Key("cpu")},
		{helm.Key("missing"), helm.Key("x")},
	} {
		if got := DigPath(obj, bad); got != nil {
			t.Errorf("DigPath(%v) = %v, want nil", bad, got)
		}
	}
	if !SetPath(obj, p, "3") || DigPath(obj, p) != "3" {
		t.Errorf("SetPath through a list: %v", obj)
	}
	if !SetPath(obj, KeysPath("api", "resources", "cpu"), "1") || DigPath(obj, KeysPath("api", "resources", "cpu")) != "1" {
		t.Errorf("SetPath creating mappings: %v", obj)
	}
	for _, bad := range []helm.Path{
		{helm.Key("new"), helm.Index(0), helm.Key("cpu")},
		{helm.Key("web"), helm.Key("containers"), helm.Index(9), helm.Key("cpu")},
		{helm.Key("api"), helm.Key("resources"), helm.Key("cpu"), helm.Key("x")},
	} {
		if SetPath(obj, bad, "1") {
			t.Errorf("SetPath(%v) = true, want false", bad)
		}
	}
	if keys, ok := PathKeys(KeysPath("a", "b")); !ok || strings.Join(keys, ".") != "a.b" {
		t.Errorf("PathKeys = %v, %v", keys, ok)
	}
	if _, ok := PathKeys(p); ok {
		t.Error("PathKeys of a path through a list = ok")
	}
	q := resource.MustParse("250m")
	for v, want := range map[any]bool{"250m": true, "0.25": true, 0.25: true, int64(1): false, "x": false, true: false} {
		if got := SameQuantityValue(v, q); got != want {
			t.Errorf("SameQuantityValue(%#v, 250m) = %v, want %v", v, got, want)
		}
	}
}

// TestAssignmentEntries checks the entries a new file or key gets:
// assignments that share keys nest under them, in order; a list step is
// refused, since a patch replaces a list whole.
func TestAssignmentEntries(t *testing.T) {
	as := []Assignment{
		{Path: KeysPath("web", "resources", "requests", "cpu"), Quantity: resource.MustParse("250m")},
		{Path: KeysPath("web", "resources", "limits", "memory"), Quantity: resource.MustParse("1Gi")},
		{Path: KeysPath("web", "resources", "requests", "memory"), Quantity: resource.MustParse("512Mi")},
	}
	entries, err := AssignmentEntries(as)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		for _, r := range e.Children {
			for _, s := range r.Children {
				for _, q := range s.Children {
					lines = append(lines, e.Key+"."+r.Key+"."+s.Key+"."+q.Key+"="+q.Value)
				}
			}
		}
	}
	want := "web.resources.requests.cpu=250m web.resources.requests.memory=512Mi web.resources.limits.memory=1Gi"
	if strings.Join(lines, " ") != want {
		t.Errorf("entries %s, want %s", strings.Join(lines, " "), want)
	}
	list := []Assignment{{Path: helm.Path{helm.Key("web"), helm.Index(0), helm.Key("cpu")}, Quantity: resource.MustParse("1")}}
	if _, err := AssignmentEntries(list); !errors.Is(err, repoindex.ErrUnsafeFile) {
		t.Errorf("an item of a list: %v, want ErrUnsafeFile", err)
	}
	top := []Assignment{{Path: helm.Path{helm.Index(0)}, Quantity: resource.MustParse("1")}}
	if _, err := AssignmentEntries(top); !errors.Is(err, repoindex.ErrUnsafeFile) {
		t.Errorf("a list at the top: %v, want ErrUnsafeFile", err)
	}
}

// TestReleaseNames checks how a release names itself and its object.
func TestReleaseNames(t *testing.T) {
	ref := repoindex.DocRef{File: "apps/web.yaml", Key: repoindex.IdentKey{Group: repoindex.FluxHelmGroup, Kind: "HelmRelease", Name: "web"}, Namespace: "shop"}
	r := &Release{Kind: "HelmRelease", Ref: ref}
	if got := r.String(); got != "HelmRelease shop/web (apps/web.yaml)" {
		t.Errorf("String = %q", got)
	}
	if got := r.BuildID(); got != repoindex.FluxHelmGroup+"/HelmRelease/shop/web" {
		t.Errorf("BuildID = %q", got)
	}
	r.Ref.Namespace = ""
	r.Ref.Chain = repoindex.Chain{&repoindex.Kustomization{Dir: "envs/prod"}}
	if got := r.String(); got != "HelmRelease web (apps/web.yaml, rendered by envs/prod)" {
		t.Errorf("String with a renderer = %q", got)
	}
}

// TestSmallHelpers checks the helpers whose doc says all they do.
func TestSmallHelpers(t *testing.T) {
	if OrDefault("", "d") != "d" || OrDefault("s", "d") != "s" {
		t.Error("OrDefault")
	}
	x := map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"v": 1}}
	y := map[string]any{"metadata": map[string]any{"name": "b"}, "spec": map[string]any{"v": 1.0}}
	if !EqualSpec(x, y) {
		t.Error("EqualSpec: same spec, other metadata, not equal")
	}
	if EqualSpec(x, map[string]any{"spec": map[string]any{"v": 2}}) {
		t.Error("EqualSpec: other specs equal")
	}
	merged := MergeLayers([]Layer{
		{Values: map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 1}}},
		{Values: map[string]any{"m": map[string]any{"y": 2}}},
	})
	if !reflect.DeepEqual(merged, map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}}) {
		t.Errorf("MergeLayers = %v, want later layers over earlier, mappings merged", merged)
	}
	if got := EscapeGlob(`values-[a]*?.yaml`); got != `values-\[a]\*\?.yaml` {
		t.Errorf("EscapeGlob = %q", got)
	}
}
