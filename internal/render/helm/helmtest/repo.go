package helmtest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/provenance"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// modTime is the time of every packaged file, so that the same files
// package to the same bytes.
var modTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Package builds a chart from files, named by their path in the chart
// (templates/deployment.yaml, charts/db/Chart.yaml), and packages it as
// helm package does. Chart.yaml is generated from name and version
// unless files holds one.
func Package(t testing.TB, name, version string, files map[string]string) []byte {
	t.Helper()
	c, err := buildChart(name, version, files)
	if err != nil {
		t.Fatalf("build chart %s %s: %v", name, version, err)
	}
	dir := t.TempDir()
	file, err := chartutil.Save(c, dir)
	if err != nil {
		t.Fatalf("package chart %s %s: %v", name, version, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// buildChart loads files as a chart, as helm loads a chart directory.
func buildChart(name, version string, files map[string]string) (*chartv2.Chart, error) {
	if _, ok := files["Chart.yaml"]; !ok {
		files = maps.Clone(files)
		if files == nil {
			files = map[string]string{}
		}
		files["Chart.yaml"] = fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version)
	}
	var buffered []*archive.BufferedFile
	for _, n := range slices.Sorted(maps.Keys(files)) {
		buffered = append(buffered, &archive.BufferedFile{Name: n, ModTime: modTime, Data: []byte(files[n])})
	}
	return loader.LoadFiles(buffered)
}

// RepoOption configures a Repo or a Registry.
type RepoOption func(*serverConfig)

type serverConfig struct {
	username, password string
	tls                bool
	clientCAs          *x509.CertPool
	absoluteURLs       bool
	chunked            bool
	hook               func(*http.Request)
}

// WithBasicAuth makes the server refuse, with 401, any request without
// this user name and password.
func WithBasicAuth(username, password string) RepoOption {
	return func(c *serverConfig) { c.username, c.password = username, password }
}

// WithTLS makes a Repo serve HTTPS with a certificate of its own CA,
// which its CA field holds.
func WithTLS() RepoOption {
	return func(c *serverConfig) { c.tls = true }
}

// WithClientCA makes a Repo made WithTLS ask for a client certificate
// that a CA of pemCA signed.
func WithClientCA(pemCA []byte) RepoOption {
	return func(c *serverConfig) {
		c.clientCAs = x509.NewCertPool()
		c.clientCAs.AppendCertsFromPEM(pemCA)
	}
}

// WithAbsoluteURLs makes a Repo's index name its archives by absolute
// URLs, as helm repo index --url does, rather than relative to the
// repository.
func WithAbsoluteURLs() RepoOption {
	return func(c *serverConfig) { c.absoluteURLs = true }
}

// WithChunkedResponses makes a Repo send its files chunked, without a
// Content-Length, so that a client learns their size only by reading.
func WithChunkedResponses() RepoOption {
	return func(c *serverConfig) { c.chunked = true }
}

// WithRequestHook makes the server call hook with each request before it
// answers it; a hook that blocks holds the answer back.
func WithRequestHook(hook func(*http.Request)) RepoOption {
	return func(c *serverConfig) { c.hook = hook }
}

// authorized checks a request's basic auth, and answers 401 when it
// fails.
func (c *serverConfig) authorized(w http.ResponseWriter, r *http.Request, realm string) bool {
	if c.username == "" && c.password == "" {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if ok && user == c.username && pass == c.password {
		return true
	}
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", realm))
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return false
}

// Repo is a chart repository served over HTTP on loopback, under the
// path /charts, as helm repo index and a static web server would serve
// it.
type Repo struct {
	// URL is the repository's URL, as a Flux HelmRepository or an Argo
	// CD Application names it: http://127.0.0.1:<port>/charts.
	URL string
	// CA is the PEM certificate a Repo made WithTLS serves HTTPS with.
	CA []byte

	cfg      serverConfig
	mu       sync.Mutex
	index    *repo.IndexFile
	files    map[string][]byte // archives by name
	requests map[string]int    // by path relative to URL
}

// repoPath is where a Repo serves its files.
const repoPath = "/charts/"

// NewRepo starts an empty chart repository, stopped when the test ends.
func NewRepo(t testing.TB, opts ...RepoOption) *Repo {
	t.Helper()
	r := &Repo{index: repo.NewIndexFile(), files: map[string][]byte{}, requests: map[string]int{}}
	for _, opt := range opts {
		opt(&r.cfg)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if r.cfg.tls {
		if r.cfg.clientCAs != nil {
			srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: r.cfg.clientCAs, MinVersion: tls.VersionTLS12}
		}
		srv.StartTLS()
		r.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	r.URL = srv.URL + strings.TrimSuffix(repoPath, "/")
	return r
}

// Add packages a chart from files (see Package) and adds it to the
// repository.
func (r *Repo) Add(t testing.TB, name, version string, files map[string]string) {
	t.Helper()
	r.AddArchive(t, Package(t, name, version, files))
}

// AddArchive adds a packaged chart to the repository, named
// <name>-<version>.tgz after its Chart.yaml, and indexes it with its
// digest.
func (r *Repo) AddArchive(t testing.TB, data []byte) {
	t.Helper()
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("load the chart archive: %v", err)
	}
	digest, err := provenance.Digest(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	file := ArchiveName(c.Name(), c.Metadata.Version)
	baseURL := ""
	if r.cfg.absoluteURLs {
		baseURL = r.URL
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[file]; ok {
		t.Fatalf("the repository already holds %s", file)
	}
	if err := r.index.MustAdd(c.Metadata, file, baseURL, digest); err != nil {
		t.Fatalf("index %s: %v", file, err)
	}
	r.index.SortEntries()
	r.files[file] = data
}

// Replace serves data as the archive file, without changing the index:
// its digest no longer matches.
func (r *Repo) Replace(t testing.TB, file string, data []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[file]; !ok {
		t.Fatalf("the repository holds no %s", file)
	}
	r.files[file] = data
}

// ArchiveName is the file name helm package gives a chart version.
func ArchiveName(name, version string) string { return name + "-" + version + ".tgz" }

// Requests is how many requests the repository got for file, named
// relative to URL (index.yaml, podinfo-1.0.0.tgz), refused ones
// included.
func (r *Repo) Requests(file string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[file]
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	file, ok := strings.CutPrefix(req.URL.Path, repoPath)
	r.mu.Lock()
	r.requests[file]++
	r.mu.Unlock()
	if r.cfg.hook != nil {
		r.cfg.hook(req)
	}
	if !r.cfg.authorized(w, req, "helmtest chart repository") {
		return
	}
	if !ok || (req.Method != http.MethodGet && req.Method != http.MethodHead) {
		http.NotFound(w, req)
		return
	}

	r.mu.Lock()
	var data []byte
	var err error
	contentType := "application/gzip"
	if file == "index.yaml" {
		data, err = yaml.Marshal(r.index)
		contentType = "application/yaml"
	} else {
		data, ok = r.files[file]
	}
	r.mu.Unlock()
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case !ok:
		http.NotFound(w, req)
	case r.cfg.chunked:
		w.Header().Set("Content-Type", contentType)
		w.(http.Flusher).Flush() // the headers go out without a Content-Length
		_, _ = w.Write(data)
	default:
		w.Header().Set("Content-Type", contentType)
		http.ServeContent(w, req, file, time.Time{}, bytes.NewReader(data))
	}
}
