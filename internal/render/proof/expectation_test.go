package proof

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/edits"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// built is a Deployment as a build renders it: one container "app" with
// image and a cpu request.
func built(ns, name, image, cpu string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": image,
				"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}},
		}}},
	}
}

// widget is a custom object whose resources mapping is at spec.resources.
func widget(cpu string) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"},
		"spec":     map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}},
	}
}

// cpuChange sets the cpu request of container app of Deployment name in shop.
func cpuChange(name, cpu string) Expectation {
	return Expectation{Want: edits.Resources{
		Target:    repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
		Container: "app",
		Requests:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
	}}
}

const (
	webID   = "apps/Deployment/shop/web"
	apiID   = "apps/Deployment/shop/api"
	widgtID = "example.com/Widget/shop/w"
)

// TestCompare covers what a proof accepts of a build after an edit: the
// changes' values on their objects, siblings' values on theirs, and
// nothing else.
func TestCompare(t *testing.T) {
	marker := Expectation{Want: cpuChange("w", "2").Want, Object: widgtID, Path: []string{"spec", "resources"}}
	tests := []struct {
		name          string
		before, after map[string]map[string]any
		changes, sibs []Expectation
		wantErr       string // "" for none
	}{{
		name:    "the change's value shows",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m")},
		changes: []Expectation{cpuChange("web", "250m")},
	}, {
		name:    "an equal quantity spelled otherwise shows the value",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "0.25")},
		changes: []Expectation{cpuChange("web", "250m")},
	}, {
		name:    "the value does not show",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		changes: []Expectation{cpuChange("web", "250m")},
		wantErr: "renders resources.requests.cpu 300m, want 250m",
	}, {
		name:    "the target changes beyond its resources",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx:2", "250m")},
		changes: []Expectation{cpuChange("web", "250m")},
		wantErr: webID + " changes beyond",
	}, {
		name:    "another object changes",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m"), apiID: built("shop", "api", "nginx", "1")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m"), apiID: built("shop", "api", "nginx", "2")},
		changes: []Expectation{cpuChange("web", "250m")},
		wantErr: apiID + " changes too",
	}, {
		name:    "an object is no longer rendered",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m"), apiID: built("shop", "api", "nginx", "1")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m")},
		changes: []Expectation{cpuChange("web", "250m")},
		wantErr: apiID + " is no longer rendered",
	}, {
		name:    "an object is rendered only after",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m"), apiID: built("shop", "api", "nginx", "1")},
		changes: []Expectation{cpuChange("web", "250m")},
		wantErr: apiID + " is rendered only after the edit",
	}, {
		name:    "the change's target is not in the output",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		changes: []Expectation{cpuChange("api", "250m")},
		wantErr: cpuChange("api", "250m").Want.Target.String() + " is not in the output",
	}, {
		name:    "a sibling's object need not be rendered",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m")},
		changes: []Expectation{cpuChange("web", "250m")},
		sibs:    []Expectation{cpuChange("api", "2")},
	}, {
		name:    "a sibling's object rendered without its values",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m"), apiID: built("shop", "api", "nginx", "1")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m"), apiID: built("shop", "api", "nginx", "1")},
		changes: []Expectation{cpuChange("web", "250m")},
		sibs:    []Expectation{cpuChange("api", "2")},
		wantErr: apiID + ": ",
	}, {
		name:    "a sibling shows with its own values",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m"), apiID: built("shop", "api", "nginx", "1")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m"), apiID: built("shop", "api", "nginx", "2")},
		changes: []Expectation{cpuChange("web", "250m")},
		sibs:    []Expectation{cpuChange("api", "2")},
	}, {
		name:    "a sibling shows other values",
		before:  map[string]map[string]any{webID: built("shop", "web", "nginx", "300m"), apiID: built("shop", "api", "nginx", "1")},
		after:   map[string]map[string]any{webID: built("shop", "web", "nginx", "250m"), apiID: built("shop", "api", "nginx", "3")},
		changes: []Expectation{cpuChange("web", "250m")},
		sibs:    []Expectation{cpuChange("api", "2")},
		wantErr: "renders resources.requests.cpu 3, want 2",
	}, {
		name:    "a marked object shows the value at its path",
		before:  map[string]map[string]any{widgtID: widget("1")},
		after:   map[string]map[string]any{widgtID: widget("2")},
		changes: []Expectation{marker},
	}, {
		name:    "a marked object does not show the value",
		before:  map[string]map[string]any{widgtID: widget("1")},
		after:   map[string]map[string]any{widgtID: widget("1")},
		changes: []Expectation{marker},
		wantErr: "the marked object renders spec.resources.requests.cpu 1, want 2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Compare(tt.before, tt.after, tt.changes, tt.sibs)
			checkErr(t, err, tt.wantErr)
		})
	}
}

// checkErr fails unless err is nil when want is "", or holds want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one with %q", err, want)
	}
}

// TestExpectationNames covers what an expectation names and which build
// ids it renders into.
func TestExpectationNames(t *testing.T) {
	marker := Expectation{Want: cpuChange("w", "2").Want, Object: widgtID, Path: []string{"spec", "resources"}}
	tests := []struct {
		name    string
		e       Expectation
		str     string
		renders map[string]bool
	}{{
		name:    "a target",
		e:       cpuChange("web", "1"),
		str:     cpuChange("web", "1").Want.Target.String(),
		renders: map[string]bool{webID: true, "apps/Deployment//web": true, apiID: false, "apps/StatefulSet/shop/web": false},
	}, {
		name:    "a marked object",
		e:       marker,
		str:     widgtID + " at spec.resources",
		renders: map[string]bool{widgtID: true, "apps/Deployment/shop/w": false},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			for id, want := range tt.renders {
				if got := tt.e.Renders(id); got != want {
					t.Errorf("Renders(%q) = %v, want %v", id, got, want)
				}
			}
		})
	}
}

// TestHolds covers the check that a document holds the change's values
// where its finder finds them, held resources aside.
func TestHolds(t *testing.T) {
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        resources:\n          requests:\n            cpu: %s\n            memory: 1Gi\n"
	doc := func(cpu string) []byte { return []byte(strings.Replace(deploy, "%s", cpu, 1)) }
	change := func(kv ...string) edits.Resources {
		c := edits.Resources{Target: repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, Container: "app", Requests: corev1.ResourceList{}}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Requests[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return c
	}
	// direct finds the resources mapping itself, as a marker on it does.
	direct := func(n *yaml.Node) (*yaml.Node, bool, error) {
		ctr, err := repoindex.FindContainer(n, "app")
		if err != nil {
			return nil, false, err
		}
		_, res, _ := yamledit.Lookup(ctr, "resources")
		return res, true, nil
	}
	tests := []struct {
		name    string
		data    []byte
		doc     int
		find    repoindex.Finder
		c       edits.Resources
		held    []corev1.ResourceName
		wantErr string
	}{
		{name: "holds the values", data: doc("250m"), c: change("cpu", "250m", "memory", "1Gi")},
		{name: "an equal quantity spelled otherwise", data: doc("0.25"), c: change("cpu", "250m")},
		{name: "a value differs", data: doc("300m"), c: change("cpu", "250m"), wantErr: `document 1 does not hold requests cpu 250m of container "app"`},
		{name: "a held value is not looked at", data: doc("300m"), c: change("cpu", "250m", "memory", "1Gi"), held: []corev1.ResourceName{corev1.ResourceCPU}},
		{name: "a value is missing", data: doc("250m"), c: change("cpu", "250m", "ephemeral-storage", "1Gi"), wantErr: "does not hold requests ephemeral-storage 1Gi"},
		{name: "the resources mapping found directly", data: doc("250m"), find: direct, c: change("cpu", "250m")},
		{name: "the document is gone", data: doc("250m"), doc: 1, c: change("cpu", "250m"), wantErr: "document 2 is gone"},
		{name: "the second document", data: append([]byte("kind: Other\n---\n"), doc("2")...), doc: 1, c: change("cpu", "2")},
		{name: "the container is gone", data: doc("250m"), find: edits.ContainerFinder("gone"), c: change("cpu", "250m"), wantErr: "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			find := tt.find
			if find == nil {
				find = edits.ContainerFinder("app")
			}
			checkErr(t, Holds(tt.data, tt.doc, find, tt.c, tt.held), tt.wantErr)
		})
	}
}
