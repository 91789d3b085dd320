package testbed

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgress(t *testing.T) {
	tests := []struct {
		name string
		// ticks are the times at which the ticker fires, from the start.
		ticks []time.Duration
		took  time.Duration
		err   error
		want  string
	}{
		{
			name:  "a line per tick, then the time it took",
			ticks: []time.Duration{20 * time.Second, 40 * time.Second, 90*time.Second + 400*time.Millisecond},
			took:  192 * time.Second,
			want: "building kube-apiserver v1.34.4 from its Go module (once; cached in .cache/bin)...\n" +
				"still building kube-apiserver: 20s\n" +
				"still building kube-apiserver: 40s\n" +
				"still building kube-apiserver: 1m30s\n" +
				"built kube-apiserver in 3m12s\n",
		},
		{
			name: "a quick one has no tick",
			took: 3 * time.Second,
			want: "building kube-apiserver v1.34.4 from its Go module (once; cached in .cache/bin)...\n" +
				"built kube-apiserver in 3s\n",
		},
		{
			name:  "a failure says so",
			ticks: []time.Duration{20 * time.Second},
			took:  25 * time.Second,
			err:   errors.New("exit status 1"),
			want: "building kube-apiserver v1.34.4 from its Go module (once; cached in .cache/bin)...\n" +
				"still building kube-apiserver: 20s\n" +
				"building kube-apiserver failed after 25s\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := &fakeClock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
			began := clock.t
			ticks := make(chan time.Time) // unbuffered: a send returns once the tick is taken
			p := progress{w: &out, doing: "building kube-apiserver", done: "built kube-apiserver", now: clock.now}
			end := p.start("building kube-apiserver v1.34.4 from its Go module (once; cached in .cache/bin)...", ticks)
			for _, at := range tt.ticks {
				clock.t = began.Add(at)
				ticks <- clock.t
			}
			clock.t = began.Add(tt.took)
			end(tt.err)
			if got := out.String(); got != tt.want {
				t.Errorf("progress lines:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestReportStep(t *testing.T) {
	var out bytes.Buffer
	progressOut = &out
	t.Cleanup(func() { progressOut = os.Stderr })
	end := reportStep("building helm", "built helm", "building helm v3.22.0 from its Go module (once; cached in .cache/bin)...")
	end(nil)
	want := "building helm v3.22.0 from its Go module (once; cached in .cache/bin)...\nbuilt helm in 0s\n"
	if got := out.String(); got != want {
		t.Errorf("reportStep lines:\n%s\nwant:\n%s", got, want)
	}
}

func TestRequiredVersion(t *testing.T) {
	dir := t.TempDir()
	gomod := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(gomod, []byte(`module example.com/tools

go 1.24.0

require helm.sh/helm/v3 v3.22.0

require (
	code.gitea.io/gitea v1.26.0
	k8s.io/kubernetes v1.34.4 // indirect
)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for module, want := range map[string]string{
		"helm.sh/helm/v3":     "v3.22.0",
		"code.gitea.io/gitea": "v1.26.0",
		"k8s.io/kubernetes":   "v1.34.4",
		"k8s.io/api":          "",
	} {
		if got := requiredVersion(gomod, module); got != want {
			t.Errorf("requiredVersion(%s) = %q, want %q", module, got, want)
		}
	}
	// Each tool's module is required by its tools module, so every build
	// announces a version.
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range []tool{kubeAPIServerTool, helmTool, giteaTool, thanosTool} {
		v := requiredVersion(filepath.Join(root, "hack", "tools", tl.name, "go.mod"), tl.module)
		if !strings.HasPrefix(v, "v") {
			t.Errorf("hack/tools/%s/go.mod requires %s at %q, want a version", tl.name, tl.module, v)
		}
	}
}
