package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

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
