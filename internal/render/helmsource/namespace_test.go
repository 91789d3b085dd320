package helmsource

import (
	"strings"
	"testing"
)

// TestFluxReleaseWithoutNamespace checks a HelmRelease whose file sets no
// namespace and that no Flux Kustomization of the repository applies: the
// cluster says it is in shop (helm-controller's labels), so its release
// is installed in shop and its sourceRef without a namespace names the
// HelmRepository of shop.
func TestFluxReleaseWithoutNamespace(t *testing.T) {
	hr := strings.Replace(helmRelease(fromHelmRepo), "  namespace: shop\n", "", 1)
	files := map[string]string{"apps/web.yaml": hr, "apps/repo.yaml": fluxSource("HelmRepository", "shop", "  url: https://charts.example.com\n")}
	r, _, _, err := load(t, files, hrTarget, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if r.Namespace != "shop" {
		t.Errorf("release namespace %q, want shop", r.Namespace)
	}
}
