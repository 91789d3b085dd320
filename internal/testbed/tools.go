package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ModulePath is the Go module path of the repository the test bed serves.
const ModulePath = "github.com/recommend-job/recommend-job"

// aptPackages names the Debian package providing each system tool.
var aptPackages = map[string]string{
	"etcd":       "etcd-server",
	"prometheus": "prometheus",
	"git":        "git",
	// Not a tool every test needs: EnsureVictoriaMetrics installs it.
	"victoria-metrics": "victoria-metrics",
	// EnsureDockerRegistry installs it, for the OCI registry tests.
	"docker-registry": "docker-registry",
	// EnsureChromium installs it, for the browser test.
	"chromium": "chromium",
}

// Tools holds the paths of the binaries the test bed runs.
type Tools struct {
	Etcd          string
	KubeAPIServer string
	Prometheus    string
	Git           string
}

// RepoRoot returns the root of the repository: the closest directory, from
// the working directory up, whose go.mod declares ModulePath.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for {
		if ok, err := declaresModule(filepath.Join(dir, "go.mod"), ModulePath); err != nil {
			return "", err
		} else if ok {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod at path declares module mod.
func declaresModule(path, mod string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open go.mod: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == mod, nil
		}
	}
	return false, sc.Err()
}

// EnsureTools returns the binaries the test bed needs. etcd, prometheus
// and git are looked up on PATH and in /usr/bin; when some are
// missing and the process runs as root, their Debian packages are
// installed with apt-get. kube-apiserver is built from the tools module in
// hack/tools/kube-apiserver into .cache/bin unless that binary is newer
// than the module's sources. Concurrent callers (e.g. test binaries of
// several packages) are serialised through a lock file in .cache. A build
// or an install takes minutes and says so on stderr as it starts, every
// 20 s while it runs and when it ends.
func EnsureTools(ctx context.Context, repoRoot string) (Tools, error) {
	cacheDir := filepath.Join(repoRoot, ".cache")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Tools{}, fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(cacheDir, "testbed-tools.lock"))
	if err != nil {
		return Tools{}, err
	}
	defer unlock()

	tools, missing := lookupSystemTools()
	if len(missing) > 0 {
		if err := installPackages(ctx, missing); err != nil {
			return Tools{}, err
		}
		if tools, missing = lookupSystemTools(); len(missing) > 0 {
			return Tools{}, fmt.Errorf("%s still missing after installing their packages", strings.Join(missing, ", "))
		}
	}
	if tools.KubeAPIServer, err = buildKubeAPIServer(ctx, repoRoot); err != nil {
		return Tools{}, err
	}
	return tools, nil
}

// lookupSystemTools finds the tools that come from system packages and
// names those it cannot find.
func lookupSystemTools() (Tools, []string) {
	var tools Tools
	var missing []string
	for name, dst := range map[string]*string{
		"etcd":       &tools.Etcd,
		"prometheus": &tools.Prometheus,
		"git":        &tools.Git,
	} {
		path, err := lookPath(name)
		if err != nil {
			missing = append(missing, name)
			continue
		}
		*dst = path
	}
	sort.Strings(missing)
	return tools, missing
}

// lookPath finds name on PATH, falling back to /usr/bin where the Debian
// packages put their binaries.
func lookPath(name string) (string, error) {
	if path, err := exec.LookPath(name); err == nil {
		return filepath.Abs(path)
	}
	path := filepath.Join("/usr/bin", name)
	if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return path, nil
	}
	return "", fmt.Errorf("%s not found", name)
}

// installPackages installs the Debian packages providing the missing tools.
func installPackages(ctx context.Context, missing []string) error {
	return AptInstall(ctx, missing, packagesFor(missing))
}

// AptInstall installs the Debian packages pkgs, which provide the missing
// tools, when the process runs as root.
func AptInstall(ctx context.Context, missing, pkgs []string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s not found; install them with: apt-get install --no-install-recommends %s",
			strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	aptGet, err := exec.LookPath("apt-get")
	if err != nil {
		return fmt.Errorf("%s not found and apt-get is unavailable to install %s", strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	// Keep the packages' maintainer scripts from starting system services
	// (a system Prometheus on :9090 among them), unless an administrator
	// already set a policy.
	const policy = "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	list := strings.Join(pkgs, ", ")
	end := reportStep("installing "+list, "installed "+list,
		fmt.Sprintf("installing %s with apt-get (%s missing; once)...", list, strings.Join(missing, ", ")))
	err = Run(ctx, env, aptGet, "update")
	if err != nil {
		end(err)
		return fmt.Errorf("apt-get update: %w", err)
	}
	args := append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)
	err = Run(ctx, env, aptGet, args...)
	end(err)
	if err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// packagesFor returns the sorted, distinct packages providing tools.
func packagesFor(tools []string) []string {
	seen := map[string]bool{}
	var pkgs []string
	for _, t := range tools {
		if p := aptPackages[t]; !seen[p] {
			seen[p] = true
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// tool is a server or CLI the test bed builds from a tools module of its
// own in hack/tools.
type tool struct {
	// name is the binary's and, unless dir says otherwise, the tools
	// module's directory in hack/tools.
	name string
	// dir is the tools module's directory in hack/tools when one module
	// holds several commands (the node's four share one module, so that
	// they share its pins).
	dir string
	// module is the Go module the tool comes from; its version in the
	// tools module's go.mod is announced when the build starts.
	module string
	// pkg is the command to build, in the tools module: "." or a
	// "./sub" directory of it, or an import path.
	pkg string
	// tags are the build tags.
	tags string
	// stampVersion, when set, returns the linker flags that stamp the
	// module's version into the binary, as the upstream release build does.
	stampVersion func(version string) []string
}

var (
	kubeAPIServerTool = tool{name: "kube-apiserver", module: "k8s.io/kubernetes", pkg: ".", stampVersion: kubernetesVersionFlags}
	helmTool          = tool{name: "helm", module: "helm.sh/helm/v3", pkg: "helm.sh/helm/v3/cmd/helm"}
	giteaTool         = tool{name: "gitea", module: giteaModule, pkg: ".", tags: "sqlite sqlite_unlock_notify"}
	// Thanos builds with slicelabels, as its own release does: its gRPC
	// code takes labels.Labels for a slice, and crashes otherwise.
	thanosTool = tool{name: "thanos", module: "github.com/thanos-io/thanos", pkg: "github.com/thanos-io/thanos/cmd/thanos", tags: "slicelabels"}
	// The node's servers: upstream's mains, in one module with
	// kube-apiserver's pins.
	nodeTools = []tool{
		{name: "kubelet", dir: "kube-node", module: "k8s.io/kubernetes", pkg: "./kubelet", stampVersion: kubernetesVersionFlags},
		{name: "kube-controller-manager", dir: "kube-node", module: "k8s.io/kubernetes", pkg: "./kube-controller-manager", stampVersion: kubernetesVersionFlags},
		{name: "kube-scheduler", dir: "kube-node", module: "k8s.io/kubernetes", pkg: "./kube-scheduler", stampVersion: kubernetesVersionFlags},
		{name: "kube-proxy", dir: "kube-node", module: "k8s.io/kubernetes", pkg: "./kube-proxy", stampVersion: kubernetesVersionFlags},
	}
)

// kubernetesVersionFlags returns the linker flags with which Kubernetes'
// release build stamps version (v1.34.4) into a server, so that it reports
// it on /version, and Helm's kubeVersion constraints see a real version
// rather than v0.0.0-master; nil when version is not vMAJOR.MINOR.PATCH.
func kubernetesVersionFlags(version string) []string {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if !strings.HasPrefix(version, "v") || len(parts) != 3 {
		return nil
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return nil
		}
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags, "-X", pkg+".gitVersion="+version, "-X", pkg+".gitMajor="+parts[0],
			"-X", pkg+".gitMinor="+parts[1], "-X", pkg+".gitTreeState=clean")
	}
	return flags
}

// buildKubeAPIServer builds kube-apiserver from its tools module.
func buildKubeAPIServer(ctx context.Context, repoRoot string) (string, error) {
	return buildTool(ctx, repoRoot, kubeAPIServerTool)
}

// buildTool builds the command of the tools module hack/tools/<name> into
// .cache/bin/<name>, unless that binary is newer than the module's
// sources. A build takes minutes on a cold Go build cache; it says so on
// progressOut as it starts, every progressInterval while it runs, and
// when it ends.
func buildTool(ctx context.Context, repoRoot string, t tool) (string, error) {
	dir := t.dir
	if dir == "" {
		dir = t.name
	}
	module := filepath.Join(repoRoot, "hack", "tools", dir)
	out := filepath.Join(repoRoot, ".cache", "bin", t.name)
	var cmdDirs []string
	if strings.HasPrefix(t.pkg, "./") {
		cmdDirs = append(cmdDirs, filepath.Join(module, t.pkg))
	}
	fresh, err := newerThanSources(out, module, cmdDirs...)
	if err != nil {
		return "", err
	}
	if fresh {
		return out, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build %s: go not found on PATH: %w", t.name, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", t.name, err)
	}
	// Build next to the target and rename, so that a half-written binary
	// is never mistaken for a fresh one.
	tmp := out + ".tmp"
	env := append(os.Environ(), "GOWORK=off")
	args := []string{"build", "-C", module, "-o", tmp}
	if t.tags != "" {
		args = append(args, "-tags", t.tags)
	}
	version := requiredVersion(filepath.Join(module, "go.mod"), t.module)
	if t.stampVersion != nil {
		flags := t.stampVersion(version)
		if flags == nil {
			return "", fmt.Errorf("build %s: cannot stamp version %q of %s", t.name, version, t.module)
		}
		args = append(args, "-ldflags", strings.Join(flags, " "))
	}
	end := reportStep("building "+t.name, "built "+t.name, fmt.Sprintf(
		"building %s from its Go module (once; cached in %s)...",
		strings.TrimSpace(t.name+" "+version), displayPath(repoRoot, filepath.Dir(out))))
	err = Run(ctx, env, goBin, append(args, t.pkg)...)
	end(err)
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("build %s: %w", t.name, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("build %s: %w", t.name, err)
	}
	return out, nil
}

// requiredVersion returns the version of module that the go.mod at path
// requires, or "" when it cannot tell.
func requiredVersion(path, module string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1]
		}
	}
	return ""
}

// displayPath returns path relative to the repository root when it lies
// inside it.
func displayPath(repoRoot, path string) string {
	if rel, err := filepath.Rel(repoRoot, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// EnsureHelm returns the helm CLI, built from the tools module in
// hack/tools/helm into .cache/bin on first use.
func EnsureHelm(ctx context.Context, repoRoot string) (string, error) {
	if err := os.MkdirAll(filepath.Join(repoRoot, ".cache", "bin"), 0o755); err != nil {
		return "", fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(repoRoot, ".cache", "testbed-helm.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	return buildTool(ctx, repoRoot, helmTool)
}

// newerThanSources reports whether bin exists and is newer than go.mod,
// go.sum of the module in dir and the Go files in dir and in goDirs.
func newerThanSources(bin, dir string, goDirs ...string) (bool, error) {
	st, err := os.Stat(bin)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", bin, err)
	}
	var sources []string
	for _, d := range append([]string{dir}, goDirs...) {
		files, err := filepath.Glob(filepath.Join(d, "*.go"))
		if err != nil {
			return false, err
		}
		sources = append(sources, files...)
	}
	sources = append(sources, filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum"))
	for _, src := range sources {
		sst, err := os.Stat(src)
		if err != nil {
			return false, fmt.Errorf("stat the sources of %s: %w", bin, err)
		}
		if !st.ModTime().After(sst.ModTime()) {
			return false, nil
		}
	}
	return true, nil
}

// Run runs a command, returning an error with the tail of its output when
// it fails.
func Run(ctx context.Context, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w\n%s", err, tailLines(out.String(), logTailLines))
	}
	return nil
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LockFile takes an exclusive lock on path, waiting for it as long as ctx
// allows, and returns the function releasing it.
func LockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	began, announced := time.Now(), false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", filepath.Base(path), err)
		}
		// Someone else (another test binary, or another goroutine) builds
		// or installs the test bed's tools: say so when that is no mere
		// moment.
		if !announced && time.Since(began) > 2*time.Second {
			announced = true
			fmt.Fprintf(progressOut, "waiting for %s, held while another build or install of the test bed's tools runs...\n", displayPath(filepath.Dir(filepath.Dir(path)), path))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", filepath.Base(path), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// BuildNodeServers builds a node's Kubernetes servers (see package node):
// the kubelet, kube-controller-manager, kube-scheduler and kube-proxy, in
// that order, from the tools module in hack/tools/kube-node into
// .cache/bin, one at a time, unless they are newer than its sources. It
// returns their paths.
func BuildNodeServers(ctx context.Context, repoRoot string) ([]string, error) {
	paths := make([]string, len(nodeTools))
	for i, t := range nodeTools {
		var err error
		if paths[i], err = buildTool(ctx, repoRoot, t); err != nil {
			return nil, err
		}
	}
	return paths, nil
}
