// Package testbedtest runs a test bed for Go tests. Tests never skip for
// want of a tool: when the bed cannot start they fail and say why.
//
// A package sharing one bed among its tests:
//
//	var bed *testbed.Bed
//
//	func TestMain(m *testing.M) {
//		os.Exit(testbedtest.Main(m, testbed.Options{}, func(b *testbed.Bed) { bed = b }))
//	}
//
// A test with a bed of its own:
//
//	bed := testbedtest.Start(t, testbed.Options{History: series})
//
// A test with a forge:
//
//	forge := testbedtest.Gitea(t)
//	url, err := forge.CreateRepo(t.Context(), "fleet", files)
package testbedtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// Start starts a bed in a temporary directory of t, or fails the test, and
// stops it when the test ends. opts.Dir is ignored.
func Start(t testing.TB, opts testbed.Options) *testbed.Bed {
	t.Helper()
	opts.Dir = t.TempDir()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	// Each server's start is bounded by the testbed package; building
	// kube-apiserver on a cold cache is bounded by go test's -timeout.
	bed, err := testbed.Up(t.Context(), opts)
	if err != nil {
		t.Fatalf("start test bed: %v", err)
	}
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("stop test bed: %v", err)
		}
	})
	return bed
}

// Main starts a bed in a temporary directory, hands it to use, runs the
// tests and stops the bed. It returns the exit code for os.Exit; a bed that
// fails to start makes it 1. opts.Dir is ignored.
func Main(m *testing.M, opts testbed.Options, use func(*testbed.Bed)) int {
	// testing.Verbose needs the test flags.
	if !flag.Parsed() {
		flag.Parse()
	}
	dir, err := os.MkdirTemp("", "testbed-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "start test bed: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	opts.Dir = dir
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
			}
		}
	}
	bed, err := up(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start test bed: %v\n", err)
		return 1
	}
	defer func() {
		if err := bed.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "stop test bed: %v\n", err)
		}
	}()
	use(bed)
	return m.Run()
}

// up starts a bed, giving up on an interrupt.
func up(opts testbed.Options) (*testbed.Bed, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return testbed.Up(ctx, opts)
}

// Gitea starts a Gitea, built from source on first use, with an admin user
// (Username, Password) and its API token (Token), in a temporary directory
// of t, or fails the test; it stops when the test ends. Its CreateRepo
// makes repositories with a first commit on main. opts are StartGitea's,
// e.g. testbed.GiteaFrontend() for pages a browser renders.
func Gitea(t testing.TB, opts ...testbed.Option) *testbed.Gitea {
	t.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A build on a cold cache is bounded by go test's -timeout.
	g, err := testbed.StartGitea(t.Context(), root, t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("start gitea: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("stop gitea: %v", err)
		}
	})
	return g
}

// Clientset returns a Kubernetes client for the bed's admin user.
func Clientset(t testing.TB, bed *testbed.Bed) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		t.Fatalf("create Kubernetes client: %v", err)
	}
	return cs
}

// LoadHistory backfills series into the bed's Prometheus, restarting it.
func LoadHistory(t testing.TB, bed *testbed.Bed, series []testbed.Series) {
	t.Helper()
	if err := bed.Prometheus.LoadHistory(t.Context(), series); err != nil {
		t.Fatalf("load history: %v", err)
	}
}

// CreateRepo creates a repository on the bed's git server and returns its
// clone URL.
func CreateRepo(t testing.TB, bed *testbed.Bed, name string, files map[string]string) string {
	t.Helper()
	url, err := bed.Git.CreateRepo(t.Context(), name, files)
	if err != nil {
		t.Fatalf("create repository: %v", err)
	}
	return url
}

// BranchFile clones branch of the repository at url and returns the file
// name at its tip, with the tip's commit. auth may be nil.
func BranchFile(t testing.TB, url string, auth transport.AuthMethod, branch, name string) (string, *object.Commit) {
	t.Helper()
	repo, err := git.PlainClone(t.TempDir(), false, &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File(name)
	if err != nil {
		t.Fatalf("%s at %s: %v", name, branch, err)
	}
	content, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return content, commit
}
