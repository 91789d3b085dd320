//go:build integration

package job

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// BenchmarkWriteGroups writes a fleet's changes, a Deployment file each,
// 20 to a namespace, to the loopback git server: on one branch, and on a
// branch per namespace, the job's default grouping without a forge. Each
// iteration writes to a fresh copy of the repository, so that every
// branch is pushed.
func BenchmarkWriteGroups(b *testing.B) {
	ctx := b.Context()
	srv := startGitServer(b)
	for _, n := range []int{1000} {
		files := map[string]string{}
		fleet := &plan.Plan{}
		for i := range n {
			ns, name := fmt.Sprintf("ns-%03d", i/benchPerNamespace), fmt.Sprintf("web-%04d", i)
			doc := strings.NewReplacer("namespace: shop", "namespace: "+ns, "name: web", "name: "+name).Replace(webDeployment)
			files[fmt.Sprintf("clusters/%s/%s.yaml", ns, name)] = doc
			it := webPlan("390m").Items[0]
			it.Namespace, it.Object.Namespace = ns, ns
			it.Name, it.Target.Name, it.Object.Name = name+"-rec", name, name
			fleet.Items = append(fleet.Items, it)
		}
		for _, by := range []string{"none", "namespace"} {
			b.Run(fmt.Sprintf("n=%d/group-by=%s", n, by), func(b *testing.B) {
				log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
				repos := 0
				for b.Loop() {
					b.StopTimer()
					repos++
					url, err := srv.CreateRepo(ctx, fmt.Sprintf("org/fleet-%d-%s-%d", n, by, repos), files)
					if err != nil {
						b.Fatal(err)
					}
					cfg := Config{Path: "clusters", GroupBy: gitops.GroupBy{Kind: by}, Git: gitops.Options{
						URL: url, BaseBranch: "main", PushBranch: "recommend-job", Username: "bot", Token: gitToken,
						AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com",
					}}
					p := &plan.Plan{Items: append([]plan.Item(nil), fleet.Items...)}
					b.StartTimer()
					if err := writeBack(ctx, newRun(cfg), p, log); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if p.Git == nil || !p.Git.Pushed || len(p.Git.Files) != n {
						b.Fatalf("git = %+v, want %d files pushed", p.Git, n)
					}
					b.StartTimer()
				}
			})
		}
	}
}
