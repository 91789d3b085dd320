// Package node runs a Kubernetes node beside the test bed's apiserver, so
// that pods run for real: containerd with runc and the CNI bridge, the
// kubelet, kube-controller-manager, kube-scheduler and kube-proxy (built
// from hack/tools/kube-node), on a bridge of its own in RFC 2544's
// benchmarking range (Address), which the apiserver then binds. The test
// bed starts it when given one (testbed.Options.Node). It needs root, and
// leaves the host as it found it when it stops.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/recommend-job/recommend-job/hack/image"
	"github.com/recommend-job/recommend-job/internal/testbed"
)

// The node's addresses: RFC 2544's benchmarking range, on a bridge the
// test bed creates, so that nothing a pod sends leaves the machine. The
// bridge, the iptables chains and the kubelet's fixed host paths are
// global to the host: one node runs at a time.
const (
	// Name is the node's name.
	Name = "testbed-node"
	// Address is the node's IP, the bridge's address and the pods'
	// gateway; the apiserver, and every server a pod must reach, binds it.
	Address = "198.18.0.1"
	// bridge is the bridge the pods are attached to.
	bridge = "testbed0"
	// podRange holds the pods' addresses.
	podRange = "198.18.0.0/24"
	// SandboxImage is the image of the pods' sandbox process, built from
	// hack/cmd/pause and imported, never pulled.
	SandboxImage = "testbed.local/pause:1"
	// containerdNamespace is where the kubelet's containers and images
	// live in containerd.
	containerdNamespace = "k8s.io"
	// readyTimeout bounds the wait for the node to be Ready.
	readyTimeout = 2 * time.Minute
	// kubeContext names the cluster and context of the components'
	// kubeconfigs.
	kubeContext = "testbed"
)

// Node is a Kubernetes node beside the bed's apiserver: containerd with
// runc and the CNI bridge, the kubelet, kube-controller-manager,
// kube-scheduler and kube-proxy. Pods run for real, as the job's CronJob
// does in a cluster. It is a testbed.Node: testbed.Up prepares, starts
// and stops it.
type Node struct {
	// Dir holds the node's configuration, state and logs, once prepared.
	Dir string
	// Tools are the binaries the node runs, once prepared.
	Tools Tools
	// ContainerdAddress is containerd's socket, once prepared.
	ContainerdAddress string

	// images are the archives imported into containerd as the node starts.
	images []string
	api    *apiServer
	host   *hostState
	// lock is held while the node runs (see lockNode).
	lock  net.Listener
	procs nodeProcesses
	// client is the admin's, for the node's start and stop.
	client kubernetes.Interface
}

// nodeProcesses are the node's servers, in start order.
type nodeProcesses struct {
	containerd, controllerManager, scheduler, kubelet, proxy *testbed.Process
}

// apiServer is what kube-apiserver needs to serve a node: the tokens of
// the node's components.
type apiServer struct {
	// tokens are the components' bearer tokens, by user.
	tokens map[string]string
}

// A Node is what testbed.Up starts beside the apiserver.
var _ testbed.Node = (*Node)(nil)

// New returns a node that imports the image archives (OCI or
// docker-archive) into its containerd as it starts; pass it as
// testbed.Options.Node.
func New(images ...string) *Node {
	return &Node{images: images}
}

// The users the node's components authenticate as; the bootstrap RBAC
// policy and the Node authorizer grant them what they need.
const (
	nodeUser              = "system:node:" + Name
	controllerManagerUser = "system:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	proxyUser             = "system:kube-proxy"
)

// newAPIServer draws the components' tokens.
func newAPIServer() (*apiServer, error) {
	api := &apiServer{tokens: map[string]string{}}
	for _, user := range []string{nodeUser, controllerManagerUser, schedulerUser, proxyUser} {
		token, err := randomHex(32)
		if err != nil {
			return nil, err
		}
		api.tokens[user] = token
	}
	return api, nil
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// tokenLines are the lines of the apiserver's token file for the node's
// components.
func (api *apiServer) tokenLines() string {
	var b strings.Builder
	for _, user := range []string{nodeUser, controllerManagerUser, schedulerUser, proxyUser} {
		groups := ""
		if user == nodeUser {
			groups = `,"system:nodes"`
		}
		fmt.Fprintf(&b, "%s,%s,%s%s\n", api.tokens[user], user, user, groups)
	}
	return b.String()
}

// Prepare ensures the node's tools, records the host's state for Stop and
// creates the bridge, so that the apiserver can bind Address, and returns
// the options the bed's servers then take: the apiserver serves the node,
// and the pods reach it and Prometheus on the node's address.
func (n *Node) Prepare(ctx context.Context, repoRoot, dir string) ([]testbed.Option, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("node: runs as root only (containerd, the kubelet and kube-proxy change the host's network and cgroups)")
	}
	tools, err := EnsureTools(ctx, repoRoot)
	if err != nil {
		return nil, fmt.Errorf("node: tools: %w", err)
	}
	api, err := newAPIServer()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.Dir, n.Tools, n.api, n.ContainerdAddress = dir, tools, api, filepath.Join(dir, "containerd", "containerd.sock")
	for _, d := range []string{"containerd", "cni/net.d", "kubelet", "pki", "images"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	if n.lock, err = lockNode(ctx); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	host, err := saveHost(ctx, tools)
	if err != nil {
		n.lock.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := createBridge(ctx, tools.IP); err != nil {
		err = errors.Join(fmt.Errorf("node: %w", err), host.restore(ctx, dir))
		n.lock.Close()
		return nil, err
	}
	n.host = host
	return []testbed.Option{testbed.NodeAPIServer(Address, api.tokenLines()), testbed.BindAddress(Address)}, nil
}

// nodeLockName is the abstract Unix socket a running node holds: the
// bridge, the iptables chains and the kubelet's host paths allow one node
// per host, and the test binaries of several packages run at once.
const nodeLockName = "@recommend-job-testbed-node"

// Lock waits, as long as ctx allows, until no node runs on the host
// and keeps any from starting until unlock is called: for a test that
// looks at the host after its node stopped.
func Lock(ctx context.Context) (unlock func(), err error) {
	l, err := lockNode(ctx)
	if err != nil {
		return nil, err
	}
	return func() { l.Close() }, nil
}

// lockNode waits, as long as ctx allows, until no other node runs on the
// host and returns the lock, released by closing it. An abstract socket
// leaves no file behind and goes with the process that held it.
func lockNode(ctx context.Context) (net.Listener, error) {
	began, announced := time.Now(), false
	for {
		l, err := net.Listen("unix", nodeLockName)
		if err == nil {
			return l, nil
		}
		if !announced && time.Since(began) > 2*time.Second {
			announced = true
			testbed.Progressf("waiting for the test bed's node that runs on this host to stop...")
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the node that runs on this host: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Start starts the node's servers against api, imports the sandbox image
// and the node's images, and waits until the node is Ready and the
// namespace default has its ServiceAccount.
func (n *Node) Start(ctx context.Context, repoRoot string, api *testbed.APIServer, o []testbed.Option) error {
	client, err := kubernetes.NewForConfig(api.RESTConfig())
	if err != nil {
		return err
	}
	n.client = client
	caPath := filepath.Join(n.Dir, "pki", "ca.crt")
	if err := os.WriteFile(caPath, api.CAData, 0o644); err != nil {
		return err
	}
	if err := n.startContainerd(ctx, o); err != nil {
		return err
	}
	pause, err := n.buildPauseImage(ctx, repoRoot)
	if err != nil {
		return err
	}
	if err := n.ImportImages(ctx, append([]string{pause}, n.images...)...); err != nil {
		return err
	}
	if err := n.startControlPlane(api, caPath, o); err != nil {
		return err
	}
	if err := n.startKubelet(api, o); err != nil {
		return err
	}
	if err := n.startProxy(api, o); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// startContainerd writes containerd's configuration and the CNI network,
// starts containerd and waits until it answers.
func (n *Node) startContainerd(ctx context.Context, o []testbed.Option) error {
	dir := filepath.Join(n.Dir, "containerd")
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  # The network namespaces' mounts stay under the node's directory.
  netns_mounts_under_state_dir = true
  # The kubelet asks for a negative oom_score_adj, which needs
  # CAP_SYS_RESOURCE; containerd's own (0) is kept instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.ContainerdAddress, filepath.Join(dir, "opt"),
		SandboxImage, n.Tools.CNIBin, filepath.Join(n.Dir, "cni", "net.d"))
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	// No default route and no masquerading: a pod reaches the node and,
	// through kube-proxy, the Services, and nothing else.
	cni := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "testbed", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]],
            "routes": [{"dst": %q}], "dataDir": %q}}]}
`, bridge, podRange, Address, testbed.ServiceRange, filepath.Join(n.Dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(n.Dir, "cni", "net.d", "10-testbed.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	// An image a pod names that was not imported must not be pulled from
	// a registry: containerd's pulls go through a proxy that is not there.
	env := append(testbed.EnvironWithout("HTTP_PROXY=", "HTTPS_PROXY=", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy="),
		"HTTP_PROXY=http://127.0.0.1:1", "HTTPS_PROXY=http://127.0.0.1:1")
	proc, err := testbed.StartProcess("containerd", n.Tools.Containerd, []string{"--config", configPath},
		filepath.Join(dir, "containerd.log"), env, o...)
	if err != nil {
		return err
	}
	n.procs.containerd = proc
	if err := proc.WaitReady(ctx, func(ctx context.Context) error { return n.ctr(ctx, "version") }); err != nil {
		return proc.Fail(err)
	}
	return nil
}

// ctr runs containerd's CLI against the node's containerd, in the
// kubelet's namespace.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	return testbed.Run(ctx, nil, n.Tools.Ctr, append([]string{"--address", n.ContainerdAddress, "--namespace", containerdNamespace}, args...)...)
}

// ImportImages imports image archives (OCI or docker-archive) into the
// node's containerd, under the names they carry; pods run them with
// imagePullPolicy IfNotPresent or Never.
func (n *Node) ImportImages(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		if err := n.ctr(ctx, "images", "import", a); err != nil {
			return fmt.Errorf("import image %s: %w", filepath.Base(a), err)
		}
	}
	return nil
}

// buildPauseImage builds hack/cmd/pause statically and writes it as
// SandboxImage's archive.
func (n *Node) buildPauseImage(ctx context.Context, repoRoot string) (string, error) {
	bin := filepath.Join(n.Dir, "images", "pause")
	if err := BuildStatic(ctx, repoRoot, "./hack/cmd/pause", bin); err != nil {
		return "", err
	}
	archive := filepath.Join(n.Dir, "images", "pause.tar")
	if err := WriteImage(archive, image.Options{Binary: bin, Name: SandboxImage, Entrypoint: "/pause"}); err != nil {
		return "", err
	}
	return archive, nil
}

// BuildStatic builds the command pkg of the repository statically
// (CGO_ENABLED=0), as an image needs it, into out, with make image's
// flags: a static build shares no compiled package with the default cgo
// one, so that all static builds share theirs.
func BuildStatic(ctx context.Context, repoRoot, pkg, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build %s: go not found on PATH: %w", pkg, err)
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if err := testbed.Run(ctx, env, goBin, "build", "-C", repoRoot, "-trimpath", "-ldflags", "-s -w", "-o", out, pkg); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	return nil
}

// WriteImage writes the image opts describe (see hack/image) as an OCI
// archive at path, with the CA bundle of the host and its architecture
// unless opts say otherwise.
func WriteImage(path string, opts image.Options) error {
	if opts.CACertificates == "" {
		opts.CACertificates = image.CACertificates
	}
	if opts.Architecture == "" {
		opts.Architecture = runtime.GOARCH
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write image %s: %w", opts.Name, err)
	}
	_, err = image.Write(f, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write image %s: %w", opts.Name, err)
	}
	return nil
}

// writeComponentKubeconfig writes a kubeconfig for user's token and
// returns its path.
func (n *Node) writeComponentKubeconfig(api *testbed.APIServer, user string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeContext] = &clientcmdapi.Cluster{Server: api.URL, CertificateAuthorityData: api.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: n.api.tokens[user]}
	cfg.Contexts[kubeContext] = &clientcmdapi.Context{Cluster: kubeContext, AuthInfo: user}
	cfg.CurrentContext = kubeContext
	path := filepath.Join(n.Dir, "pki", strings.ReplaceAll(strings.TrimPrefix(user, "system:"), ":", "-")+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return path, nil
}

// startControlPlane starts kube-controller-manager, which creates the
// ServiceAccounts, the CA ConfigMaps and a CronJob's Jobs and pods, and
// kube-scheduler, which puts the pods on the node.
func (n *Node) startControlPlane(api *testbed.APIServer, caPath string, o []testbed.Option) error {
	ports, err := testbed.FreePorts(2)
	if err != nil {
		return err
	}
	cmConfig, err := n.writeComponentKubeconfig(api, controllerManagerUser)
	if err != nil {
		return err
	}
	n.procs.controllerManager, err = testbed.StartProcess("kube-controller-manager", n.Tools.KubeControllerManager, []string{
		"--kubeconfig=" + cmConfig,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + filepath.Join(api.Dir, "service-account.key"),
		"--root-ca-file=" + caPath,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[0]),
		"--leader-elect=false",
	}, filepath.Join(n.Dir, "kube-controller-manager.log"), nil, o...)
	if err != nil {
		return err
	}
	schedConfig, err := n.writeComponentKubeconfig(api, schedulerUser)
	if err != nil {
		return err
	}
	n.procs.scheduler, err = testbed.StartProcess("kube-scheduler", n.Tools.KubeScheduler, []string{
		"--kubeconfig=" + schedConfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[1]),
		"--leader-elect=false",
	}, filepath.Join(n.Dir, "kube-scheduler.log"), nil, o...)
	return err
}

// startKubelet writes the kubelet's configuration and starts it. Every
// path it would otherwise take on the host is set into the node's
// directory, but those it hard-codes (see hostState).
func (n *Node) startKubelet(api *testbed.APIServer, o []testbed.Option) error {
	dir := filepath.Join(n.Dir, "kubelet")
	ports, err := testbed.FreePorts(2)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}}
authorization: {mode: Webhook}
resolvConf: %[5]s
clusterDomain: cluster.local
podLogsDir: %[6]s
volumePluginDir: %[7]s
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, n.ContainerdAddress, Address, ports[0], ports[1], filepath.Join(dir, "resolv.conf"),
		filepath.Join(dir, "pod-logs"), filepath.Join(dir, "volume-plugins"))
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	kubeconfig, err := n.writeComponentKubeconfig(api, nodeUser)
	if err != nil {
		return err
	}
	n.procs.kubelet, err = testbed.StartProcess("kubelet", n.Tools.Kubelet, []string{
		"--config=" + configPath, "--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(dir, "root"), "--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + Name, "--node-ip=" + Address,
	}, filepath.Join(dir, "kubelet.log"), nil, o...)
	return err
}

// startProxy starts kube-proxy, which routes the Services' cluster IPs,
// the kubernetes Service's among them, with iptables. The flags keep it
// from changing the host's sysctls.
func (n *Node) startProxy(api *testbed.APIServer, o []testbed.Option) error {
	ports, err := testbed.FreePorts(2)
	if err != nil {
		return err
	}
	kubeconfig, err := n.writeComponentKubeconfig(api, proxyUser)
	if err != nil {
		return err
	}
	n.procs.proxy, err = testbed.StartProcess("kube-proxy", n.Tools.KubeProxy, []string{
		"--kubeconfig=" + kubeconfig, "--hostname-override=" + Name,
		"--proxy-mode=iptables", "--cluster-cidr=" + podRange, "--nodeport-addresses=primary",
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]), fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", ports[1]),
	}, filepath.Join(n.Dir, "kube-proxy.log"), nil, o...)
	return err
}

// waitReady waits until the node is Ready and the namespace default has
// its ServiceAccount, so that a pod can be created right away.
func (n *Node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last error
	for {
		if last = n.probeReady(ctx); last == nil {
			return nil
		}
		for _, p := range n.procs.all() {
			if err := p.ExitError(); err != nil {
				return fmt.Errorf("%s exited: %w%s", p.Info().Name, err, p.LogTail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node not ready (%w): %w%s", last, ctx.Err(), n.procs.kubelet.LogTail())
		case <-time.After(time.Second):
		}
	}
}

func (n *Node) probeReady(ctx context.Context) error {
	node, err := n.client.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
			if !ready {
				return fmt.Errorf("node %s: %s", c.Reason, c.Message)
			}
		}
	}
	if !ready {
		return errors.New("node has no Ready condition yet")
	}
	if _, err := n.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return err
	}
	return nil
}

func (p nodeProcesses) all() []*testbed.Process {
	var all []*testbed.Process
	for _, proc := range []*testbed.Process{p.containerd, p.controllerManager, p.scheduler, p.kubelet, p.proxy} {
		if proc != nil {
			all = append(all, proc)
		}
	}
	return all
}

// Processes describes the node's server processes, in start order.
func (n *Node) Processes() []testbed.ProcessInfo {
	var infos []testbed.ProcessInfo
	for _, p := range n.procs.all() {
		infos = append(infos, p.Info())
	}
	return infos
}

// Stop stops the node while the apiserver still runs and leaves the host
// as it found it: the pods are deleted first, so that the kubelet
// unmounts their volumes and tears their network down; then the servers
// stop, leftover containers and their shims go, and the mounts, iptables
// chains, cgroups, directories, bridge and sysctls the node made are
// undone. It is safe to call more than once.
func (n *Node) Stop(ctx context.Context) error {
	if n == nil || n.host == nil {
		return nil
	}
	var errs []error
	errs = append(errs, n.procs.controllerManager.Stop())
	if n.client != nil && n.procs.kubelet != nil && n.procs.kubelet.ExitError() == nil {
		errs = append(errs, n.deletePods(ctx))
	}
	errs = append(errs, n.procs.scheduler.Stop(), n.procs.kubelet.Stop(), n.procs.proxy.Stop())
	if n.procs.containerd != nil && n.procs.containerd.ExitError() == nil {
		errs = append(errs, n.removeContainers(ctx))
	}
	errs = append(errs, n.procs.containerd.Stop())
	killShims(n.ContainerdAddress)
	errs = append(errs, n.host.restore(ctx, n.Dir))
	n.host = nil
	n.lock.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop node: %w", err)
	}
	return nil
}

// deletePods deletes every pod and waits, a minute at most, until the
// kubelet has confirmed them gone. The controller manager has stopped, so
// the Job controller's finalizer on a running Job's pod is removed here,
// or the pod would outlive its containers.
func (n *Node) deletePods(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods := n.client.CoreV1().Pods(metav1.NamespaceAll)
	grace := int64(1)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		for _, p := range list.Items {
			if len(p.Finalizers) > 0 {
				_, err := n.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("remove the finalizers of pod %s/%s: %w", p.Namespace, p.Name, err)
				}
			}
			if p.DeletionTimestamp != nil {
				continue
			}
			err := n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pods still there: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removeContainers kills and deletes whatever containers the kubelet
// left, so that no shim outlives containerd.
func (n *Node) removeContainers(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, n.Tools.Ctr, "--address", n.ContainerdAddress, "--namespace", containerdNamespace,
		"containers", "list", "--quiet").Output()
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		_ = n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
		_ = n.ctr(ctx, "tasks", "delete", "--force", id)
		if err := n.ctr(ctx, "containers", "delete", id); err != nil {
			errs = append(errs, fmt.Errorf("delete container %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
