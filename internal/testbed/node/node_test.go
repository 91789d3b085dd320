//go:build integration

package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/recommend-job/recommend-job/hack/image"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/node"
)

// probeImage is the node test's workload, built from testdata/nodeprobe.
const probeImage = "testbed.local/nodeprobe:1"

// TestNode runs a pod on a bed's node, as a cluster runs the job's: from
// an imported image, as 65532 on a read-only root filesystem, reaching
// the apiserver through the kubernetes Service with its ServiceAccount
// token. After Close the host has nothing of the node left.
func TestNode(t *testing.T) {
	ctx := t.Context()
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "nodeprobe")
	if err := node.BuildStatic(ctx, root, "./internal/testbed/node/testdata/nodeprobe", probe); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "nodeprobe.tar")
	if err := node.WriteImage(archive, image.Options{Binary: probe, Name: probeImage, Entrypoint: "/nodeprobe"}); err != nil {
		t.Fatal(err)
	}
	unlock, err := node.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	absent := absentDirs(hostDirs)
	unlock()
	n := node.New(archive)
	b, err := testbed.Up(ctx, testbed.Options{Dir: filepath.Join(dir, "bed"), RepoRoot: root, Node: n, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = b.Close()
		}
	})

	report := runProbe(ctx, t, b)
	for _, want := range []string{
		"uid=65532 gid=65532",
		"root filesystem: read-only",
		"apiserver: 198.19.0.1:443",
		"user: system:serviceaccount:default:default",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the pod reported\n%s\nwant a line with %q", report, want)
		}
	}

	processes := append(b.Processes(), n.Processes()...)
	containerd := n.ContainerdAddress
	closed = true
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// Another package's test may start a node meanwhile.
	unlock, err = node.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	checkHostClean(t, dir, containerd, processes, absent)
}

// hostDirs are the host directories a node creates for itself.
var hostDirs = []string{"/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/var/lib/cni", "/run/containerd", "/opt/containerd"}

// absentDirs returns those of dirs that do not exist.
func absentDirs(dirs []string) []string {
	var absent []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			absent = append(absent, d)
		}
	}
	return absent
}

// runProbe runs the probe's pod and returns what it reported.
func runProbe(ctx context.Context, t *testing.T, b *testbed.Bed) string {
	t.Helper()
	client, err := kubernetes.NewForConfig(b.APIServer.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := client.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed {
			var report string
			for _, s := range got.Status.ContainerStatuses {
				if s.State.Terminated != nil {
					report = s.State.Terminated.Message
				}
			}
			if got.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod failed:\n%s", report)
			}
			return report
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod still %s after 2 minutes: %+v", got.Status.Phase, got.Status)
		}
		time.Sleep(time.Second)
	}
}

// checkHostClean fails unless the node left nothing: no process, no
// shim, no mount under dir, no bridge, no iptables chain, no kubepods
// cgroup, none of the absent host directories.
func checkHostClean(t *testing.T, dir, containerd string, processes []testbed.ProcessInfo, absent []string) {
	t.Helper()
	for _, p := range processes {
		if testbed.ProcessRunning(p) {
			t.Errorf("%s (pid %d) still runs", p.Name, p.PID)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range procs {
		if cmdline, err := os.ReadFile(path); err == nil && strings.Contains(string(cmdline), containerd) {
			t.Errorf("a process of the node's containerd still runs: %s", strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mountinfo)) {
		if strings.Contains(line, dir) || strings.Contains(line, "/run/netns/") {
			t.Errorf("left mounted: %s", strings.TrimSpace(line))
		}
	}
	if _, err := os.Stat("/sys/class/net/testbed0"); err == nil {
		t.Error("the bridge testbed0 is left")
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(bin, "-w", "-t", table, "-S").Output()
			if err != nil {
				t.Fatalf("%s -t %s -S: %v", bin, table, err)
			}
			for line := range strings.Lines(string(out)) {
				if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") {
					t.Errorf("%s %s: left %s", bin, table, strings.TrimSpace(line))
				}
			}
		}
	}
	if cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods"); len(cgroups) > 0 {
		t.Errorf("cgroups left: %v", cgroups)
	}
	for _, d := range absent {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is left", d)
		}
	}
}
