package helmtest

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
)

// Registry is an OCI registry served over plain HTTP on loopback: the
// read side of the distribution API (manifests by tag or digest, blobs,
// tag lists), holding charts as helm push stores them.
type Registry struct {
	// URL is the oci:// URL of the path that holds the charts, as a Flux
	// HelmRepository of type oci names it: oci://127.0.0.1:<port>/charts.
	URL string
	// CA is the PEM certificate a Registry made WithTLS serves HTTPS with.
	CA []byte

	cfg       serverConfig
	mu        sync.Mutex
	blobs     map[string][]byte            // by digest
	manifests map[string][]byte            // by digest
	tags      map[string]map[string]string // repository → tag → manifest digest
	requests  map[string]int               // by path under /v2/
}

// registryRepoPath is the path of the registry under which charts are
// pushed.
const registryRepoPath = "charts"

// ociManifestMediaType is the media type of the manifests helm pushes.
const ociManifestMediaType = "application/vnd.oci.image.manifest.v1+json"

// NewRegistry starts an empty OCI registry, stopped when the test ends.
// WithBasicAuth makes it ask for basic auth, as registries do, with a 401
// and a Basic challenge; WithTLS makes it serve HTTPS, its CA in CA.
func NewRegistry(t testing.TB, opts ...RepoOption) *Registry {
	t.Helper()
	r := &Registry{
		blobs:     map[string][]byte{},
		manifests: map[string][]byte{},
		tags:      map[string]map[string]string{},
		requests:  map[string]int{},
	}
	for _, opt := range opts {
		opt(&r.cfg)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if r.cfg.tls {
		srv.StartTLS()
		r.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
	r.URL = registry.OCIScheme + "://" + host + "/" + registryRepoPath
	return r
}

// Push packages a chart from files (see Package) and pushes it.
func (r *Registry) Push(t testing.TB, name, version string, files map[string]string) {
	t.Helper()
	r.PushArchive(t, Package(t, name, version, files))
}

// PushArchive pushes a packaged chart as helm push does: to
// charts/<name>, tagged with its version (a + written as _), with its
// Chart.yaml as the config and the archive as the one layer.
func (r *Registry) PushArchive(t testing.TB, data []byte) {
	t.Helper()
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("load the chart archive: %v", err)
	}
	config, err := json.Marshal(c.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	m := ociManifest{
		SchemaVersion: 2,
		Config:        ociDescriptor{MediaType: registry.ConfigMediaType, Digest: digestOf(config), Size: int64(len(config))},
		Layers:        []ociDescriptor{{MediaType: registry.ChartLayerMediaType, Digest: digestOf(data), Size: int64(len(data))}},
		Annotations: map[string]string{
			"org.opencontainers.image.title":   c.Name(),
			"org.opencontainers.image.version": c.Metadata.Version,
		},
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	repoName := registryRepoPath + "/" + c.Name()
	tag := strings.ReplaceAll(c.Metadata.Version, "+", "_")

	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[digestOf(config)] = config
	r.blobs[digestOf(data)] = data
	r.manifests[digestOf(manifest)] = manifest
	if r.tags[repoName] == nil {
		r.tags[repoName] = map[string]string{}
	}
	r.tags[repoName][tag] = digestOf(manifest)
}

// Layer is one layer of an artifact PushArtifact pushes.
type Layer struct {
	MediaType string
	Data      []byte
}

// PushArtifact pushes an OCI artifact to charts/<name> as flux push
// artifact or oras push do, its layers in order, tagged tag when tag is
// not "", and returns its manifest's digest.
func (r *Registry) PushArtifact(t testing.TB, name, tag string, layers ...Layer) string {
	t.Helper()
	config := []byte("{}")
	m := ociManifest{SchemaVersion: 2, Config: ociDescriptor{MediaType: "application/vnd.oci.empty.v1+json", Digest: digestOf(config), Size: int64(len(config))}}
	for _, l := range layers {
		m.Layers = append(m.Layers, ociDescriptor{MediaType: l.MediaType, Digest: digestOf(l.Data), Size: int64(len(l.Data))})
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	repoName := registryRepoPath + "/" + name
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[digestOf(config)] = config
	for _, l := range layers {
		r.blobs[digestOf(l.Data)] = l.Data
	}
	r.manifests[digestOf(manifest)] = manifest
	if r.tags[repoName] == nil {
		r.tags[repoName] = map[string]string{}
	}
	if tag != "" {
		r.tags[repoName][tag] = digestOf(manifest)
	}
	return digestOf(manifest)
}

// Lie makes the registry answer a request for the manifest of digest
// with the manifest of other, as a registry that is broken or not to be
// trusted would.
func (r *Registry) Lie(digest, other string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifests[digest] = r.manifests[other]
}

// Requests is how many requests the registry got for path, under /v2/
// (charts/podinfo/tags/list, charts/podinfo/manifests/1.0.0), refused
// ones included.
func (r *Registry) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// ociManifest and ociDescriptor are the fields of an OCI image manifest
// that helm writes.
type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	path, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	r.mu.Lock()
	r.requests[path]++
	r.mu.Unlock()
	if r.cfg.hook != nil {
		r.cfg.hook(req)
	}
	if !r.cfg.authorized(w, req, "helmtest registry") {
		return
	}
	switch {
	case !ok:
		ociError(w, http.StatusNotFound, "NAME_UNKNOWN", "not a registry path")
	case req.Method != http.MethodGet && req.Method != http.MethodHead:
		ociError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "the registry is read-only")
	case path == "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	case strings.HasSuffix(path, "/tags/list"):
		r.serveTags(w, strings.TrimSuffix(path, "/tags/list"))
	case strings.Contains(path, "/manifests/"):
		i := strings.LastIndex(path, "/manifests/")
		r.serveManifest(w, req, path[:i], path[i+len("/manifests/"):])
	case strings.Contains(path, "/blobs/"):
		i := strings.LastIndex(path, "/blobs/")
		r.serveBlob(w, req, path[i+len("/blobs/"):])
	default:
		ociError(w, http.StatusNotFound, "UNSUPPORTED", "unknown registry path")
	}
}

func (r *Registry) serveTags(w http.ResponseWriter, repoName string) {
	r.mu.Lock()
	tagged, ok := r.tags[repoName]
	var tags []string
	for tag := range tagged {
		tags = append(tags, tag)
	}
	r.mu.Unlock()
	if !ok {
		ociError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
		return
	}
	slices.Sort(tags)
	body, _ := json.Marshal(map[string]any{"name": repoName, "tags": tags})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (r *Registry) serveManifest(w http.ResponseWriter, req *http.Request, repoName, ref string) {
	r.mu.Lock()
	digest := ref
	if !strings.HasPrefix(ref, "sha256:") {
		digest = r.tags[repoName][ref]
	}
	manifest, ok := r.manifests[digest]
	if _, known := r.tags[repoName]; !known {
		ok = false
	}
	r.mu.Unlock()
	if !ok {
		ociError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		return
	}
	serveContent(w, req, ociManifestMediaType, digest, manifest)
}

func (r *Registry) serveBlob(w http.ResponseWriter, req *http.Request, digest string) {
	r.mu.Lock()
	blob, ok := r.blobs[digest]
	r.mu.Unlock()
	if !ok {
		ociError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
		return
	}
	serveContent(w, req, "application/octet-stream", digest, blob)
}

// serveContent answers with content and the headers registries send,
// which clients check.
func serveContent(w http.ResponseWriter, req *http.Request, mediaType, digest string, content []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(content)
}

// ociError answers with an error of the distribution API.
func ociError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// PushTo pushes a packaged chart with helm's registry client, as helm
// push does, to <host>/charts/<name>:<version> of a registry that is not
// a Registry (the test bed's docker-registry): over plain HTTP when ca
// is nil, else over HTTPS trusting ca; with basic auth when username is
// set. It returns the manifest's digest and the oci:// URL of the path
// that holds the charts.
func PushTo(t testing.TB, host string, ca []byte, username, password string, data []byte) (digest, url string) {
	t.Helper()
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("load the chart archive: %v", err)
	}
	opts := []registry.ClientOption{}
	if ca == nil {
		opts = append(opts, registry.ClientOptPlainHTTP())
	} else {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		opts = append(opts, registry.ClientOptHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}))
	}
	if username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(username, password))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/" + registryRepoPath + "/" + c.Name() + ":" + strings.ReplaceAll(c.Metadata.Version, "+", "_")
	res, err := client.Push(data, ref)
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return res.Manifest.Digest, registry.OCIScheme + "://" + host + "/" + registryRepoPath
}
