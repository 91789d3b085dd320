package config

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// chartPassword is the password of the test repositories files; no error
// or printed Config may hold it.
const chartPassword = "s3cr3t-chart-pw"

// writeRepositories writes a repositories file and returns its path.
func writeRepositories(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestHelmRepositoryConfigGivesCredentialsByURL checks that the entries
// of a repositories file as helm repo add writes it give their
// credentials to the repository at their URL, however it is spelt, and
// to no other.
func TestHelmRepositoryConfigGivesCredentialsByURL(t *testing.T) {
	file := writeRepositories(t, `apiVersion: ""
generated: "2025-01-01T00:00:00Z"
repositories:
- caFile: ""
  certFile: ""
  insecure_skip_tls_verify: false
  keyFile: ""
  name: shop
  pass_credentials_all: false
  password: `+chartPassword+`
  url: https://Charts.Example.com/shop
  username: bot
- name: registry
  url: oci://registry.example.com/charts
  username: robot
  password: `+chartPassword+`-oci
- name: public
  url: https://public.example.com
`)
	cfg, err := Parse(append(requiredArgs(""), "--helm-repository-config="+file), io.Discard)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	tests := []struct {
		url  string
		want chartfetch.Credentials
		ok   bool
	}{
		{"https://Charts.Example.com/shop", chartfetch.Credentials{Username: "bot", Password: chartPassword}, true},
		{"https://charts.example.com/shop/", chartfetch.Credentials{Username: "bot", Password: chartPassword}, true},
		{"HTTPS://charts.example.com/shop//", chartfetch.Credentials{Username: "bot", Password: chartPassword}, true},
		{"oci://registry.example.com/charts", chartfetch.Credentials{Username: "robot", Password: chartPassword + "-oci"}, true},
		{"http://charts.example.com/shop", chartfetch.Credentials{}, false},
		{"https://charts.example.com/shop/sub", chartfetch.Credentials{}, false},
		{"https://charts.example.com", chartfetch.Credentials{}, false},
		{"https://evil.example.com/shop", chartfetch.Credentials{}, false},
		{"https://public.example.com", chartfetch.Credentials{}, false},
		{"not a url", chartfetch.Credentials{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, ok := cfg.chartCredentials.lookup(tt.url)
			if got != tt.want || ok != tt.ok {
				t.Errorf("credentials of %s = %v, %v; want %v, %v", tt.url, got.Username, ok, tt.want.Username, tt.ok)
			}
		})
	}
	if s := fmt.Sprintf("%v %+v %#v", *cfg, *cfg, *cfg); strings.Contains(s, chartPassword) {
		t.Error("a printed Config holds the chart repository's password")
	}
}

// TestHelmRepositoryConfigErrors checks that a repositories file that
// cannot be used fails the load with an error that names the key and the
// file, says what is wrong, and never quotes a password nor a URL.
func TestHelmRepositoryConfigErrors(t *testing.T) {
	pw := chartPassword
	tests := []struct {
		name, content string
		want          string
	}{
		{"yaml syntax", "repositories:\n- name: shop\n  password: " + pw + "\n  username: [\n", "not a Helm repositories file: invalid YAML at line 4"},
		{"unterminated quote", "repositories:\n- name: shop\n  password: \"" + pw + "\n", "invalid YAML at line 4"},
		{"a map as a key", "repositories:\n- name: shop\n  ? {" + pw + ": x}\n  : y\n", "not a Helm repositories file: invalid YAML"},
		{"unknown anchor", "repositories:\n- name: shop\n  password: *" + pw + "\n", "not a Helm repositories file: invalid YAML"},
		{"password not a string", "repositories:\n- name: shop\n  url: https://charts.example.com\n  password: [" + pw + "]\n",
			"repositories.password must be a string, not a array"},
		{"repositories not a list", "repositories: " + pw + "\n", "repositories must be a []*repo.Entry, not a string"},
		{"no url", "repositories:\n- name: shop\n  username: bot\n  password: " + pw + "\n", `repository "shop": no url`},
		{"url with credentials and a wrong scheme", "repositories:\n- name: shop\n  url: ftp://bot:" + pw + "@charts.example.com\n",
			`repository "shop": url: scheme must be one of http, https, oci`},
		{"url that does not parse", "repositories:\n- url: \"https://bot:" + pw + "@charts.example.com/%zz\"\n", `repository "#1": url: not a valid URL`},
		{"one url, two passwords", "repositories:\n- name: a\n  url: https://charts.example.com\n  username: bot\n  password: " + pw +
			"\n- name: b\n  url: https://charts.example.com/\n  username: bot\n  password: other-" + pw + "\n",
			`repositories "a" and "b" have the same url and different credentials`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeRepositories(t, tt.content)
			_, err := Parse(append(requiredArgs(""), "--helm-repository-config="+file), io.Discard)
			if err == nil {
				t.Fatal("Parse() error = nil")
			}
			msg := err.Error()
			if !strings.Contains(msg, "helm-repository-config: "+file+": ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q, want the key, %s and %q", msg, file, tt.want)
			}
			if strings.Contains(msg, pw) || strings.Contains(msg, "charts.example.com") {
				t.Errorf("error = %q quotes the file's password or a URL", msg)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "absent.yaml")
		_, err := Parse(append(requiredArgs(""), "--helm-repository-config="+file), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "helm-repository-config: open "+file+": no such file") {
			t.Errorf("error = %v, want the key and the file that cannot be opened", err)
		}
	})
}

// TestChartLoaderSendsTheRepositorysCredentials checks that the loader a
// run renders with sends a chart repository the credentials the file
// gives its URL, and a repository the file does not list none.
func TestChartLoaderSendsTheRepositorysCredentials(t *testing.T) {
	type seen struct {
		user, password string
		ok             bool
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		got <- seen{u, p, ok}
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	file := writeRepositories(t, "repositories:\n- name: shop\n  url: "+srv.URL+"/shop\n  username: bot\n  password: "+chartPassword+"\n")
	cfg, err := Parse(append(requiredArgs(""), "--helm-repository-config="+file), io.Discard)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	tests := []struct {
		repo string
		want seen
	}{
		{srv.URL + "/shop/", seen{"bot", chartPassword, true}},
		{srv.URL + "/other", seen{}},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			_, err := cfg.chartLoader(chartfetch.WithHTTPClient(srv.Client())).Fetch(t.Context(), chartfetch.ChartRef{RepoURL: tt.repo, Chart: "web", Version: "1.0.0"})
			if err == nil {
				t.Fatal("Fetch() error = nil from a server that refuses everything")
			}
			if strings.Contains(err.Error(), chartPassword) {
				t.Errorf("Fetch() error = %q holds the password", err)
			}
			if s := <-got; s != tt.want {
				t.Errorf("the repository got %+v, want %+v", s, tt.want)
			}
		})
	}
}

// TestChartCAFile fetches a chart from a repository whose certificate a
// private CA signed: refused without chart-ca-file, fetched with it; a
// file without a certificate fails the run at start.
func TestChartCAFile(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithTLS())
	repo.Add(t, "shop", "1.0.0", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n"})
	ref := chartfetch.ChartRef{RepoURL: repo.URL, Chart: "shop", Version: "1.0.0"}

	cfg, err := Parse(requiredArgs(""), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.chartLoader().Fetch(t.Context(), ref); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Fetch() without chart-ca-file = %v, want the certificate refused", err)
	}

	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, repo.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Parse(append(requiredArgs(""), "--chart-ca-file="+file), io.Discard)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if ch, err := cfg.chartLoader().Fetch(t.Context(), ref); err != nil || ch.Name != "shop" {
		t.Errorf("Fetch() with chart-ca-file = %v, %v; want the chart", ch, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(append(requiredArgs(""), "--chart-ca-file="+bad), io.Discard); err == nil || !strings.Contains(err.Error(), "chart-ca-file: "+bad+": no PEM certificate") {
		t.Errorf("Parse() with a file without a certificate = %v, want it refused", err)
	}
}

// TestChartSecretsDir fetches a chart whose source names its CA in a
// certSecretRef: refused without chart-secrets-dir, fetched with it;
// a path that is no directory fails the run at start.
func TestChartSecretsDir(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithTLS())
	repo.Add(t, "shop", "1.0.0", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n"})
	ref := chartfetch.ChartRef{RepoURL: repo.URL, Chart: "shop", Version: "1.0.0", CertSecretRef: chartfetch.SecretRef{Namespace: "flux-system", Name: "shop-ca"}}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "flux-system", "shop-ca"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flux-system", "shop-ca", "ca.crt"), repo.CA, 0o600); err != nil {
		t.Fatal(err)
	}

	cfg, err := Parse(requiredArgs(""), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.chartLoader().Fetch(t.Context(), ref); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Fetch() without chart-secrets-dir = %v, want the certificate refused", err)
	}
	cfg, err = Parse(append(requiredArgs(""), "--chart-secrets-dir="+dir), io.Discard)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if ch, err := cfg.chartLoader().Fetch(t.Context(), ref); err != nil || ch.Name != "shop" {
		t.Errorf("Fetch() with chart-secrets-dir = %v, %v; want the chart", ch, err)
	}

	file := filepath.Join(dir, "flux-system", "shop-ca", "ca.crt")
	if _, err := Parse(append(requiredArgs(""), "--chart-secrets-dir="+file), io.Discard); err == nil || !strings.Contains(err.Error(), "chart-secrets-dir: "+file+" is not a directory") {
		t.Errorf("Parse() with a file for chart-secrets-dir = %v, want it refused", err)
	}
}

// TestRepositoryFetchHosts checks that repository-fetch-hosts takes hosts
// and host:port only: a URL, a path or a user would not say which host.
func TestRepositoryFetchHosts(t *testing.T) {
	for _, tc := range []struct {
		value, wantErr string
	}{
		{"charts.example.com,127.0.0.1:8080", ""},
		{"https://charts.example.com", `repository-fetch-hosts: "https://charts.example.com" is not a host or host:port`},
		{"charts.example.com/stable", `repository-fetch-hosts: "charts.example.com/stable" is not a host or host:port`},
		{"me@charts.example.com", `repository-fetch-hosts: "me@charts.example.com" is not a host or host:port`},
	} {
		cfg, err := Parse(append(requiredArgs(""), "--repository-fetch-hosts="+tc.value), io.Discard)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Parse(%q) = %v", tc.value, err)
		case tc.wantErr == "" && len(cfg.RepositoryFetchHosts) != 2:
			t.Errorf("Parse(%q) gave %q", tc.value, cfg.RepositoryFetchHosts)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Parse(%q) = %v, want %q", tc.value, err, tc.wantErr)
		}
	}
}
