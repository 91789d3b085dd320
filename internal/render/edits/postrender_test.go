package edits

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestPostRendererPlacer covers the post-renderer of a HelmRelease: added
// when there is none, replaced when it is the job's own, and refused when
// someone wrote one.
func TestPostRendererPlacer(t *testing.T) {
	const head = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: legacy\nspec:\n  interval: 10m # keep\n"
	patch := func(cpu string) []helmsource.WorkloadPatch {
		return []helmsource.WorkloadPatch{{APIVersion: "apps/v1", Kind: "Deployment", Name: "legacy", Containers: []helmsource.ContainerValues{
			{Name: "app", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}}
	}
	ours := func(cpu string) string {
		return strings.Join(helmsource.PostRendererLines(patch(cpu), 2, 2), "\n") + "\n"
	}
	tests := []struct {
		name, in, want string
		err            error
	}{
		{name: "added after the last key", in: head, want: head + ours("80m")},
		{name: "its own is replaced", in: head + ours("200m") + "  suspend: false\n", want: head + ours("80m") + "  suspend: false\n"},
		{name: "its own with the same values is left alone", in: head + ours("80m"), want: head + ours("80m")},
		{
			name: "one someone wrote is refused",
			in:   head + "  postRenderers:\n    - kustomize:\n        images:\n          - name: app\n            newTag: v2\n",
			err:  repoindex.ErrUnsafeFile,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := newFile(&repoindex.IndexedFile{Name: "release.yaml", Data: []byte(tt.in)})
			docs, err := fe.CurrentDocs()
			if err != nil {
				t.Fatal(err)
			}
			changed, err := fe.Edit(docs, 0, PostRendererPlacer(patch("80m")))
			if tt.err != nil {
				if !errors.Is(err, tt.err) || string(fe.Data) != tt.in {
					t.Fatalf("error %v and file\n%s\nwant %v and the file unchanged", err, fe.Data, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fe.Data); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			if changed != (tt.in != tt.want) {
				t.Errorf("changed = %v", changed)
			}
		})
	}
}
