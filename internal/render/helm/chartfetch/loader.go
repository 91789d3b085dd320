package chartfetch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// Size limits on what is read of a chart. A chart is templates and
// values, kilobytes; these leave room for large charts with many
// subcharts and refuse what could only exhaust memory.
const (
	// MaxChartDirBytes bounds the files LoadDir reads of a chart
	// directory, subcharts included.
	MaxChartDirBytes = 20 << 20
	// MaxChartArchiveBytes bounds a chart archive downloaded from a chart
	// repository or an OCI registry.
	MaxChartArchiveBytes = 10 << 20
	// MaxIndexBytes bounds a chart repository's index.yaml: those of
	// large public repositories run to tens of MiB.
	MaxIndexBytes = 64 << 20
)

// ErrTooLarge means a chart directory, a chart archive or a repository
// index is over its size limit.
var ErrTooLarge = errors.New("too large")

// ErrChartNotFound means the chart, or the version asked, is not in its
// repository.
var ErrChartNotFound = errors.New("chart not found")

// ErrFetchTimeout means a repository or registry did not answer a fetch
// within the Loader's fetch timeout.
var ErrFetchTimeout = errors.New("no answer within the chart fetch timeout")

// Credentials are a user name and password for a chart repository: basic
// auth for an HTTP repository, the login of an OCI registry.
type Credentials struct{ Username, Password string }

// ChartRef names a chart in a chart repository, as a Flux HelmRelease's
// spec.chart.spec or an Argo CD Application's Helm source does.
type ChartRef struct {
	// RepoURL is an http(s) chart repository's URL, or an oci:// URL of
	// the registry path that holds the chart.
	RepoURL string
	// Chart is the chart's name.
	Chart string
	// Version is an exact version, a semver constraint such as ^1.2.0,
	// or "" for the latest stable version. Versions published with a v
	// before them (v1.21.1) count as their semver version, and an exact
	// version finds them with or without the v.
	Version string
	// PlainHTTP speaks plain HTTP to an OCI registry, as the spec.insecure
	// of a Flux OCIRepository or HelmRepository asks.
	PlainHTTP bool
	// Tag is an OCI tag pulled as it is, whatever Version says, as an
	// OCIRepository's spec.ref.tag names it ("latest" included).
	Tag string
	// Digest is an OCI manifest digest (sha256:...) pulled, and checked,
	// instead of any tag, as an OCIRepository's spec.ref.digest names it.
	Digest string
	// Layer selects the layer of an OCI artifact that holds the chart, as
	// an OCIRepository's spec.layerSelector does; zero, the chart layer
	// helm push writes, or the first layer of a Tag or Digest.
	Layer LayerSelector
	// SecretRef names the Secret of a Flux source's spec.secretRef: a
	// username and password, or a .dockerconfigjson. CertSecretRef that
	// of its spec.certSecretRef: ca.crt, tls.crt and tls.key. Both are
	// read from the loader's secrets directory (WithSecretsDir).
	SecretRef, CertSecretRef SecretRef
}

// LayerSelector picks an OCI artifact's layer as a Flux OCIRepository's
// spec.layerSelector does.
type LayerSelector struct {
	// MediaType is the layer's media type; "" takes the first layer.
	MediaType string
	// Operation is "extract" (the default: the layer must be a tar+gzip,
	// here a chart archive) or "copy" (the layer as it is, a chart archive).
	Operation string
}

// SecretRef names a Kubernetes Secret by namespace and name.
type SecretRef struct{ Namespace, Name string }

// String names the chart for messages: the repository URL without its
// user part, the chart and the version, tag or digest asked.
func (r ChartRef) String() string {
	v := cmp.Or(r.Digest, r.Tag, r.Version)
	if v == "" {
		v = "(latest)"
	}
	return redactedRaw(r.RepoURL) + " " + r.Chart + " " + v
}

// LoaderOption configures a Loader.
type LoaderOption func(*Loader)

// WithHTTPClient makes the Loader send its requests with c.
func WithHTTPClient(c *http.Client) LoaderOption {
	return func(l *Loader) {
		if c != nil {
			l.client = c
		}
	}
}

// WithCredentials gives the Loader the credentials of each repository:
// creds is asked with a ChartRef's RepoURL. They are sent to the
// repository's host only, never to another host its index points to, as
// helm does by default.
func WithCredentials(creds func(repoURL string) (Credentials, bool)) LoaderOption {
	return func(l *Loader) { l.credentials = creds }
}

// WithFetchTimeout bounds each fetch from a repository or registry: an
// index, a tag list or a chart archive, its body included. A fetch past
// it fails, and the failure is kept for the run like any other, so that a
// repository that accepts connections and never answers costs the run
// one timeout, not one per release. DefaultFetchTimeout without it.
func WithFetchTimeout(d time.Duration) LoaderOption {
	return func(l *Loader) {
		if d > 0 {
			l.timeout = d
		}
	}
}

// DefaultFetchTimeout is a Loader's fetch timeout without
// WithFetchTimeout: a chart archive or an index of tens of MiB arrives
// in seconds from any live repository.
const DefaultFetchTimeout = 30 * time.Second

// WithPlainHTTP lets the Loader talk plain HTTP to OCI registries on
// loopback addresses, as test registries are; any other registry is
// still reached over HTTPS.
func WithPlainHTTP() LoaderOption {
	return func(l *Loader) { l.plainHTTP = true }
}

// WithSecretsDir makes the Loader read the Secrets that a ChartRef's
// SecretRef and CertSecretRef name from dir, laid out as
// <dir>/<namespace>/<name>/<key>, one file per key, as a projected
// volume mounts them. Without it those refs are not read, and the
// credentials and CAs the loader was given serve every source.
func WithSecretsDir(dir string) LoaderOption {
	return func(l *Loader) { l.secretsDir = dir }
}

// Loader fetches charts from chart repositories and OCI registries for
// one run. It fetches each repository's index, each OCI chart's tag list
// and each chart version at most once, however many callers ask at the
// same time, and keeps them for the run. It is safe for concurrent use.
//
// Charts it returns are shared by every caller that asked for the same
// one, and must not be modified. Make a Loader with NewLoader.
type Loader struct {
	client      *http.Client
	credentials func(repoURL string) (Credentials, bool)
	plainHTTP   bool
	timeout     time.Duration
	secretsDir  string
	// dependencyHosts are the hosts chart directories' dependencies may
	// be fetched from.
	dependencyHosts []string

	indexes flight[string, *repo.IndexFile]
	tags    flight[string, []string]
	charts  flight[chartKey, *helm.Chart]
	// dependencies are chart directories' dependencies from chart
	// repositories, by the digest of the directory's files.
	dependencies flight[string, fetchedDependencies]
}

// chartKey identifies a chart version in a repository.
type chartKey struct{ repo, chart, version string }

// NewLoader returns a Loader for one run. Each fetch ends after its fetch
// timeout (WithFetchTimeout), whatever client sends it, so that a stalled
// server cannot hold the run.
func NewLoader(opts ...LoaderOption) *Loader {
	l := &Loader{client: &http.Client{}, timeout: DefaultFetchTimeout}
	for _, opt := range opts {
		opt(l)
	}
	return l
}

// Fetch returns the chart ref names, resolving its version against the
// repository's index or, in an OCI registry, the chart's tags. It wraps
// ErrChartNotFound when the repository has no such chart or no version
// matching, and ErrTooLarge when the archive or the index is over its
// limit. Errors never hold the credentials, nor the user part of the URL.
func (l *Loader) Fetch(ctx context.Context, ref ChartRef) (*helm.Chart, error) {
	c, err := l.fetch(ctx, ref)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, fmt.Errorf("fetch chart %s: %w", ref, err)
	}
	return c, nil
}

func (l *Loader) fetch(ctx context.Context, ref ChartRef) (*helm.Chart, error) {
	if ref.Chart == "" {
		return nil, errors.New("no chart named")
	}
	u, err := url.Parse(ref.RepoURL)
	if err != nil {
		// The parse error quotes the URL, credentials included.
		return nil, errors.New("the repository URL does not parse")
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch u.Scheme {
	case "http", "https":
		return l.fetchHTTP(ctx, ref, u)
	case registry.OCIScheme:
		return l.fetchOCI(ctx, ref, u)
	default:
		return nil, fmt.Errorf("the repository URL's scheme %q is none of http, https and oci", u.Scheme)
	}
}

// bounded is work within the loader's fetch timeout. Work cut short by
// it fails with ErrFetchTimeout, which flight keeps for the run, while
// work ended by its caller's context is forgotten, as flight forgets it.
func bounded[V any](l *Loader, work func(context.Context) (V, error)) func(context.Context) (V, error) {
	return func(ctx context.Context) (V, error) {
		fetchCtx, cancel := context.WithTimeoutCause(ctx, l.timeout, fmt.Errorf("%w of %s", ErrFetchTimeout, l.timeout))
		defer cancel()
		v, err := work(fetchCtx)
		// The HTTP client reports the cause itself; not every client does.
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(fetchCtx), ErrFetchTimeout) && !errors.Is(err, ErrFetchTimeout) {
			err = fmt.Errorf("%w: %w", context.Cause(fetchCtx), err)
		}
		return v, err
	}
}

// redacted is u without its user part.
func redacted(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// redactedRaw is a URL without its user part, also when it does not
// parse: everything between the scheme and the last @ before the path
// goes.
func redactedRaw(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	return scheme + "://" + authority + tail
}

// unwrapURLError drops the *url.Error around err: it quotes the URL with
// its user name.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
