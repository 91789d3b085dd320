package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const benchManifests = 2000

// benchRepo writes a repository of n manifests in 20 namespaces: mostly
// single Deployments with comments, every tenth a multi-document file with a
// Service and a CronJob, and returns the changes that target every workload.
func benchRepo(b *testing.B, n int) (string, []Change) {
	b.Helper()
	root := b.TempDir()
	var changes []Change
	for i := range n {
		ns := fmt.Sprintf("team-%02d", i%20)
		name := fmt.Sprintf("app-%04d", i)
		dir := filepath.Join(root, "clusters", "prod", ns)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		content := fmt.Sprintf(benchDeployment, name, ns)
		target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
		if i%10 == 0 {
			content = fmt.Sprintf(benchService, name, ns) + "---\n" + fmt.Sprintf(benchCronJob, name, ns)
			target = Target{APIVersion: "batch/v1", Kind: "CronJob", Namespace: ns, Name: name}
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		changes = append(changes, Change{Target: target, Container: "main"})
	}
	return root, changes
}

const benchDeployment = `# Managed by the platform team.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: %s
  labels:
    app.kubernetes.io/part-of: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: main
          image: ghcr.io/example/web:1.2.3 # pinned
          args: ["--port=8080", "--log-level=info"]
          ports:
            - containerPort: 8080
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
            limits:
              memory: 256Mi
        - name: proxy
          image: envoyproxy/envoy:v1.30
`

const benchService = `apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: %s
spec:
  ports:
    - port: 80
`

const benchCronJob = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: %s
  namespace: %s
spec:
  schedule: "@hourly"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: main
              image: example/job:1
`

// BenchmarkApply runs Apply over a generated repository of 2,000 manifests.
// Each iteration alternates between two sets of values so that every
// targeted file really is rewritten, except in the "unchanged" case, where
// the values are already there and nothing is written.
func BenchmarkApply(b *testing.B) {
	for _, bc := range []struct {
		name      string
		changes   int
		unchanged bool
	}{
		{"changes=10", 10, false},
		{"changes=200", 200, false},
		{"changes=2000", benchManifests, false},
		{"changes=2000/unchanged", benchManifests, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root, all := benchRepo(b, benchManifests)
			// Spread the changed workloads over the repository.
			var changes [2][]Change
			for i := 0; i < len(all); i += len(all) / bc.changes {
				for v := range 2 {
					if bc.unchanged {
						v = 0
					}
					c := all[i]
					c.Requests = map[string]string{"cpu": fmt.Sprintf("%dm", 200+v), "memory": fmt.Sprintf("%dMi", 300+v)}
					changes[v] = append(changes[v], c)
				}
			}
			ctx := context.Background()
			want := len(changes[0])
			if bc.unchanged {
				if _, err := Apply(ctx, root, ".", changes[0]); err != nil {
					b.Fatal(err)
				}
				want = 0
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				out, err := Apply(ctx, root, ".", changes[i%2])
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Files) != want {
					b.Fatalf("wrote %d files, want %d", len(out.Files), want)
				}
			}
		})
	}
}
