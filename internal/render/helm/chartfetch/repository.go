package chartfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// fetchHTTP fetches a chart from a chart repository served over HTTP.
func (l *Loader) fetchHTTP(ctx context.Context, ref ChartRef, repoURL *url.URL) (*helm.Chart, error) {
	key := strings.TrimSuffix(repoURL.String(), "/") + ref.accessKey()
	idx, err := l.indexes.do(ctx, key, bounded(l, func(ctx context.Context) (*repo.IndexFile, error) {
		return l.fetchIndex(ctx, ref, repoURL)
	}))
	if err != nil {
		return nil, err
	}
	cv, err := resolveVersion(idx, ref)
	if err != nil {
		return nil, err
	}
	return l.charts.do(ctx, chartKey{key, ref.Chart, cv.Version}, bounded(l, func(ctx context.Context) (*helm.Chart, error) {
		return l.fetchArchive(ctx, ref, repoURL, cv)
	}))
}

// fetchIndex downloads and parses a repository's index.yaml.
func (l *Loader) fetchIndex(ctx context.Context, ref ChartRef, repoURL *url.URL) (*repo.IndexFile, error) {
	indexURL, err := resolveRef(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	data, err := l.get(ctx, ref, repoURL, indexURL, MaxIndexBytes)
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
func (l *Loader) fetchArchive(ctx context.Context, ref ChartRef, repoURL *url.URL, cv *repo.ChartVersion) (*helm.Chart, error) {
	chart := ref.Chart
	chartURL, err := resolveRef(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", chart, cv.Version, err)
	}
	data, err := l.get(ctx, ref, repoURL, chartURL, MaxChartArchiveBytes)
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
	return helm.NewLoadedChart(source, sum, c), nil
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
func (l *Loader) get(ctx context.Context, ref ChartRef, repoURL, target *url.URL, limit int64) ([]byte, error) {
	name := redacted(target)
	a, err := l.accessFor(ref, repoURL.Host)
	if err != nil {
		return nil, err
	}
	if ref.SecretRef.Name != "" && a.creds != nil && repoURL.Scheme != "https" && !ref.PlainHTTP {
		// A Secret's login crosses the network in the clear only when
		// its source says so: a source's URL alone is the repository's
		// author's, and may be anyone's server.
		return nil, fmt.Errorf("get %s: the login of the Secret %s/%s is not sent over plain HTTP: its source does not set spec.insecure",
			name, ref.SecretRef.Namespace, ref.SecretRef.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, unwrapURLError(err))
	}
	if target.Scheme == repoURL.Scheme && target.Host == repoURL.Host && a.creds != nil {
		req.SetBasicAuth(a.creds.Username, a.creds.Password)
	}
	resp, err := a.client.Do(req)
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
