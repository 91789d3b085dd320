package helmsource

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// TestPostRendererFetchesNothing checks that a HelmRelease's post-renderer
// patch that names a URL instead of holding the patch is refused before
// kustomize runs, and the server it names is never asked; an inline patch
// is applied.
func TestPostRendererFetchesNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"))
	}))
	t.Cleanup(srv.Close)
	web := helm.Object{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Body: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
	}}

	_, err := kustomizeObjects([]helm.Object{web}, []map[string]any{{"path": srv.URL + "/p.yaml"}})
	if !errors.Is(err, repoindex.ErrRemote) || !strings.Contains(err.Error(), "patches.path: "+srv.URL) {
		t.Fatalf("err = %v, want ErrRemote naming the patch's path", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server was asked %d times", n)
	}

	out, err := kustomizeObjects([]helm.Object{web}, []map[string]any{{
		"patch":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {patched: \"yes\"}}\n",
		"target": map[string]any{"kind": "Deployment", "name": "web"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	labels, _ := out[0].Body["metadata"].(map[string]any)["labels"].(map[string]any)
	if len(out) != 1 || labels["patched"] != "yes" {
		t.Fatalf("out = %v, want web patched", out)
	}
}
