package helmsource

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// ourPostRenderer is the spec.postRenderers the job writes for patches,
// decoded as a HelmRelease's.
func ourPostRenderer(t *testing.T, patches []WorkloadPatch, step int) ([]FluxPostRenderer, string) {
	t.Helper()
	text := strings.Join(PostRendererLines(patches, 0, step), "\n") + "\n"
	var spec struct {
		PostRenderers []FluxPostRenderer `json:"postRenderers"`
	}
	if err := sigsyaml.Unmarshal([]byte(text), &spec); err != nil {
		t.Fatalf("the post-renderer does not parse: %v\n%s", err, text)
	}
	return spec.PostRenderers, text
}

// TestOurPostRenderer checks that the post-renderer the job writes is
// told from others, reads back as the workloads and values it was
// written from, whatever the indentation step, and sizes the containers
// when applied.
func TestOurPostRenderer(t *testing.T) {
	patches := []WorkloadPatch{
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Containers: []ContainerValues{{Name: "pg", Requests: list("memory", "1Gi")}}},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Containers: []ContainerValues{
			{Name: "proxy", Init: true, Limits: list("cpu", "1")},
			{Name: "app", Requests: list("cpu", "250m", "memory", "512Mi"), Limits: list("memory", "1Gi")},
		}},
		{APIVersion: "batch/v1", Kind: "CronJob", Name: "report", Containers: []ContainerValues{{Name: "run", Requests: list("cpu", "100m")}}},
	}
	for _, step := range []int{2, 4} {
		prs, text := ourPostRenderer(t, patches, step)
		if !IsOurs(prs) {
			t.Fatalf("step %d: IsOurs = false for\n%s", step, text)
		}
		back, err := OurPatches(prs)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]WorkloadPatch{}
		for _, w := range back {
			byName[w.Kind+"/"+w.Name] = w
		}
		for _, want := range patches {
			got := byName[want.Kind+"/"+want.Name]
			if got.APIVersion != want.APIVersion || len(got.Containers) != len(want.Containers) {
				t.Errorf("step %d: %s/%s read back as %+v", step, want.Kind, want.Name, got)
				continue
			}
			for _, wc := range want.Containers {
				var gc *ContainerValues
				for i := range got.Containers {
					if got.Containers[i].Name == wc.Name {
						gc = &got.Containers[i]
					}
				}
				if gc == nil || gc.Init != wc.Init || !sameList(gc.Requests, wc.Requests) || !sameList(gc.Limits, wc.Limits) {
					t.Errorf("step %d: %s container %s read back as %+v, want %+v", step, want.Name, wc.Name, gc, wc)
				}
			}
		}
	}

	// Applied to the chart's output, the patch sizes the container and
	// keeps what the chart set.
	prs, _ := ourPostRenderer(t, patches[1:2], 2)
	web := helm.Object{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Body: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers":     []any{map[string]any{"name": "app", "image": "web:1", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}},
			"initContainers": []any{map[string]any{"name": "proxy", "restartPolicy": "Always"}},
		}}},
	}}
	out, err := PostRender([]helm.Object{web}, prs, false)
	if err != nil {
		t.Fatal(err)
	}
	app := firstItem(out[0].Body, "spec", "template", "spec", "containers")
	want := map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "512Mi"}, "limits": map[string]any{"memory": "1Gi"}}
	if app["image"] != "web:1" || !reflect.DeepEqual(app["resources"], want) {
		t.Errorf("patched app = %v, want image kept and resources %v", app, want)
	}
	if apiVersion, init, ok := RenderedContainer(out, helm.Container{Kind: "Deployment", Name: "web", Container: "proxy"}); !ok || !init || apiVersion != "apps/v1" {
		t.Errorf("RenderedContainer(proxy) = %q, %v, %v; want an init container of apps/v1", apiVersion, init, ok)
	}
	if _, _, ok := RenderedContainer(out, helm.Container{Kind: "Deployment", Name: "web", Container: "db"}); ok {
		t.Error("RenderedContainer found a container the output does not have")
	}
}

// firstItem returns the first item of the list at keys under v.
func firstItem(v map[string]any, keys ...string) map[string]any {
	var cur any = v
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	items, _ := cur.([]any)
	if len(items) == 0 {
		return nil
	}
	m, _ := items[0].(map[string]any)
	return m
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if o, ok := b[k]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// TestIsOurs checks that post-renderers a person wrote, alone or beside
// the job's, are not taken for the job's.
func TestIsOurs(t *testing.T) {
	ours := "- kustomize:\n    patches:\n    - patch: |\n        " + PostRenderNote + "\n        kind: Deployment\n"
	tests := []struct {
		name, text string
		want       bool
	}{
		{"the job's", ours, true},
		{"none", "[]", false},
		{"a person's patch", "- kustomize:\n    patches:\n    - patch: |\n        kind: Deployment\n", false},
		{"a person's beside the job's", ours + "    - patch: |\n        kind: Service\n", false},
		{"a second post-renderer", ours + "- kustomize:\n    images: [{name: x}]\n", false},
		{"no patches", "- kustomize:\n    images: [{name: x}]\n", false},
	}
	for _, tt := range tests {
		var prs []FluxPostRenderer
		if err := sigsyaml.Unmarshal([]byte(tt.text), &prs); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := IsOurs(prs); got != tt.want {
			t.Errorf("%s: IsOurs = %v, want %v", tt.name, got, tt.want)
		}
		docs, err := yamledit.ParseDocuments([]byte(tt.text))
		if err != nil {
			t.Fatal(err)
		}
		if got := OurPostRenderers(yamledit.DocRoot(docs[0])); got != tt.want {
			t.Errorf("%s: OurPostRenderers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPostRenderRefusals checks that post-renderers whose effect cannot
// be proven are refused, and that none leaves the output as it was.
func TestPostRenderRefusals(t *testing.T) {
	web := helm.Object{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Body: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}}
	var prs []FluxPostRenderer
	if err := sigsyaml.Unmarshal([]byte("- kustomize:\n    images: [{name: web, newTag: '2'}]\n"), &prs); err != nil {
		t.Fatal(err)
	}
	if _, err := PostRender([]helm.Object{web}, prs, false); err == nil || !strings.Contains(err.Error(), "only kustomize patches can be proven") {
		t.Errorf("images post-renderer = %v, want a refusal", err)
	}
	out, err := PostRender([]helm.Object{web}, nil, false)
	if err != nil || len(out) != 1 || !reflect.DeepEqual(out[0], web) {
		t.Errorf("no post-renderer changed the output: %v, %v", out, err)
	}
}

// TestWithContainer checks that setting a container's values adds the
// workload or container when missing, and replaces only the resources it
// sets.
func TestWithContainer(t *testing.T) {
	web := WorkloadPatch{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	patches := WithContainer(nil, web, ContainerValues{Name: "app", Requests: list("cpu", "1", "memory", "1Gi")})
	patches = WithContainer(patches, web, ContainerValues{Name: "app", Requests: list("cpu", "2"), Limits: list("memory", "2Gi")})
	patches = WithContainer(patches, web, ContainerValues{Name: "side", Init: true, Requests: list("cpu", "10m")})
	patches = WithContainer(patches, WorkloadPatch{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}, ContainerValues{Name: "db"})
	if len(patches) != 2 || len(patches[0].Containers) != 2 || len(patches[1].Containers) != 1 {
		t.Fatalf("patches %+v, want web with app and side, and the StatefulSet web with db", patches)
	}
	app := patches[0].Containers[0]
	if !sameList(app.Requests, list("cpu", "2", "memory", "1Gi")) || !sameList(app.Limits, list("memory", "2Gi")) {
		t.Errorf("app = %+v, want cpu replaced, memory kept, the limit added", app)
	}
	if !patches[0].Containers[1].Init {
		t.Error("side is not an init container")
	}
}
