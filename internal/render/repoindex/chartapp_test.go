package repoindex

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
)

// TestApplicationOfChartDirectory checks that an Application whose path
// is a chart (a Chart.yaml, no helm block: Argo CD detects Helm) counts
// as a Helm chart source, which renders no file as written: not as a
// plain directory that renders the chart's top-level manifests.
func TestApplicationOfChartDirectory(t *testing.T) {
	fsys := fstest.MapFS{
		"charts/web/Chart.yaml": {Data: []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n")},
		"charts/web/extra.yaml": {Data: []byte(deployment("web", ""))},
		"argocd/web.yaml":       {Data: []byte(argoHead + "web\n  namespace: argocd\nspec:\n  destination: {namespace: shop}\n  source:\n    path: charts/web\n")},
	}
	target := web("web", "shop")
	idx, err := BuildIndex(context.Background(), fsys, ".", Wants{Objects: map[IdentKey]bool{KeyOf(target): true}, Dir: "."}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Deployers) != 1 {
		t.Fatalf("deployers %v", idx.Deployers)
	}
	d := idx.Deployers[0]
	if why := idx.CanPatch(d); !d.Chart || !strings.Contains(why, "Helm chart") {
		t.Errorf("Chart = %v, CanPatch = %q; want a Helm chart source", d.Chart, why)
	}
}
