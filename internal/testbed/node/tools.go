package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// Tools holds the paths of the binaries a node runs beside the test
// bed's apiserver.
type Tools struct {
	Kubelet               string
	KubeControllerManager string
	KubeScheduler         string
	KubeProxy             string
	Containerd            string
	Ctr                   string
	Runc                  string
	Iptables              string
	IP                    string
	// CNIBin is the directory of the CNI plugins.
	CNIBin string
}

// packages names the Debian package providing each system tool of a
// node, and the file by which it is found.
var packages = []struct{ pkg, file string }{
	{"containerd", "/usr/bin/containerd"},
	{"containerd", "/usr/bin/ctr"},
	{"runc", "/usr/sbin/runc"},
	{"containernetworking-plugins", "/usr/lib/cni/bridge"},
	{"iptables", "/usr/sbin/iptables"},
	{"conntrack", "/usr/sbin/conntrack"},
	{"iproute2", "/sbin/ip"},
}

// EnsureTools returns the binaries a node needs. containerd, runc,
// the CNI plugins, iptables, conntrack and ip come from their Debian
// packages, installed with apt-get when missing and the process runs as
// root; the kubelet, kube-controller-manager, kube-scheduler and
// kube-proxy are built from the tools module in hack/tools/kube-node into
// .cache/bin, one at a time, unless they are newer than its sources.
func EnsureTools(ctx context.Context, repoRoot string) (Tools, error) {
	if err := os.MkdirAll(filepath.Join(repoRoot, ".cache", "bin"), 0o755); err != nil {
		return Tools{}, fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := testbed.LockFile(ctx, filepath.Join(repoRoot, ".cache", "testbed-node.lock"))
	if err != nil {
		return Tools{}, err
	}
	defer unlock()
	if err := installPackages(ctx); err != nil {
		return Tools{}, err
	}
	tools := Tools{
		Containerd: "/usr/bin/containerd",
		Ctr:        "/usr/bin/ctr",
		Runc:       "/usr/sbin/runc",
		Iptables:   "/usr/sbin/iptables",
		IP:         "/sbin/ip",
		CNIBin:     "/usr/lib/cni",
	}
	servers, err := testbed.BuildNodeServers(ctx, repoRoot)
	if err != nil {
		return Tools{}, err
	}
	tools.Kubelet, tools.KubeControllerManager, tools.KubeScheduler, tools.KubeProxy = servers[0], servers[1], servers[2], servers[3]
	return tools, nil
}

// installPackages installs the Debian packages of a node's system
// tools that are missing.
func installPackages(ctx context.Context) error {
	var missing, pkgs []string
	seen := map[string]bool{}
	for _, p := range packages {
		if _, err := os.Stat(p.file); err == nil {
			continue
		}
		missing = append(missing, filepath.Base(p.file))
		if !seen[p.pkg] {
			seen[p.pkg] = true
			pkgs = append(pkgs, p.pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := testbed.AptInstall(ctx, missing, pkgs); err != nil {
		return err
	}
	for _, p := range packages {
		if _, err := os.Stat(p.file); err != nil {
			return fmt.Errorf("%s still missing after installing %s", p.file, p.pkg)
		}
	}
	return nil
}
