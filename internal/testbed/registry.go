package testbed

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// dockerRegistryPackage is the Debian package of the CNCF distribution
// registry (v2), whose binary is docker-registry.
const dockerRegistryPackage = "docker-registry"

// EnsureDockerRegistry returns the docker-registry binary, installing its
// Debian package when it is missing and the process runs as root.
func EnsureDockerRegistry(ctx context.Context) (string, error) {
	if path, err := lookPath(dockerRegistryPackage); err == nil {
		return path, nil
	}
	if err := installPackages(ctx, []string{dockerRegistryPackage}); err != nil {
		return "", err
	}
	return lookPath(dockerRegistryPackage)
}

// RegistryOptions are how a Registry serves.
type RegistryOptions struct {
	// TLS serves HTTPS with a certificate of a private CA made for it.
	TLS bool
	// Username and Password, when set, make it ask for basic auth
	// (an htpasswd file).
	Username, Password string
}

// Registry is a distribution (docker-registry) OCI registry listening on
// 127.0.0.1.
type Registry struct {
	// Host is its host:port.
	Host string
	// CA is the PEM certificate of the private CA that signed its
	// certificate, with TLS.
	CA []byte
	// DataDir holds its storage, configuration and docker-registry.log.
	DataDir string

	proc *Process
}

// StartRegistry starts binary on dataDir and waits until it answers.
func StartRegistry(ctx context.Context, binary, dataDir string, ro RegistryOptions, opts ...Option) (*Registry, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("start docker-registry: %w", err)
	}
	client := &http.Client{}
	var ca []byte
	tlsConfig := ""
	if ro.TLS {
		caPEM, certPEM, keyPEM, err := selfSignedChain()
		if err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		cert, key := filepath.Join(dataDir, "tls.crt"), filepath.Join(dataDir, "tls.key")
		if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		ca = caPEM
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
		tlsConfig = fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", cert, key)
	}
	authConfig := ""
	if ro.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(ro.Password), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		file := filepath.Join(dataDir, "htpasswd")
		if err := os.WriteFile(file, []byte(ro.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		authConfig = fmt.Sprintf("auth:\n  htpasswd:\n    realm: testbed\n    path: %s\n", file)
	}
	return startWithRetry(func() (*Registry, error) {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n%s%s",
			filepath.Join(dataDir, "storage"), addr, tlsConfig, authConfig)
		file := filepath.Join(dataDir, "config.yml")
		if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
			return nil, fmt.Errorf("start docker-registry: %w", err)
		}
		proc, err := startProcess("docker-registry", binary, []string{"serve", file}, filepath.Join(dataDir, "docker-registry.log"), nil, buildOptions(opts))
		if err != nil {
			return nil, err
		}
		r := &Registry{Host: addr, CA: ca, DataDir: dataDir, proc: proc}
		scheme := "http"
		if ro.TLS {
			scheme = "https"
		}
		want := http.StatusOK
		if ro.Username != "" {
			want = http.StatusUnauthorized
		}
		ready := func(ctx context.Context) error {
			return probeHTTP(ctx, client, scheme+"://"+addr+"/v2/", nil, want, "")
		}
		if err := proc.WaitReady(ctx, ready); err != nil {
			return nil, proc.Fail(err)
		}
		return r, nil
	})
}

// selfSignedChain makes a CA and a certificate it signs for 127.0.0.1
// and localhost, valid for a day, in PEM.
func selfSignedChain() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testbed registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Process returns the server's process.
func (r *Registry) Process() *Process { return r.proc }

// Stop stops the server.
func (r *Registry) Stop() error { return r.proc.Stop() }
