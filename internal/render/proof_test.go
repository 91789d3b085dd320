package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (slash paths) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

const proofWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: app
          resources:
            requests:
              cpu: 300m
`

// TestProofRefuses checks the kustomize build that proves each edit: an
// in-place edit that would change another object, or that a later patch
// overrides so that the target does not get the value, is undone with a
// reason that says which; a kustomization that does not build proves
// nothing.
func TestProofRefuses(t *testing.T) {
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // in the error
	}{
		{
			name: "replacement copies the value to another object",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, cm.yaml]\n" +
					"replacements:\n- source: {kind: Deployment, name: web, fieldPath: 'spec.template.spec.containers.[name=app].resources.requests.cpu'}\n" +
					"  targets:\n  - select: {kind: ConfigMap, name: sizes}\n    fieldPaths: [data.cpu]\n",
				"web.yaml": proofWeb,
				"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sizes\ndata:\n  cpu: x\n",
			},
			want: "/ConfigMap/shop/sizes changes too",
		},
		{
			name: "a patch of the same kustomization overrides the value",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml]\n" +
					"patches:\n- patch: |-\n    - op: replace\n      path: /spec/template/spec/containers/0/resources/requests/cpu\n      value: 900m\n  target: {kind: Deployment, name: web}\n",
				"web.yaml": proofWeb,
			},
			// The build gives 900m both before and after the edit.
			want: `renders resources.requests.cpu 900m, want 150m`,
		},
		{
			name: "the kustomization does not build",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, missing.yaml]\n",
				"web.yaml":           proofWeb,
			},
			want: "does not build before the edit",
		},
		{
			name: "remote resources are not fetched",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, 'https://example.com/x.yaml']\n",
				"web.yaml":           proofWeb,
			},
			want: "remote or outside the repository (https://example.com/x.yaml)",
		},
		{
			name: "resources outside the repository are not read",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, ../../../elsewhere]\n",
				"web.yaml":           proofWeb,
			},
			want: "remote or outside the repository (../../../elsewhere)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			c := Change{Target: web, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})}
			out, err := Apply(context.Background(), dir, ".", []Change{c})
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if !errors.Is(r.Err, ErrProofFailed) || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("Err = %v, want ErrProofFailed saying %q", r.Err, tc.want)
			}
			if r.Changed || len(out.Files) != 0 {
				t.Errorf("Changed = %v, Files = %v after a failed proof", r.Changed, out.Files)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "web.yaml"))
			if string(got) != proofWeb {
				t.Errorf("web.yaml was rewritten:\n%s", got)
			}
		})
	}
}

// TestProofPasses checks that a proven edit of one kustomization is kept
// while another kustomization's failed proof is undone in the same run.
func TestProofPasses(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"good/kustomization.yaml": "namespace: good\nresources: [web.yaml]\n",
		"good/web.yaml":           proofWeb,
		"bad/kustomization.yaml":  "namespace: bad\nresources: [web.yaml, missing.yaml]\n",
		"bad/web.yaml":            proofWeb,
	})
	changes := []Change{
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "good", Name: "web"}, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
		{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bad", Name: "web"}, Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
	}
	out, err := Apply(context.Background(), dir, ".", changes)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed || r.File != "good/web.yaml" {
		t.Errorf("good: %+v", r)
	}
	if r := out.Results[1]; !errors.Is(r.Err, ErrProofFailed) || r.Changed {
		t.Errorf("bad: Changed %v, Err %v", r.Changed, r.Err)
	}
	if len(out.Files) != 1 || out.Files[0] != "good/web.yaml" {
		t.Errorf("Files = %v, want [good/web.yaml]", out.Files)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "good", "web.yaml"))
	if want := strings.Replace(proofWeb, "300m", "150m", 1); string(got) != want {
		t.Errorf("good/web.yaml:\n%s\nwant:\n%s", got, want)
	}
}

// TestPatchCronJob checks a new patch for a CronJob's native sidecar: the
// patch follows the jobTemplate path and the initContainers list, and the
// proof accepts it.
func TestPatchCronJob(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [report.yaml]\n",
		"base/report.yaml": `apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
          - name: proxy
            image: proxy:1
            restartPolicy: Always
          containers:
          - name: report
            image: report:1
`,
		"a/kustomization.yaml": "namespace: a\nresources:\n- ../base\n",
		"b/kustomization.yaml": "namespace: b\nresources:\n- ../base\n",
	})
	c := Change{
		Target:    Target{APIVersion: "batch/v1", Kind: "CronJob", Namespace: "b", Name: "report"},
		Container: "proxy",
		Requests:  quantities(map[string]string{"cpu": "5m"}),
		Limits:    quantities(map[string]string{"memory": "32Mi"}),
	}
	out, err := Apply(context.Background(), dir, ".", []Change{c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed || r.File != "b/recommend-job-cronjob-report.yaml" {
		t.Fatalf("File %q, Changed %v, Err %v", r.File, r.Changed, r.Err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "b", "recommend-job-cronjob-report.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Written by hand: the kustomization's sequences are not indented.
	want := `# Resources recommended by recommend-job.
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
          - name: proxy
            resources:
              requests:
                cpu: 5m
              limits:
                memory: 32Mi
`
	if string(got) != want {
		t.Errorf("patch:\n%s\nwant:\n%s", got, want)
	}
}
