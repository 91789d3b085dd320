package chartfetch

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxSecretKeyBytes bounds a file read of a mounted Secret: Kubernetes
// keeps a whole Secret under 1 MiB.
const maxSecretKeyBytes = 1 << 20

// secretNamePattern is a Kubernetes object name (DNS subdomain), which
// is also what keeps a name read from the repository inside the secrets
// directory: no slash, no "..".
var secretNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// access is how one source is reached: the HTTP client (its TLS
// configuration from a certSecretRef) and the credentials (from a
// secretRef, else the loader's).
type access struct {
	client *http.Client
	creds  *Credentials
}

// accessFor returns how ref's source is reached from host. Errors name
// the Secret and the key, never what they hold.
func (l *Loader) accessFor(ref ChartRef, host string) (access, error) {
	a := access{client: l.client}
	if l.credentials != nil {
		if c, ok := l.credentials(ref.RepoURL); ok {
			a.creds = &c
		}
	}
	if l.secretsDir == "" {
		return a, nil
	}
	if ref.CertSecretRef.Name != "" {
		client, err := l.tlsClient(ref.CertSecretRef)
		if err != nil {
			return access{}, err
		}
		a.client = client
	}
	if ref.SecretRef.Name != "" {
		c, err := l.secretCredentials(ref.SecretRef, host)
		if err != nil {
			return access{}, err
		}
		a.creds = &c
	}
	return a, nil
}

// accessKey tells apart, in the run's fetches, sources of one URL that
// name different Secrets: one without its login must not fail another
// with it. "" when ref names none.
func (r ChartRef) accessKey() string {
	if r.SecretRef == (SecretRef{}) && r.CertSecretRef == (SecretRef{}) {
		return ""
	}
	return " secret=" + r.SecretRef.Namespace + "/" + r.SecretRef.Name + " cert=" + r.CertSecretRef.Namespace + "/" + r.CertSecretRef.Name
}

// secretDir is the directory a Secret is mounted at.
func (l *Loader) secretDir(s SecretRef) (string, error) {
	if !secretNamePattern.MatchString(s.Namespace) || !secretNamePattern.MatchString(s.Name) || strings.Contains(s.Namespace+"/"+s.Name, "..") {
		return "", fmt.Errorf("the Secret %q/%q is not a valid namespace and name", s.Namespace, s.Name)
	}
	dir := filepath.Join(l.secretsDir, s.Namespace, s.Name)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("the Secret %s/%s is not mounted in the chart secrets directory", s.Namespace, s.Name)
	}
	return dir, nil
}

// readKey reads the first of keys that the Secret mounted at dir holds;
// ok is false when it holds none of them.
func readKey(s SecretRef, dir string, keys ...string) (data []byte, ok bool, err error) {
	for _, key := range keys {
		f, err := os.Open(filepath.Join(dir, key))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("the Secret %s/%s: key %s cannot be read", s.Namespace, s.Name, key)
		}
		data, err = io.ReadAll(io.LimitReader(f, maxSecretKeyBytes+1))
		f.Close()
		if err != nil || len(data) > maxSecretKeyBytes {
			return nil, false, fmt.Errorf("the Secret %s/%s: key %s cannot be read or is over 1 MiB", s.Namespace, s.Name, key)
		}
		return data, true, nil
	}
	return nil, false, nil
}

// tlsClient is the loader's client with the TLS of a Flux certSecretRef:
// its ca.crt added to the CAs the loader trusts (the system's, and
// chart-ca-file's), never replacing them, and its tls.crt and tls.key as
// the client certificate. The older keys caFile, certFile and keyFile
// are read too, as Flux still reads them.
func (l *Loader) tlsClient(s SecretRef) (*http.Client, error) {
	dir, err := l.secretDir(s)
	if err != nil {
		return nil, err
	}
	var base *http.Transport
	if t, ok := l.client.Transport.(*http.Transport); ok {
		base = t.Clone()
	} else {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base.TLSClientConfig != nil {
		cfg = base.TLSClientConfig.Clone()
	}
	ca, ok, err := readKey(s, dir, "ca.crt", "caFile")
	if err != nil {
		return nil, err
	}
	if ok {
		pool := cfg.RootCAs
		if pool != nil {
			pool = pool.Clone()
		} else if pool, err = x509.SystemCertPool(); err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("the Secret %s/%s: ca.crt holds no PEM certificate", s.Namespace, s.Name)
		}
		cfg.RootCAs = pool
	}
	cert, hasCert, err := readKey(s, dir, "tls.crt", "certFile")
	if err != nil {
		return nil, err
	}
	key, hasKey, err := readKey(s, dir, "tls.key", "keyFile")
	if err != nil {
		return nil, err
	}
	switch {
	case hasCert && hasKey:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The error could quote the key's bytes.
			return nil, fmt.Errorf("the Secret %s/%s: tls.crt and tls.key are no certificate and key pair", s.Namespace, s.Name)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case hasCert || hasKey:
		return nil, fmt.Errorf("the Secret %s/%s holds one of tls.crt and tls.key without the other", s.Namespace, s.Name)
	case !ok:
		return nil, fmt.Errorf("the Secret %s/%s holds none of ca.crt, tls.crt and tls.key", s.Namespace, s.Name)
	}
	base.TLSClientConfig = cfg
	c := *l.client
	c.Transport = base
	return &c, nil
}

// secretCredentials reads a Flux secretRef: username and password, or a
// .dockerconfigjson (an OCIRepository's kubernetes.io/dockerconfigjson
// Secret) whose entry for host gives them.
func (l *Loader) secretCredentials(s SecretRef, host string) (Credentials, error) {
	dir, err := l.secretDir(s)
	if err != nil {
		return Credentials{}, err
	}
	if data, ok, err := readKey(s, dir, ".dockerconfigjson"); err != nil {
		return Credentials{}, err
	} else if ok {
		return dockerConfigCredentials(s, data, host)
	}
	user, hasUser, err := readKey(s, dir, "username")
	if err != nil {
		return Credentials{}, err
	}
	pass, hasPass, err := readKey(s, dir, "password")
	if err != nil {
		return Credentials{}, err
	}
	if !hasUser || !hasPass {
		return Credentials{}, fmt.Errorf("the Secret %s/%s holds neither username and password nor .dockerconfigjson", s.Namespace, s.Name)
	}
	return Credentials{Username: string(user), Password: string(pass)}, nil
}

// dockerConfigCredentials finds host's entry in a docker config: keyed
// by the host, or by a URL of it.
func dockerConfigCredentials(s SecretRef, data []byte, host string) (Credentials, error) {
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Credentials{}, fmt.Errorf("the Secret %s/%s: .dockerconfigjson is not a docker config", s.Namespace, s.Name)
	}
	for key, e := range cfg.Auths {
		h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
		if h, _, _ = strings.Cut(h, "/"); h != host {
			continue
		}
		if e.Auth != "" {
			decoded, err := base64.StdEncoding.DecodeString(e.Auth)
			user, pass, ok := strings.Cut(string(decoded), ":")
			if err != nil || !ok {
				return Credentials{}, fmt.Errorf("the Secret %s/%s: the auth of %s is not base64 of user:password", s.Namespace, s.Name, host)
			}
			return Credentials{Username: user, Password: pass}, nil
		}
		return Credentials{Username: e.Username, Password: e.Password}, nil
	}
	return Credentials{}, fmt.Errorf("the Secret %s/%s: .dockerconfigjson has no entry for %s", s.Namespace, s.Name, host)
}
