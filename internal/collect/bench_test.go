package collect

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkCollect measures Collect over n ResourceRecommends, each with
// its own Deployment, 20 per namespace, on client-go's fake dynamic client
// (no metadata client, so each type is one full list): it measures the
// collector's own work (decoding, validation, indexing), not the network.
func BenchmarkCollect(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("crs=%d", n), func(b *testing.B) {
			objs := make([]runtime.Object, 0, 2*n)
			for i := range n {
				ns, name := fmt.Sprintf("ns-%03d", i/20), fmt.Sprintf("app-%04d", i)
				objs = append(objs,
					deployment(ns, name, container("app", "100m", "128Mi"), container("proxy", "10m", "32Mi")),
					recommendObj(ns, name, "Deployment", name))
			}
			c, _ := newFakeCollector(b, objs...)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				items, err := c.Collect(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				if len(items) != n || items[0].Invalid != nil {
					b.Fatalf("Collect() = %d items, first %+v; want %d valid", len(items), items[0].Invalid, n)
				}
			}
		})
	}
}
