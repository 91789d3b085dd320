package helm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// BenchmarkKeys100Releases finds the keys of web, worker and the sidecar
// in 100 releases of the components chart, each its own release, with a
// new Finder each time: what a run with 100 such releases costs.
func BenchmarkKeys100Releases(b *testing.B) {
	c := testChart(b, helmtest.Components())
	const releases = 100
	rs := make([]Release, releases)
	wants := make([][]Container, releases)
	for i := range rs {
		name := fmt.Sprintf("shop-%03d", i)
		rs[i] = Release{Name: name, Namespace: "prod", Chart: c}
		wants[i] = []Container{
			{Kind: "Deployment", Name: name + "-components-web", Container: "web"},
			{Kind: "Deployment", Name: name + "-components-worker", Container: "worker"},
			{Kind: "Deployment", Name: name + "-components-web", Container: "log-shipper"},
		}
	}
	ctx := context.Background()
	renders := 0
	start := time.Now()
	for b.Loop() {
		f := NewFinder(testEngine())
		for i, r := range rs {
			found, err := f.Keys(ctx, r, wants[i])
			if err != nil {
				b.Fatal(err)
			}
			for _, fd := range found {
				if fd.Err != nil || len(fd.Keys) != 4 {
					b.Fatalf("%v: keys %v, error %v", fd.Container, fd.Keys, fd.Err)
				}
			}
		}
		renders += f.Renders()
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(renders)/float64(b.N*releases), "renders/release")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*releases), "ns/release")
}
