package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"sigs.k8s.io/yaml"
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

// LoadDir loads the chart in directory dir of fsys, as helm would load
// it from disk: .helmignore is honoured, and subcharts under charts/,
// directories or .tgz archives, are loaded with it. dir is slash-separated
// and relative to fsys, which callers get from an os.Root of the
// repository so that links cannot lead out of it. At most
// MaxChartDirBytes are read.
//
// The chart's Source is dir. Its Digest is the hex sha256 of its file
// names and contents, in name order.
func LoadDir(fsys fs.FS, dir string) (*Chart, error) {
	if !fs.ValidPath(dir) {
		return nil, fmt.Errorf("load chart directory %q: not a slash-separated relative path", dir)
	}
	files, err := readChartDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load chart directory %s: %w", dir, err)
	}
	digest := filesDigest(files)
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart directory %s: %w", dir, err)
	}
	return &Chart{Name: c.Metadata.Name, Version: c.Metadata.Version, Source: dir, Digest: digest, chart: c}, nil
}

// utf8BOM is dropped from the start of files, as helm does.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readChartDir reads the files of the chart directory dir that
// .helmignore keeps, named relative to dir, within MaxChartDirBytes.
func readChartDir(fsys fs.FS, dir string) ([]*archive.BufferedFile, error) {
	info, err := fs.Stat(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, errors.New("not a directory")
	}
	rules, err := readIgnoreRules(fsys, dir)
	if err != nil {
		return nil, err
	}

	budget := &byteBudget{left: MaxChartDirBytes}
	var files []*archive.BufferedFile
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		name := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			name = p
		}
		info, err := fs.Stat(fsys, p) // follows a link, as helm does
		if err != nil {
			return err
		}
		if rules.Ignore(name, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case info.IsDir():
			return fmt.Errorf("%s: a link to a directory is not supported", name)
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file", name)
		}
		data, err := budget.read(fsys, p, info.Size())
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		data = bytes.TrimPrefix(data, utf8BOM)
		files = append(files, &archive.BufferedFile{Name: name, ModTime: info.ModTime(), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// readIgnoreRules returns the rules of dir's .helmignore, if any, and
// helm's defaults.
func readIgnoreRules(fsys fs.FS, dir string) (*ignore.Rules, error) {
	rules := ignore.Empty()
	budget := &byteBudget{left: MaxChartDirBytes}
	data, err := budget.read(fsys, path.Join(dir, ignore.HelmIgnore), -1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", ignore.HelmIgnore, err)
	default:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("parse %s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// byteBudget is what is left to read of a chart directory.
type byteBudget struct{ left int64 }

// read reads file p of fsys and takes its length from the budget. size
// is what the file says it holds, or -1; the budget is checked on what is
// actually read too, as a file can grow.
func (b *byteBudget) read(fsys fs.FS, p string, size int64) ([]byte, error) {
	if size > b.left {
		return nil, b.exceeded()
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	data, err := io.ReadAll(io.LimitReader(f, b.left+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > b.left {
		return nil, b.exceeded()
	}
	b.left -= int64(len(data))
	return data, nil
}

func (b *byteBudget) exceeded() error {
	return fmt.Errorf("%w: the chart's files hold more than %d MiB", ErrTooLarge, MaxChartDirBytes>>20)
}

// filesDigest is the hex sha256 of the files in name order, each name
// and length written before its content so that no two sets of files
// give the same stream.
func filesDigest(files []*archive.BufferedFile) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b *archive.BufferedFile) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

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
	// or "" for the latest stable version.
	Version string
}

// String names the chart for messages: the repository URL without its
// user part, the chart and the version asked.
func (r ChartRef) String() string {
	v := r.Version
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

// WithPlainHTTP lets the Loader talk plain HTTP to OCI registries on
// loopback addresses, as test registries are; any other registry is
// still reached over HTTPS.
func WithPlainHTTP() LoaderOption {
	return func(l *Loader) { l.plainHTTP = true }
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

	indexes flight[string, *repo.IndexFile]
	tags    flight[string, []string]
	charts  flight[chartKey, *Chart]
}

// chartKey identifies a chart version in a repository.
type chartKey struct{ repo, chart, version string }

// NewLoader returns a Loader for one run. Without WithHTTPClient its
// requests time out after five minutes, so that a stalled server cannot
// hold the run.
func NewLoader(opts ...LoaderOption) *Loader {
	l := &Loader{client: &http.Client{Timeout: 5 * time.Minute}}
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
func (l *Loader) Fetch(ctx context.Context, ref ChartRef) (*Chart, error) {
	c, err := l.fetch(ctx, ref)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, fmt.Errorf("fetch chart %s: %w", ref, err)
	}
	return c, nil
}

func (l *Loader) fetch(ctx context.Context, ref ChartRef) (*Chart, error) {
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

// fetchHTTP fetches a chart from a chart repository served over HTTP.
func (l *Loader) fetchHTTP(ctx context.Context, ref ChartRef, repoURL *url.URL) (*Chart, error) {
	key := strings.TrimSuffix(repoURL.String(), "/")
	idx, err := l.indexes.do(ctx, key, func(ctx context.Context) (*repo.IndexFile, error) {
		return l.fetchIndex(ctx, ref.RepoURL, repoURL)
	})
	if err != nil {
		return nil, err
	}
	cv, err := resolveVersion(idx, ref)
	if err != nil {
		return nil, err
	}
	return l.charts.do(ctx, chartKey{key, ref.Chart, cv.Version}, func(ctx context.Context) (*Chart, error) {
		return l.fetchArchive(ctx, ref.RepoURL, repoURL, ref.Chart, cv)
	})
}

// fetchIndex downloads and parses a repository's index.yaml.
func (l *Loader) fetchIndex(ctx context.Context, rawRepoURL string, repoURL *url.URL) (*repo.IndexFile, error) {
	indexURL, err := resolveRef(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	data, err := l.get(ctx, rawRepoURL, repoURL, indexURL, MaxIndexBytes)
	if err != nil {
		return nil, err
	}
	idx, err := parseIndex(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", redacted(indexURL), err)
	}
	return idx, nil
}

// parseIndex parses an index.yaml, YAML or JSON, as helm's
// repo.LoadIndexFile does with a file: entries that are empty or fail
// validation are dropped, and each chart's versions are sorted newest
// first, which IndexFile.Get relies on. Unknown fields are allowed, as
// repositories other than helm's write some.
func parseIndex(data []byte) (*repo.IndexFile, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, repo.ErrEmptyIndexYaml
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(data, idx); err != nil {
		return nil, err
	}
	if idx.APIVersion == "" {
		return nil, repo.ErrNoAPIVersion
	}
	for name, versions := range idx.Entries {
		idx.Entries[name] = slices.DeleteFunc(versions, func(v *repo.ChartVersion) bool {
			if v == nil || v.Metadata == nil {
				return true
			}
			if v.APIVersion == "" {
				v.APIVersion = chartv2.APIVersionV1
			}
			return v.Validate() != nil
		})
	}
	idx.SortEntries()
	return idx, nil
}

// resolveVersion finds the version of the chart that ref asks for in idx.
func resolveVersion(idx *repo.IndexFile, ref ChartRef) (*repo.ChartVersion, error) {
	if err := checkConstraint(ref.Version); err != nil {
		return nil, err
	}
	cv, err := idx.Get(ref.Chart, ref.Version)
	switch {
	case errors.Is(err, repo.ErrNoChartName):
		return nil, fmt.Errorf("%w: the repository's index has no chart %q", ErrChartNotFound, ref.Chart)
	case err != nil:
		return nil, fmt.Errorf("%w: the repository's index has no version of %s matching %s", ErrChartNotFound, ref.Chart, versionText(ref.Version))
	case len(cv.URLs) == 0:
		return nil, fmt.Errorf("the repository's index has no download URL for %s %s", ref.Chart, cv.Version)
	}
	return cv, nil
}

// checkConstraint refuses a version that is neither a version nor a
// semver constraint, which would otherwise read as "not found".
func checkConstraint(version string) error {
	if version == "" {
		return nil
	}
	if _, err := semver.NewConstraint(version); err != nil {
		return fmt.Errorf("version %q is neither a version nor a semver constraint: %w", version, err)
	}
	return nil
}

// versionText names a version asked for in messages.
func versionText(version string) string {
	if version == "" {
		return `"" (the latest stable version)`
	}
	return fmt.Sprintf("%q", version)
}

// fetchArchive downloads the archive of chart version cv, checks it
// against the index's digest and loads it.
func (l *Loader) fetchArchive(ctx context.Context, rawRepoURL string, repoURL *url.URL, chart string, cv *repo.ChartVersion) (*Chart, error) {
	chartURL, err := resolveRef(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", chart, cv.Version, err)
	}
	data, err := l.get(ctx, rawRepoURL, repoURL, chartURL, MaxChartArchiveBytes)
	if err != nil {
		return nil, err
	}
	sum := sha256Hex(data)
	if want := strings.TrimPrefix(cv.Digest, "sha256:"); want != "" && !strings.EqualFold(want, sum) {
		return nil, fmt.Errorf("%s: the archive's sha256 is %s, the index says %s", redacted(chartURL), sum, want)
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", redacted(chartURL), err)
	}
	source := redacted(repoURL) + " " + chart + " " + cv.Version
	return &Chart{Name: c.Metadata.Name, Version: c.Metadata.Version, Source: source, Digest: sum, chart: c}, nil
}

// resolveRef resolves ref, absolute or relative to the repository URL,
// as helm resolves the URLs of an index.
func resolveRef(repoURL *url.URL, ref string) (*url.URL, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("the index's URL %q does not parse", redactedRaw(ref))
	}
	if r.IsAbs() {
		return r, nil
	}
	base := *repoURL
	base.Path = strings.TrimSuffix(base.Path, "/") + "/"
	base.RawPath = ""
	resolved := base.ResolveReference(r)
	resolved.RawQuery = repoURL.RawQuery // a repository's token query is kept, as helm keeps it
	return resolved, nil
}

// get downloads target, at most limit bytes. The repository's
// credentials go along only when target is on the repository's host.
func (l *Loader) get(ctx context.Context, rawRepoURL string, repoURL, target *url.URL, limit int64) ([]byte, error) {
	name := redacted(target)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, unwrapURLError(err))
	}
	if target.Scheme == repoURL.Scheme && target.Host == repoURL.Host && l.credentials != nil {
		if c, ok := l.credentials(rawRepoURL); ok {
			req.SetBasicAuth(c.Username, c.Password)
		}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, unwrapURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("get %s: %w: the server answers %s", name, ErrChartNotFound, resp.Status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("get %s: access refused (%s): the repository's credentials are missing or wrong", name, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("get %s: unexpected status %s", name, resp.Status)
	case resp.ContentLength > limit:
		return nil, fmt.Errorf("get %s: %w: %d bytes, more than %d MiB", name, ErrTooLarge, resp.ContentLength, limit>>20)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("get %s: %w: more than %d MiB", name, ErrTooLarge, limit>>20)
	}
	return data, nil
}

// fetchOCI fetches a chart from an OCI registry: the chart is
// <registry path>/<chart>:<version>.
func (l *Loader) fetchOCI(ctx context.Context, ref ChartRef, u *url.URL) (*Chart, error) {
	if u.User != nil {
		return nil, errors.New("an oci:// URL cannot carry credentials: give them with the loader's credentials")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("an oci:// URL cannot have a query or a fragment")
	}
	repoPath := u.Host + strings.TrimSuffix(u.Path, "/") + "/" + ref.Chart
	tag := ref.Version
	if _, err := semver.StrictNewVersion(ref.Version); err != nil {
		if tag, err = l.resolveTag(ctx, ref, u, repoPath); err != nil {
			return nil, err
		}
	}
	return l.charts.do(ctx, chartKey{registry.OCIScheme + "://" + repoPath, "", tag}, func(ctx context.Context) (*Chart, error) {
		return l.pullOCI(ctx, ref, u, repoPath, tag)
	})
}

// resolveTag finds the newest tag of the chart's OCI repository that
// matches ref's version constraint.
func (l *Loader) resolveTag(ctx context.Context, ref ChartRef, u *url.URL, repoPath string) (string, error) {
	if err := checkConstraint(ref.Version); err != nil {
		return "", err
	}
	tags, err := l.tags.do(ctx, repoPath, func(ctx context.Context) ([]string, error) {
		client, err := l.registryClient(ctx, ref.RepoURL, u)
		if err != nil {
			return nil, err
		}
		tags, err := client.Tags(repoPath)
		if err != nil {
			return nil, fmt.Errorf("list the tags of %s: %w", repoPath, ociError(err))
		}
		return tags, nil
	})
	if err != nil {
		return "", err
	}
	tag, err := registry.GetTagMatchingVersionOrConstraint(tags, ref.Version)
	if err != nil {
		return "", fmt.Errorf("%w: no tag of %s matches %s", ErrChartNotFound, repoPath, versionText(ref.Version))
	}
	return tag, nil
}

// pullOCI pulls the chart tagged tag and loads it.
func (l *Loader) pullOCI(ctx context.Context, ref ChartRef, u *url.URL, repoPath, tag string) (*Chart, error) {
	client, err := l.registryClient(ctx, ref.RepoURL, u)
	if err != nil {
		return nil, err
	}
	name := repoPath + ":" + tag
	res, err := client.Pull(name, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", name, ociError(err))
	}
	c, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	source := registry.OCIScheme + "://" + name
	return &Chart{Name: c.Metadata.Name, Version: c.Metadata.Version, Source: source, Digest: sha256Hex(res.Chart.Data), chart: c}, nil
}

// registryClient returns a helm registry client whose every request
// carries ctx (the client itself has none to give) and whose every
// response is bounded by MaxChartArchiveBytes. It uses the loader's
// credentials only, never a docker or helm login of the machine.
func (l *Loader) registryClient(ctx context.Context, rawRepoURL string, u *url.URL) (*registry.Client, error) {
	hc := *l.client
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &contextTransport{ctx: ctx, base: base, limit: MaxChartArchiveBytes}
	authorizer := auth.Client{Client: &hc, Cache: auth.NewCache()}
	authorizer.Credential = func(context.Context, string) (auth.Credential, error) { return auth.EmptyCredential, nil }
	if l.credentials != nil {
		if c, ok := l.credentials(rawRepoURL); ok {
			authorizer.Credential = auth.StaticCredential(u.Host, auth.Credential{Username: c.Username, Password: c.Password})
		}
	}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(&hc), registry.ClientOptAuthorizer(authorizer)}
	if l.plainHTTP && isLoopback(u.Hostname()) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return client, nil
}

// ociError says what an OCI registry's refusal means: a missing chart
// or tag is ErrChartNotFound, a refused login a credentials problem.
func ociError(err error) error {
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrChartNotFound, err)
	case errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrChartNotFound, err)
	case errors.Is(err, auth.ErrBasicCredentialNotFound),
		errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return fmt.Errorf("access refused: the registry's credentials are missing or wrong: %w", err)
	}
	return err
}

// contextTransport gives every request ctx, and bounds every response
// body by limit.
type contextTransport struct {
	ctx   context.Context
	base  http.RoundTripper
	limit int64
}

func (t *contextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req.WithContext(t.ctx))
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answers %d bytes, more than %d MiB", ErrTooLarge, req.URL.Redacted(), resp.ContentLength, t.limit>>20)
	}
	resp.Body = &limitedBody{body: resp.Body, left: t.limit}
	return resp, nil
}

// limitedBody fails a read past its limit.
type limitedBody struct {
	body io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: a response holds more than %d MiB", ErrTooLarge, MaxChartArchiveBytes>>20)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: a response holds more than %d MiB", ErrTooLarge, MaxChartArchiveBytes>>20)
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

// flight runs the work for each key once and hands its result to every
// caller, then and later: the run's cache of indexes, tag lists and
// charts. Work ended by its caller's context is forgotten, so the next
// caller runs it again, and callers that waited for it retry.
type flight[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{}
	val  V
	err  error
	// abandoned means the work ended with its caller's context, or
	// panicked, and says nothing about the key.
	abandoned bool
}

func (f *flight[K, V]) do(ctx context.Context, key K, work func(context.Context) (V, error)) (V, error) {
	for {
		f.mu.Lock()
		if f.calls == nil {
			f.calls = map[K]*flightCall[V]{}
		}
		c, ok := f.calls[key]
		if !ok {
			c = &flightCall[V]{done: make(chan struct{})}
			f.calls[key] = c
			f.mu.Unlock()
			f.run(ctx, key, c, work)
			return c.val, c.err
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		case <-c.done:
		}
		if !c.abandoned {
			return c.val, c.err
		}
	}
}

func (f *flight[K, V]) run(ctx context.Context, key K, c *flightCall[V], work func(context.Context) (V, error)) {
	finished := false
	defer func() {
		if !finished || (c.err != nil && ctx.Err() != nil) {
			c.abandoned = true
			f.mu.Lock()
			delete(f.calls, key)
			f.mu.Unlock()
		}
		close(c.done)
	}()
	c.val, c.err = work(ctx)
	finished = true
}
