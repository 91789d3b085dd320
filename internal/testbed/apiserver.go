package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// AdminUser is the user the admin token authenticates as; it is in the
	// group system:masters.
	AdminUser = "testbed-admin"
	// kubeContext names the cluster, user and context of the kubeconfig.
	kubeContext = "testbed"
)

// APIServer is a kube-apiserver serving HTTPS on 127.0.0.1. It runs without
// a controller manager: namespaces, RBAC bindings and workload objects can
// be created and read, but nothing reconciles them.
type APIServer struct {
	// URL is the HTTPS URL of the API, e.g. https://127.0.0.1:6443.
	URL string
	// KubeconfigPath is a kubeconfig file, in Dir, with the admin token.
	KubeconfigPath string
	// AdminToken is a bearer token of a member of system:masters. Never
	// log it.
	AdminToken string
	// CAData is the PEM encoded CA that signed the serving certificate.
	CAData []byte
	// Dir holds the keys, certificates, token file, kubeconfig and
	// kube-apiserver.log.
	Dir string

	proc *Process
}

// StartAPIServer starts kube-apiserver backed by the etcd at etcdURL, with
// its files in dir, and waits until /readyz answers ok. The server
// generates its own serving certificate, which the kubeconfig trusts.
func StartAPIServer(ctx context.Context, tools Tools, etcdURL, dir string, opts ...Option) (*APIServer, error) {
	return startWithRetry(func() (*APIServer, error) { return startAPIServer(ctx, tools, etcdURL, dir, opts...) })
}

func startAPIServer(ctx context.Context, tools Tools, etcdURL, dir string, opts ...Option) (*APIServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	s, args, err := prepareAPIServer(etcdURL, dir, buildOptions(opts).node)
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	proc, err := startProcess("kube-apiserver", tools.KubeAPIServer, args, filepath.Join(dir, "kube-apiserver.log"), nil, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	s.proc = proc
	if err := proc.WaitReady(ctx, s.probeReady); err != nil {
		return nil, proc.Fail(err)
	}
	if err := s.writeKubeconfig(); err != nil {
		_ = proc.Stop()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	return s, nil
}

// ServiceRange holds the Services' cluster IPs: the benchmarking range
// (RFC 2544), as a node's pods, so that nothing of the bed's looks like an
// address of a real network. A node's kube-proxy routes it.
const ServiceRange = "198.19.0.0/24"

// nodeAPIServer is what kube-apiserver needs to serve a node.
type nodeAPIServer struct {
	address, tokenLines string
}

// NodeAPIServer makes kube-apiserver serve a node (see package node): it
// binds address, which the pods reach, accepts the tokens of the node's
// components, given as lines of its token file (token,user,uid,"groups"),
// authorizes the kubelet as a node and reaches it at its InternalIP,
// since its name resolves to nothing.
func NodeAPIServer(address, tokenLines string) Option {
	return func(o *options) { o.node = &nodeAPIServer{address: address, tokenLines: tokenLines} }
}

// prepareAPIServer writes the service account key and the token file and
// returns the server, not yet started, with its arguments; node, when not
// nil, makes it serve a node (see NodeAPIServer).
func prepareAPIServer(etcdURL, dir string, node *nodeAPIServer) (*APIServer, []string, error) {
	keyPath := filepath.Join(dir, "service-account.key")
	if err := writeRSAKey(keyPath); err != nil {
		return nil, nil, err
	}
	token, err := randomHex(32)
	if err != nil {
		return nil, nil, err
	}
	tokenPath := filepath.Join(dir, "tokens.csv")
	lines := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, AdminUser, AdminUser)
	if node != nil {
		lines += node.tokenLines
	}
	if err := os.WriteFile(tokenPath, []byte(lines), 0o600); err != nil {
		return nil, nil, fmt.Errorf("write token file: %w", err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, nil, err
	}
	address := "127.0.0.1"
	if node != nil {
		address = node.address
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--bind-address=" + address,
		// Without it the apiserver advertises the default route's address
		// and will not start on a machine that has none.
		"--advertise-address=" + address,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyPath,
		"--service-account-signing-key-file=" + keyPath,
		"--token-auth-file=" + tokenPath,
		"--service-cluster-ip-range=" + ServiceRange,
		"--profiling=false",
	}
	if node != nil {
		args = append(args, "--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
			"--kubelet-preferred-address-types=InternalIP,Hostname")
	} else {
		args = append(args, "--authorization-mode=RBAC",
			// Without a controller manager nobody creates the default
			// service account of a namespace, and the ServiceAccount
			// admission plugin would refuse every pod.
			"--disable-admission-plugins=ServiceAccount")
	}
	s := &APIServer{
		URL:            fmt.Sprintf("https://%s:%d", address, ports[0]),
		KubeconfigPath: filepath.Join(dir, "kubeconfig"),
		AdminToken:     token,
		Dir:            dir,
	}
	return s, args, nil
}

// probeReady loads the serving CA once the server has written it and asks
// /readyz.
func (s *APIServer) probeReady(ctx context.Context) error {
	if s.CAData == nil {
		ca, err := readServingCA(filepath.Join(s.Dir, "certs", "apiserver.crt"))
		if err != nil {
			return err
		}
		s.CAData = ca
	}
	client, err := s.httpClient()
	if err != nil {
		return err
	}
	header := http.Header{"Authorization": {"Bearer " + s.AdminToken}}
	return probeHTTP(ctx, client, s.URL+"/readyz", header, http.StatusOK, "ok")
}

// httpClient returns a client trusting the server's CA.
func (s *APIServer) httpClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CAData) {
		return nil, errors.New("no certificate in the serving CA")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: transport}, nil
}

// RESTConfig returns a client configuration for the admin user.
func (s *APIServer) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     s.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: bytes.Clone(s.CAData)},
		QPS:             100,
		Burst:           200,
	}
}

// Process returns the kube-apiserver process.
func (s *APIServer) Process() *Process {
	return s.proc
}

// Stop stops kube-apiserver.
func (s *APIServer) Stop() error {
	return s.proc.Stop()
}

// writeKubeconfig writes a kubeconfig for the admin user whose current
// context uses the namespace default.
func (s *APIServer) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeContext] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: s.CAData}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: s.AdminToken}
	cfg.Contexts[kubeContext] = &clientcmdapi.Context{Cluster: kubeContext, AuthInfo: AdminUser, Namespace: "default"}
	cfg.CurrentContext = kubeContext
	if err := clientcmd.WriteToFile(*cfg, s.KubeconfigPath); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// readServingCA returns the CA certificates of the bundle the apiserver
// wrote into its cert dir (serving certificate followed by its CA), or the
// whole bundle if none of them is a CA.
func readServingCA(path string) ([]byte, error) {
	bundle, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	var cas []byte
	found := false
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse serving certificate: %w", err)
		}
		found = true
		if cert.IsCA {
			cas = append(cas, pem.EncodeToMemory(block)...)
		}
	}
	if !found {
		return nil, errors.New("no certificate in the serving certificate file yet")
	}
	if cas == nil {
		return bundle, nil
	}
	return cas, nil
}

// writeRSAKey writes a new PEM encoded RSA private key to path.
func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode service account key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	return nil
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
