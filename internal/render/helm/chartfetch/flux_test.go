//go:build integration

package chartfetch

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/registry"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// TestFetchOCIRefsAsFlux pulls charts as an OCIRepository's spec.ref and
// spec.layerSelector name them: an exact tag that is no version, a
// digest (checked), and the layer of a given media type among others,
// with extract and copy.
func TestFetchOCIRefsAsFlux(t *testing.T) {
	r, archives := versionedRegistry(t)
	const readme = "text/markdown"
	chartLayer := func(v string) helmtest.Layer {
		return helmtest.Layer{MediaType: registry.ChartLayerMediaType, Data: archives[v]}
	}
	latest := r.PushArtifact(t, "podinfo", "latest", chartLayer("1.2.0"))
	untagged := r.PushArtifact(t, "podinfo", "", chartLayer("1.0.0"))
	r.PushArtifact(t, "bundle", "1.0.0", helmtest.Layer{MediaType: readme, Data: []byte("# not a chart\n")}, chartLayer("1.5.0"))
	l := NewLoader(WithPlainHTTP())
	chartSelector := LayerSelector{MediaType: registry.ChartLayerMediaType}
	tests := []struct {
		name string
		ref  ChartRef
		want string // the version pulled, or the error's text
		ok   bool
	}{
		{"tag latest", ChartRef{Chart: "podinfo", Tag: "latest"}, "1.2.0", true},
		{"exact tag", ChartRef{Chart: "podinfo", Tag: "1.2.3"}, "1.2.3", true},
		{"digest of a tag", ChartRef{Chart: "podinfo", Digest: latest}, "1.2.0", true},
		{"digest untagged", ChartRef{Chart: "podinfo", Digest: untagged}, "1.0.0", true},
		{"semver range", ChartRef{Chart: "podinfo", Version: ">=1.0.0 <1.3.0", Layer: chartSelector}, "1.2.3", true},
		{"layer by media type, copy", ChartRef{Chart: "bundle", Tag: "1.0.0", Layer: LayerSelector{MediaType: registry.ChartLayerMediaType, Operation: "copy"}}, "1.5.0", true},
		{"layer by media type, extract", ChartRef{Chart: "bundle", Tag: "1.0.0", Layer: chartSelector}, "1.5.0", true},
		{"first layer is no archive", ChartRef{Chart: "bundle", Tag: "1.0.0"}, "is not tar+gzip, which extract needs", false},
		{"no layer of the media type", ChartRef{Chart: "bundle", Tag: "1.0.0", Layer: LayerSelector{MediaType: "application/x-none"}}, "no layer of media type application/x-none", false},
		{"unknown operation", ChartRef{Chart: "bundle", Tag: "1.0.0", Layer: LayerSelector{Operation: "unpack"}}, `operation "unpack" is neither extract nor copy`, false},
		{"digest not held", ChartRef{Chart: "podinfo", Digest: "sha256:" + strings.Repeat("0", 64)}, "chart not found", false},
		{"digest malformed", ChartRef{Chart: "podinfo", Digest: "sha256:abc"}, "is not sha256: and 64 hexadecimal digits", false},
		{"tag not held", ChartRef{Chart: "podinfo", Tag: "stable"}, "chart not found", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ref.RepoURL = r.URL
			c, err := l.Fetch(t.Context(), tt.ref)
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Fetch() = %v, want an error saying %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tt.want || c.Digest != sha256Hex(archives[tt.want]) {
				t.Errorf("Fetch() = %s (archive %s), want %s (archive %s)", c.Version, c.Digest, tt.want, sha256Hex(archives[tt.want]))
			}
		})
	}
}

// TestFetchOCIDigestChecked proves that a chart asked by digest is not
// taken from a registry that answers with another manifest.
func TestFetchOCIDigestChecked(t *testing.T) {
	r, archives := versionedRegistry(t)
	asked := r.PushArtifact(t, "podinfo", "", helmtest.Layer{MediaType: registry.ChartLayerMediaType, Data: archives["1.0.0"]})
	other := r.PushArtifact(t, "podinfo", "", helmtest.Layer{MediaType: registry.ChartLayerMediaType, Data: archives["2.0.0"]})
	r.Lie(asked, other)
	c, err := NewLoader(WithPlainHTTP()).Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Digest: asked})
	if err == nil {
		t.Fatalf("Fetch() = %s, want the manifest refused", c.Version)
	}
	if !strings.Contains(err.Error(), "the manifest's digest is "+other+", not the one asked") {
		t.Errorf("Fetch() = %v, want an error about the digest", err)
	}
}

// writeSecret lays a Secret out as a projected volume does under dir:
// <dir>/<namespace>/<name>/<key>.
func writeSecret(t *testing.T, dir, namespace, name string, data map[string][]byte) {
	t.Helper()
	d := filepath.Join(dir, namespace, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(d, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFetchSourceSecrets fetches from an OCI registry and a chart
// repository that serve HTTPS with a private CA and ask for basic auth,
// with what the sources' certSecretRef and secretRef name in the secrets
// directory: username and password, or a .dockerconfigjson. No error
// shows a password.
func TestFetchSourceSecrets(t *testing.T) {
	const user, password, wrong = "flux", "pw-5e1d7a", "pw-wrong-93c2"
	reg := helmtest.NewRegistry(t, helmtest.WithTLS(), helmtest.WithBasicAuth(user, password))
	reg.Push(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	repo := helmtest.NewRepo(t, helmtest.WithTLS(), helmtest.WithBasicAuth(user, password))
	repo.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	regHost := strings.TrimPrefix(reg.URL, "oci://")
	regHost, _, _ = strings.Cut(regHost, "/")

	dir := t.TempDir()
	writeSecret(t, dir, "flux-system", "registry-ca", map[string][]byte{"ca.crt": reg.CA})
	writeSecret(t, dir, "flux-system", "repo-ca", map[string][]byte{"ca.crt": repo.CA})
	writeSecret(t, dir, "flux-system", "auth", map[string][]byte{"username": []byte(user), "password": []byte(password)})
	writeSecret(t, dir, "flux-system", "wrong", map[string][]byte{"username": []byte(user), "password": []byte(wrong)})
	docker := `{"auths":{"https://` + regHost + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(user+":"+password)) + `"}}}`
	writeSecret(t, dir, "flux-system", "docker", map[string][]byte{".dockerconfigjson": []byte(docker)})
	writeSecret(t, dir, "flux-system", "empty", map[string][]byte{"other": []byte("x")})

	secret := func(name string) SecretRef { return SecretRef{Namespace: "flux-system", Name: name} }
	tests := []struct {
		name    string
		ref     ChartRef
		noDir   bool
		wantErr string
	}{
		{"registry: CA and basic auth", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("auth")}, false, ""},
		{"registry: CA and docker config", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("docker")}, false, ""},
		{"repository: CA and basic auth", ChartRef{RepoURL: repo.URL, CertSecretRef: secret("repo-ca"), SecretRef: secret("auth")}, false, ""},
		{"registry: no CA", ChartRef{RepoURL: reg.URL, SecretRef: secret("auth")}, false, "certificate"},
		{"repository: no CA", ChartRef{RepoURL: repo.URL, SecretRef: secret("auth")}, false, "certificate"},
		{"registry: wrong password", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("wrong")}, false, "access refused"},
		{"repository: wrong password", ChartRef{RepoURL: repo.URL, CertSecretRef: secret("repo-ca"), SecretRef: secret("wrong")}, false, "access refused"},
		{"Secret not mounted", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("missing")}, false, "the Secret flux-system/missing is not mounted"},
		{"Secret without credentials", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("empty")}, false, "holds neither username and password nor .dockerconfigjson"},
		{"name out of the directory", ChartRef{RepoURL: reg.URL, SecretRef: SecretRef{Namespace: "..", Name: "flux-system"}}, false, "not a valid namespace and name"},
		{"no secrets directory: refs not read", ChartRef{RepoURL: reg.URL, CertSecretRef: secret("registry-ca"), SecretRef: secret("auth")}, true, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ref.Chart, tt.ref.Version = "podinfo", "1.0.0"
			var opts []LoaderOption
			if !tt.noDir {
				opts = append(opts, WithSecretsDir(dir))
			}
			c, err := NewLoader(opts...).Fetch(t.Context(), tt.ref)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Version != "1.0.0" {
					t.Errorf("Fetch() = %s, want 1.0.0", c.Version)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch() = %v, want an error saying %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrChartNotFound) {
				t.Errorf("Fetch() = %v, want no ErrChartNotFound", err)
			}
			for _, s := range []string{password, wrong} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error shows a password: %v", err)
				}
			}
		})
	}
}

// TestFetchSourceSecretsNotShared proves that, in one run, a source
// without its login failing does not fail another source of the same
// registry and repository that names its Secrets.
func TestFetchSourceSecretsNotShared(t *testing.T) {
	const user, password = "flux", "pw-6b0f2d"
	reg := helmtest.NewRegistry(t, helmtest.WithBasicAuth(user, password))
	reg.Push(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
	repo.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	dir := t.TempDir()
	writeSecret(t, dir, "apps", "auth", map[string][]byte{"username": []byte(user), "password": []byte(password)})
	l := NewLoader(WithPlainHTTP(), WithSecretsDir(dir))
	for _, u := range []string{reg.URL, repo.URL} {
		for _, version := range []string{"1.0.0", "^1"} {
			ref := ChartRef{RepoURL: u, Chart: "podinfo", Version: version}
			if _, err := l.Fetch(t.Context(), ref); err == nil {
				t.Fatalf("Fetch(%s %s) without a secretRef succeeded, want access refused", u, version)
			}
			// Plain HTTP, as the source says with spec.insecure.
			ref.SecretRef, ref.PlainHTTP = SecretRef{Namespace: "apps", Name: "auth"}, true
			if c, err := l.Fetch(t.Context(), ref); err != nil || c.Version != "1.0.0" {
				t.Errorf("Fetch(%s %s) with a secretRef = %v, want 1.0.0", u, version, err)
			}
		}
	}
}

// TestSourceSecretNotSentInTheClear checks that a source's Secret login
// never goes to a chart repository over plain HTTP unless the source sets
// spec.insecure: the repository's URL is the repository author's to
// choose. The server records every Authorization header it gets.
func TestSourceSecretNotSentInTheClear(t *testing.T) {
	const user, password = "victim", "pw-3c9e1a"
	var mu sync.Mutex
	var auth []string
	repo := helmtest.NewRepo(t, helmtest.WithRequestHook(func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if h := r.Header.Get("Authorization"); h != "" {
			auth = append(auth, h)
		}
	}))
	repo.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	dir := t.TempDir()
	writeSecret(t, dir, "shop", "registry", map[string][]byte{"username": []byte(user), "password": []byte(password)})
	ref := ChartRef{RepoURL: repo.URL, Chart: "podinfo", Version: "1.0.0", SecretRef: SecretRef{Namespace: "shop", Name: "registry"}}
	_, err := NewLoader(WithSecretsDir(dir)).Fetch(t.Context(), ref)
	if err == nil || !strings.Contains(err.Error(), "the login of the Secret shop/registry is not sent over plain HTTP") || strings.Contains(err.Error(), password) {
		t.Fatalf("Fetch() = %v, want the login refused over plain HTTP, without the password", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 0 {
		t.Fatalf("the repository got Authorization headers %q", auth)
	}
}

// clientChain makes a CA and a client certificate it signs, in PEM.
func clientChain(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "recommend-job"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestFetchClientCertificate fetches from a chart repository that asks
// for a client certificate, with the tls.crt and tls.key of the
// source's certSecretRef: refused without them, and a Secret holding
// one without the other is named.
func TestFetchClientCertificate(t *testing.T) {
	clientCA, cert, key := clientChain(t)
	repo := helmtest.NewRepo(t, helmtest.WithTLS(), helmtest.WithClientCA(clientCA))
	repo.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	dir := t.TempDir()
	writeSecret(t, dir, "apps", "mtls", map[string][]byte{"ca.crt": repo.CA, "tls.crt": cert, "tls.key": key})
	writeSecret(t, dir, "apps", "ca-only", map[string][]byte{"ca.crt": repo.CA})
	writeSecret(t, dir, "apps", "half", map[string][]byte{"ca.crt": repo.CA, "tls.crt": cert})
	l := NewLoader(WithSecretsDir(dir))
	tests := []struct{ secret, wantErr string }{
		{"mtls", ""},
		{"ca-only", "certificate"},
		{"half", "the Secret apps/half holds one of tls.crt and tls.key without the other"},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			c, err := l.Fetch(t.Context(), ChartRef{RepoURL: repo.URL, Chart: "podinfo", Version: "1.0.0", CertSecretRef: SecretRef{Namespace: "apps", Name: tt.secret}})
			if tt.wantErr == "" {
				if err != nil || c.Version != "1.0.0" {
					t.Fatalf("Fetch() = %v, want 1.0.0", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch() = %v, want an error saying %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}
