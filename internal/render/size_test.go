package render

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// padded returns a manifest grown with a comment to exactly size bytes.
func padded(manifest string, size int) string {
	return manifest + "# " + strings.Repeat("x", size-len(manifest)-3) + "\n"
}

func deployment(name string) string {
	return strings.Replace(proofWeb, "name: web", "name: "+name, 1)
}

func deploymentTarget(name string) Target {
	return Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name}
}

// TestMaxFileSize checks that a file above the limit is not read: it is
// listed as skipped, a target only it defines is not found with an error
// that names it, and the other targets of the run still render.
func TestMaxFileSize(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"apps/web.yaml": deployment("web"),
		"apps/api.yaml": padded(deployment("api"), 4096),
		// Outside the searched path: neither read nor reported.
		"other/big.yaml": padded(deployment("other"), 4096),
	})
	changes := []Change{
		{Target: deploymentTarget("web"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
		{Target: deploymentTarget("api"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
	}
	out, err := Apply(context.Background(), dir, "apps", changes, WithMaxFileSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed || r.File != "apps/web.yaml" {
		t.Errorf("web: File %q, Changed %v, Err %v; want apps/web.yaml changed", r.File, r.Changed, r.Err)
	}
	r := out.Results[1]
	const want = "apps/api.yaml is 4 KiB, above max-file-size 1Ki: not read"
	if !errors.Is(r.Err, ErrTargetNotFound) || !errors.Is(r.Err, ErrFileTooLarge) || !strings.Contains(fmt.Sprint(r.Err), want) {
		t.Errorf("api: Err = %v, want ErrTargetNotFound and ErrFileTooLarge saying %q", r.Err, want)
	}
	if r.Changed {
		t.Error("api: Changed")
	}
	if len(out.Skipped) != 1 || out.Skipped[0].File != "apps/api.yaml" || out.Skipped[0].Size != 4096 ||
		!errors.Is(out.Skipped[0].Err, ErrFileTooLarge) {
		t.Errorf("Skipped = %+v, want apps/api.yaml (4096 bytes) only", out.Skipped)
	}
	if !slices.Equal(out.Files, []string{"apps/web.yaml"}) {
		t.Errorf("Files = %v, want [apps/web.yaml]", out.Files)
	}

	// The same tree under the default limit: both render.
	out, err = Apply(context.Background(), dir, "apps", changes)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[1]; r.Err != nil || !r.Changed || len(out.Skipped) != 0 {
		t.Errorf("default limit: api Changed %v, Err %v, Skipped %v", r.Changed, r.Err, out.Skipped)
	}
}

// TestMaxFileSizeSparse checks that a file far above the default limit is
// not read at all: a 1 GiB sparse manifest costs the run next to nothing.
func TestMaxFileSizeSparse(t *testing.T) {
	dir := writeTree(t, map[string]string{"apps/web.yaml": deployment("web")})
	f, err := os.Create(filepath.Join(dir, "apps", "huge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(deployment("huge")); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := Change{Target: deploymentTarget("web"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := Apply(context.Background(), dir, ".", []Change{c})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Results[0]; r.Err != nil || !r.Changed {
		t.Errorf("web: Changed %v, Err %v", r.Changed, r.Err)
	}
	if len(out.Skipped) != 1 || out.Skipped[0].File != "apps/huge.yaml" ||
		!strings.Contains(out.Skipped[0].Err.Error(), "apps/huge.yaml is 1 GiB, above max-file-size 4Mi") {
		t.Errorf("Skipped = %+v, want apps/huge.yaml", out.Skipped)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("Apply allocated %d MiB next to a 1 GiB file it must not read", alloc>>20)
	}
}

// TestMaxFileSizeKustomize checks the files above the limit that a
// kustomization uses: its targets are neither edited nor built, with an
// error that names the file, and a kustomization file above the limit
// renders nothing that could be edited in its stead.
func TestMaxFileSizeKustomize(t *testing.T) {
	big := padded("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n", 4096)
	for _, tc := range []struct {
		name  string
		files map[string]string
		links map[string]string // symlink -> target
		mode  Mode
		is    error
		want  string // in the error
	}{
		{
			name: "a resource",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, big.yaml]\n",
				"web.yaml":           proofWeb,
				"big.yaml":           big,
			},
			is:   ErrProofFailed,
			want: "kustomization.yaml includes big.yaml; not built: file too large: big.yaml is 4 KiB, above max-file-size 1Ki: not read",
		},
		{
			name: "a resource through a symlink",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml, big.yaml]\n",
				"web.yaml":           proofWeb,
				"store/big.yaml":     big,
			},
			links: map[string]string{"big.yaml": "store/big.yaml"},
			is:    ErrProofFailed,
			want:  "kustomization.yaml includes big.yaml; not built: file too large: big.yaml is 4 KiB",
		},
		{
			name: "a resource of a base",
			files: map[string]string{
				"prod/kustomization.yaml": "namespace: shop\nresources: [../base]\n",
				"base/kustomization.yaml": "resources: [web.yaml, big.yaml]\n",
				"base/web.yaml":           proofWeb,
				"base/big.yaml":           big,
			},
			is:   ErrProofFailed,
			want: "base/kustomization.yaml includes base/big.yaml; not built",
		},
		{
			name: "a patch",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml]\npatches:\n- path: big.yaml\n",
				"web.yaml":           proofWeb,
				"big.yaml":           padded("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", 4096),
			},
			is:   ErrProofFailed,
			want: "kustomization.yaml includes big.yaml; not built: file too large",
		},
		{
			name: "a patch, in patch mode",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml]\npatches:\n- path: big.yaml\n",
				"web.yaml":           proofWeb,
				"big.yaml":           padded("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", 4096),
			},
			mode: ModePatch,
			is:   ErrFileTooLarge,
			want: "kustomization.yaml patches with big.yaml: file too large: big.yaml is 4 KiB",
		},
		{
			name: "a file of a generator",
			files: map[string]string{
				"kustomization.yaml": "namespace: shop\nresources: [web.yaml]\nconfigMapGenerator:\n- name: big\n  files: [big.txt]\n",
				"web.yaml":           proofWeb,
				"big.txt":            strings.Repeat("x", 4096),
			},
			is:   ErrProofFailed,
			want: "big.txt is 4 KiB, above max-file-size 1Ki: not read",
		},
		{
			name: "the kustomization file",
			files: map[string]string{
				"kustomization.yaml": padded("namespace: shop\nresources: [web.yaml]\n", 4096),
				"web.yaml":           proofWeb,
			},
			is:   ErrFileTooLarge,
			want: "not found: Deployment.apps shop/web under .: file too large: kustomization.yaml is 4 KiB",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			for link, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			c := Change{Target: deploymentTarget("web"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"}), Mode: tc.mode}
			out, err := Apply(context.Background(), dir, ".", []Change{c}, WithMaxFileSize(1024))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if !errors.Is(r.Err, tc.is) || !strings.Contains(fmt.Sprint(r.Err), tc.want) {
				t.Fatalf("Err = %v, want %v saying %q", r.Err, tc.is, tc.want)
			}
			if r.Changed || len(out.Files) != 0 {
				t.Errorf("Changed = %v, Files = %v", r.Changed, out.Files)
			}
			checkUntouched(t, dir, before, nil)
		})
	}
}

// readRecorder is a filesystem that records the files read through it.
type readRecorder struct {
	filesys.FileSystem
	read *[]string
}

func (r readRecorder) ReadFile(name string) ([]byte, error) {
	*r.read = append(*r.read, filepath.Base(name))
	return r.FileSystem.ReadFile(name)
}

func (r readRecorder) Open(name string) (filesys.File, error) {
	*r.read = append(*r.read, filepath.Base(name))
	return r.FileSystem.Open(name)
}

// TestProofFSRefusesLargeFiles checks that kustomize, building through the
// proof's filesystem, never reads a file above the limit, whichever field
// of the kustomization names it.
func TestProofFSRefusesLargeFiles(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization, big string
	}{
		{"resource", "resources: [web.yaml, big.yaml]\n", "big.yaml"},
		{"generator file", "resources: [web.yaml]\nconfigMapGenerator:\n- name: big\n  files: [big.txt]\n", "big.txt"},
		{"generator env", "resources: [web.yaml]\nconfigMapGenerator:\n- name: big\n  envs: [big.env]\n", "big.env"},
		{"patch", "resources: [web.yaml]\npatches:\n- path: big.yaml\n", "big.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"kustomization.yaml": tc.kustomization,
				"web.yaml":           proofWeb,
				tc.big:               padded("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n", 4096),
			})
			var read []string
			fsys := repoindex.ProofFS{FileSystem: readRecorder{filesys.MakeFsOnDisk(), &read}, Root: dir, Limit: 1024}
			_, err := fsys.Build(dir)
			if !errors.Is(err, ErrFileTooLarge) && !strings.Contains(fmt.Sprint(err), tc.big+" is 4 KiB, above max-file-size 1Ki") {
				t.Errorf("build error = %v, want %s refused", err, tc.big)
			}
			if slices.Contains(read, tc.big) {
				t.Errorf("kustomize read %s, above the limit (read %v)", tc.big, read)
			}
			if !slices.Contains(read, "kustomization.yaml") {
				t.Errorf("kustomize read %v, not even the kustomization", read)
			}
		})
	}
}

// laughs returns a ConfigMap whose aliases nest levels deep, ten to a
// level: 10^levels scalars once expanded, from a few hundred bytes.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\nlol:\n  l0: &l0 lol\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

func TestCheckAliases(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		wantErr    bool
	}{
		{"no aliases", proofWeb, false},
		{"an anchor reused", "a: &a {cpu: 1, memory: 2}\nb: *a\nc: *a\n", false},
		{"an ampersand and a star in values", "a: '&x'\nb: '*x'\n", false},
		{"a thousand laughs", laughs(3), false},
		{"a hundred thousand laughs", laughs(5), true},
		{"a billion laughs", laughs(9), true},
		{
			"a hundred aliases of a thousand nodes among a hundred thousand",
			"a: &a [" + strings.Repeat("x, ", 999) + "x]\nb: [" + strings.Repeat("*a, ", 99) + "*a]\nc: [" + strings.Repeat("y, ", 99999) + "y]\n",
			true,
		},
		{"an anchor holding its alias", "a: &a {b: *a}\n", true},
		{"a sequence holding its alias", "- &a [*a]\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := repoindex.CheckAliases([]byte(tc.yaml))
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, repoindex.ErrAliasBomb)) {
				t.Errorf("checkAliases() = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestAliasBombs checks that a small file whose aliases expand hugely, or
// into themselves, costs the index nothing, and is not handed to kustomize,
// which would expand it until the memory or the stack runs out; the proof
// of its kustomization fails instead.
func TestAliasBombs(t *testing.T) {
	for _, tc := range []struct {
		name, bomb, want string
	}{
		{"a billion laughs", laughs(9), "its aliases add more than 65536 nodes"},
		{"an anchor holding its alias", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\ndata: &a {b: *a}\n", "an anchor holds an alias of itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"plain/web.yaml": deployment("web"),
				// Names the target, so that the index parses it.
				"plain/bomb.yaml":      "# web\n" + tc.bomb,
				"k/kustomization.yaml": "namespace: shop\nresources: [api.yaml, bomb.yaml]\n",
				"k/api.yaml":           deployment("api"),
				"k/bomb.yaml":          tc.bomb,
			})
			changes := []Change{
				{Target: deploymentTarget("web"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
				{Target: deploymentTarget("api"), Container: "app", Requests: quantities(map[string]string{"cpu": "150m"})},
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := Apply(context.Background(), dir, ".", changes)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if r := out.Results[0]; r.Err != nil || !r.Changed {
				t.Errorf("web: Changed %v, Err %v", r.Changed, r.Err)
			}
			if r := out.Results[1]; !errors.Is(r.Err, ErrProofFailed) || !strings.Contains(fmt.Sprint(r.Err), "k/bomb.yaml: aliases expand too far: "+tc.want) {
				t.Errorf("api: Err = %v, want ErrProofFailed saying %q", r.Err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("Apply allocated %d MiB for a few hundred bytes of aliases", alloc>>20)
			}
		})
	}
}

// writeManifests writes a stream of Deployments of at least size bytes.
func writeManifests(b *testing.B, name string, size int64) {
	b.Helper()
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i, n := 0, int64(0); n < size; i++ {
		k, err := fmt.Fprintf(w, "---\n"+benchDeployment, fmt.Sprintf("web-%d", i), "shop")
		if err != nil {
			b.Fatal(err)
		}
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApplyLargeFile runs Apply for one target next to one large
// manifest of Deployments whose names contain the target's, so that the
// index would parse it: 50 MB, above the default limit, which is skipped,
// and 4 MB, just below it, which is read and parsed. Before the limit, the
// 50 MB case allocated 1.9 GB per run.
func BenchmarkApplyLargeFile(b *testing.B) {
	for _, bc := range []struct {
		name    string
		size    int64
		skipped int
	}{
		{"50MB", 50_000_000, 1},
		{"4MB", DefaultMaxFileSize - 64<<10, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root := b.TempDir()
			writeBench(b, filepath.Join(root, "apps", "web.yaml"), deployment("web"))
			writeManifests(b, filepath.Join(root, "apps", "large.yaml"), bc.size)
			c := Change{Target: deploymentTarget("web"), Container: "app", Requests: quantities(map[string]string{"cpu": "300m"})}
			b.ReportAllocs()
			for b.Loop() {
				out, err := Apply(context.Background(), root, ".", []Change{c})
				if err != nil {
					b.Fatal(err)
				}
				if r := out.Results[0]; r.Err != nil || len(out.Skipped) != bc.skipped {
					b.Fatalf("Err %v, Skipped %v", r.Err, out.Skipped)
				}
			}
		})
	}
}
