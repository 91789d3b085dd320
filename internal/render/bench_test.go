package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const benchManifests = 10000

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

// BenchmarkApply runs Apply over a generated repository of 10,000 manifests.
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
		{"changes=1000", 1000, false},
		{"changes=10000", benchManifests, false},
		{"changes=10000/unchanged", benchManifests, true},
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
					c.Requests = quantities(map[string]string{"cpu": fmt.Sprintf("%dm", 200+v), "memory": fmt.Sprintf("%dMi", 300+v)})
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

// benchKustomize writes a repository of n manifests as kustomize bases, one
// per namespace, each rendered by a prod and a staging overlay, and returns
// one change per prod overlay for its first Deployment.
func benchKustomize(b *testing.B, n, namespaces int) (string, []Change) {
	b.Helper()
	root := b.TempDir()
	var changes []Change
	for t := range namespaces {
		ns := fmt.Sprintf("team-%02d", t)
		base := filepath.Join(root, "base", ns)
		var resources []byte
		for i := t; i < n; i += namespaces {
			name := fmt.Sprintf("app-%05d", i)
			// The bases carry no namespace: the overlays set it.
			content := strings.Replace(fmt.Sprintf(benchDeployment, name, ns), "  namespace: "+ns+"\n", "", 1)
			writeBench(b, filepath.Join(base, name+".yaml"), content)
			resources = fmt.Appendf(resources, "  - %s.yaml\n", name)
			if len(changes) == t {
				changes = append(changes, Change{
					Target:    Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "prod-" + name},
					Container: "main",
				})
			}
		}
		writeBench(b, filepath.Join(base, "kustomization.yaml"), "resources:\n"+string(resources))
		for _, env := range []string{"prod", "staging"} {
			writeBench(b, filepath.Join(root, "clusters", env, ns, "kustomization.yaml"),
				fmt.Sprintf("namespace: %s\nnamePrefix: %s-\nresources:\n  - ../../../base/%s\n", ns, env, ns))
		}
	}
	return root, changes
}

func writeBench(b *testing.B, path, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApplyKustomize runs Apply over 10,000 manifests in kustomize
// bases, one per namespace, each shared by two overlays with a namePrefix,
// for one Deployment in each of 20 prod overlays: every change is patched,
// and each patched overlay is built twice by the proof. With 20 bases an
// overlay renders 500 objects, with 500 bases 20. After the first iteration
// the patches exist and are updated in place.
func BenchmarkApplyKustomize(b *testing.B) {
	for _, bases := range []int{20, 500} {
		b.Run(fmt.Sprintf("bases=%d", bases), func(b *testing.B) {
			root, changes := benchKustomize(b, benchManifests, bases)
			changes = changes[:20]
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				for j := range changes {
					changes[j].Requests = quantities(map[string]string{"cpu": fmt.Sprintf("%dm", 200+i%2)})
				}
				i++
				out, err := Apply(ctx, root, "clusters/prod", changes)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range out.Results {
					if r.Err != nil || !r.Changed {
						b.Fatalf("%s: changed %v, err %v", r.Change.Target, r.Changed, r.Err)
					}
				}
			}
		})
	}
}

// BenchmarkSession renders changes to 1,000 manifests as a run does: in one
// Apply, and grouped, 20 changes to a group, from one session (Prepare,
// then an Apply per group, the tree put back after). The groups should
// cost about what the one Apply does: the index is built once either way.
func BenchmarkSession(b *testing.B) {
	const n, group = 1000, 20
	root, all := benchRepo(b, n)
	var sets [2][]Change
	for v := range sets {
		for _, c := range all {
			c.Requests = quantities(map[string]string{"cpu": fmt.Sprintf("%dm", 201+v), "memory": "301Mi"})
			sets[v] = append(sets[v], c)
		}
	}
	ctx := context.Background()
	i := 0 // the tree holds sets[(i+1)%2], or the base's values
	b.Run("groups=none", func(b *testing.B) {
		for b.Loop() {
			out, err := Apply(ctx, root, ".", sets[i%2])
			if err != nil || len(out.Files) != n {
				b.Fatalf("Apply() wrote %d files, error %v", len(out.Files), err)
			}
			i++
		}
	})
	b.Run(fmt.Sprintf("groups=%d", n/group), func(b *testing.B) {
		for b.Loop() {
			set := sets[i%2]
			s, err := Prepare(ctx, root, ".", set)
			if err != nil {
				b.Fatal(err)
			}
			for g := 0; g < n; g += group {
				out, err := s.Apply(ctx, set[g:g+group])
				if err != nil || len(out.Files) != group {
					b.Fatalf("Apply() wrote %d files, error %v", len(out.Files), err)
				}
			}
			if err := s.Restore(); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
