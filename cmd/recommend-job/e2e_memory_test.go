//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
	helmrender "github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// memoryLimit is the job's memory in TestEndToEndMemoryBound, below the
// chart's limit of 512Mi.
const memoryLimit = 400 * mib

// bombChart is a tenant's chart whose ConfigMap renders 96 MiB: a few
// bytes of template that once took a run to 1.19 GB.
var bombChart = map[string]string{
	"charts/bomb/Chart.yaml":  "apiVersion: v2\nname: bomb\nversion: 1.0.0\n",
	"charts/bomb/values.yaml": "resources:\n  requests:\n    cpu: 500m\n    memory: 512Mi\n",
	"charts/bomb/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: bomb
spec:
  selector:
    matchLabels:
      app: bomb
  template:
    metadata:
      labels:
        app: bomb
    spec:
      containers:
        - name: app
          image: nginx:1.27
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`,
	"charts/bomb/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: bomb
data:
  blob: {{ repeat 100663296 "x" | quote }}
`,
	"argocd/bomb.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: bomb
  namespace: argocd
spec:
  source:
    repoURL: REPO
    path: charts/bomb
    helm:
      releaseName: bomb
  destination:
    namespace: bomb
`,
}

// bombLive is the bomb Deployment as Argo CD applied it.
const bombLive = `apiVersion: v1
kind: Namespace
metadata:
  name: bomb
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bomb
  namespace: bomb
  annotations:
    argocd.argoproj.io/tracking-id: bomb:apps/Deployment:bomb/bomb
spec:
  selector:
    matchLabels:
      app: bomb
  template:
    metadata:
      labels:
        app: bomb
    spec:
      containers:
        - name: app
          image: nginx:1.27
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
`

// bigFile is the name and size of a file of repeated bytes: 121 MiB in
// the checkout, a few hundred KiB packed.
const (
	bigFile     = "archive/dump.yaml"
	bigFileSize = 121 * mib
)

// TestEndToEndMemoryBound runs the job's binary under a 400 MiB memory
// limit on a repository of four tenants: shop's Deployment manifest,
// storefront's release of a chart of the repository, a 121 MiB file, and
// bomb's release of a chart whose template renders 96 MiB. Every other
// tenant's change is pushed, the big file is skipped, and bomb's release
// alone fails, saying which limit its render reached.
func TestEndToEndMemoryBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := buildJob(t)
	t.Log("job built")
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) holds the job to its memory limit: %v", err)
	}

	now := time.Now().Truncate(time.Minute)
	start := now.Add(-7 * 24 * time.Hour)
	series := append(webHistory(now), helmHistory(now)...)
	var bomb []history.Container
	for _, span := range history.Rollouts("bomb", 1, 1, start, now) {
		bomb = append(bomb, history.Container{Namespace: "bomb", Pod: span.Pods[0], Container: "app",
			Start: span.Start, End: span.End, CPU: history.Constant(0.1), Memory: history.Constant(100 * mib)})
	}
	series = append(series, history.Series(bomb, time.Minute)...)
	bed := testbedtest.Start(t, testbed.Options{History: series})

	files := argoRepo(bed.Git.URL("tenants"))
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, content)
	}
	storefront := argoRelease(t, root, "argocd/shop-production.yaml").render(t, root)
	live := installed(t, storefront, func(o helmrender.Object) (map[string]string, map[string]string) {
		group, _, ok := strings.Cut(o.APIVersion, "/")
		if !ok {
			group = ""
		}
		return nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop-production:" + group + "/" + o.Kind + ":" + o.Namespace + "/" + o.Name}
	})
	recommends := layoutsRecommend("storefront", "shop-web") + "---\n" + layoutsRecommend("storefront", "shop-worker") +
		"---\n" + layoutsRecommend("bomb", "bomb")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), append(shopObjects(t, true),
		[]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: storefront\n"), live, []byte(bombLive), []byte(recommends))...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	files["clusters/prod/web.yaml"] = webManifest
	for name, content := range bombChart {
		files[name] = strings.ReplaceAll(content, "REPO", bed.Git.URL("tenants"))
	}
	files[bigFile] = strings.Repeat("# 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc\n", bigFileSize/64)
	repoURL := testbedtest.CreateRepo(t, bed, "tenants", files)
	t.Log("repository created")
	delete(files, bigFile)

	args := append([]string{"--data=" + strconv.Itoa(memoryLimit), "--", bin}, bedArgs(t, bed, repoURL)...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, prlimit, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeak(cmd.Process.Pid)
	err = cmd.Wait()
	jobPeak := peak()
	withChildren := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	t.Logf("peak RSS: the job %d MiB, with its render processes %d MiB, under a limit of %d MiB",
		jobPeak/mib, withChildren/mib, memoryLimit/mib)
	if err != nil {
		tail := stderr.String()
		if len(tail) > 4000 {
			tail = tail[:4000]
		}
		t.Fatalf("the job under a %d MiB limit: %v; stderr:\n%s", memoryLimit/mib, err, tail)
	}
	if strings.Contains(stderr.String(), bed.Git.Password()) {
		t.Error("the git token appears in the logs")
	}
	for line := range strings.Lines(stderr.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr holds a line that is not JSON: %q", line)
		}
	}
	var rep plan.Plan
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decoding report: %v\n%s", err, stdout.String())
	}

	// Every other tenant's change is pushed.
	wantFiles := []string{"charts/shop/values-production.yaml", "clusters/prod/web.yaml"}
	if rep.Git == nil || !rep.Git.Pushed || !slices.Equal(rep.Git.Files, wantFiles) {
		t.Fatalf("git = %+v, want %v pushed", rep.Git, wantFiles)
	}
	for _, target := range []struct{ ns, name, file string }{
		{"shop", "web", "clusters/prod/web.yaml"},
		{"storefront", "shop-web", "charts/shop/values-production.yaml"},
		{"storefront", "shop-worker", "charts/shop/values-production.yaml"},
	} {
		it := entry(t, &rep, target.ns, target.name)
		if it.Source == nil || it.Source.File != target.file || !it.Source.Changed || it.Source.Error != "" {
			t.Errorf("%s/%s: source %+v, want %s changed", target.ns, target.name, it.Source, target.file)
		}
	}
	auth := &githttp.BasicAuth{Username: bed.Git.Username, Password: bed.Git.Password()}
	for _, name := range wantFiles {
		pushed, _ := fileAt(t, repoURL, auth, "recommend-job/main", name)
		if pushed == files[name] {
			t.Errorf("%s is pushed unchanged", name)
		}
	}

	// The big file is skipped, not read.
	if !slices.ContainsFunc(rep.Git.Skipped, func(s plan.SkippedFile) bool { return s.File == bigFile }) {
		t.Errorf("git.skipped = %+v, want %s", rep.Git.Skipped, bigFile)
	}

	// Bomb's release alone fails, and says which limit its render reached.
	it := entry(t, &rep, "bomb", "bomb")
	if it.Source != nil {
		t.Logf("bomb/bomb: %s", it.Source.Error)
	}
	if it.Source == nil || it.Source.Changed || !strings.Contains(it.Source.Error, "release bomb/bomb") ||
		!strings.Contains(it.Source.Error, "render limit") {
		t.Errorf("bomb/bomb: source %+v, want its release's render stopped at a limit", it.Source)
	}
}

// buildJob builds the job's binary.
func buildJob(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "recommend-job")
	cmd := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// watchPeak samples the peak resident set (VmHWM) of process pid until it
// exits; the function it returns gives the last sample, in bytes.
func watchPeak(pid int) func() int64 {
	var last int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			if err != nil {
				return
			}
			_, rest, ok := strings.Cut(string(data), "VmHWM:")
			if !ok {
				return
			}
			kb, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
			n, err := strconv.ParseInt(kb, 10, 64)
			if err != nil || n == 0 {
				return // a zombie
			}
			last = n * 1024
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int64 {
		<-done
		return last
	}
}
