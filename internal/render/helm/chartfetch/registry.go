package chartfetch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// fetchOCI fetches a chart from an OCI registry: the chart is
// <registry path>/<chart>:<tag>, the tag being the chart's version as
// helm push writes it, or that version with a v before it, as some
// projects publish their charts.
func (l *Loader) fetchOCI(ctx context.Context, ref ChartRef, u *url.URL) (*helm.Chart, error) {
	if u.User != nil {
		return nil, errors.New("an oci:// URL cannot carry credentials: give them with the loader's credentials")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("an oci:// URL cannot have a query or a fragment")
	}
	repoPath := u.Host + strings.TrimSuffix(u.Path, "/") + "/" + ref.Chart
	switch {
	case ref.Digest != "":
		if !digestPattern.MatchString(ref.Digest) {
			return nil, fmt.Errorf("the digest %q is not sha256: and 64 hexadecimal digits", ref.Digest)
		}
		return l.pullTag(ctx, ref, u, repoPath, ref.Digest)
	case ref.Tag != "":
		return l.pullTag(ctx, ref, u, repoPath, ref.Tag)
	}
	if _, err := semver.StrictNewVersion(ref.Version); err != nil {
		tag, err := l.resolveTag(ctx, ref, u, repoPath)
		if err != nil {
			return nil, err
		}
		return l.pullTag(ctx, ref, u, repoPath, tag)
	}
	// An exact version is pulled without listing the tags, as it nearly
	// always is a tag; only when it is not are the tags asked whether the
	// chart is published under the version with a v.
	c, err := l.pullTag(ctx, ref, u, repoPath, ref.Version)
	if err == nil || !errors.Is(err, ErrChartNotFound) {
		return c, err
	}
	tags, tagsErr := l.listTags(ctx, ref, u, repoPath)
	if tagsErr != nil || !slices.Contains(tags, "v"+ref.Version) {
		return nil, err
	}
	return l.pullTag(ctx, ref, u, repoPath, "v"+ref.Version)
}

// digestPattern is a manifest digest as Flux accepts it in spec.ref.digest.
var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// pullTag pulls the chart tagged tag (or the manifest of a digest) once
// for the run: as helm pulls it, or as source-controller pulls an
// artifact when ref asks for a tag, a digest or a layer as an
// OCIRepository does.
func (l *Loader) pullTag(ctx context.Context, ref ChartRef, u *url.URL, repoPath, tag string) (*helm.Chart, error) {
	key := chartKey{registry.OCIScheme + "://" + repoPath + ref.accessKey(), ref.Layer.MediaType + " " + ref.Layer.Operation, tag}
	return l.charts.do(ctx, key, bounded(l, func(ctx context.Context) (*helm.Chart, error) {
		if ref.Tag == "" && ref.Digest == "" && ref.Layer == (LayerSelector{}) {
			return l.pullOCI(ctx, ref, u, repoPath, tag)
		}
		return l.pullArtifact(ctx, ref, u, repoPath, tag)
	}))
}

// pullArtifact pulls the manifest reference names (a tag or a digest),
// checks it against the digest asked, selects the layer that ref's
// LayerSelector names (the first without one) and loads it as a chart
// archive, as source-controller and helm-controller read an
// OCIRepository holding a chart.
func (l *Loader) pullArtifact(ctx context.Context, ref ChartRef, u *url.URL, repoPath, reference string) (*helm.Chart, error) {
	op := cmp.Or(ref.Layer.Operation, "extract")
	if op != "extract" && op != "copy" {
		return nil, fmt.Errorf("the layer selector's operation %q is neither extract nor copy", ref.Layer.Operation)
	}
	repository, err := remote.NewRepository(repoPath)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", repoPath, err)
	}
	repository.Client, repository.PlainHTTP, err = l.registryAuth(ctx, ref, u)
	if err != nil {
		return nil, err
	}
	name := repoPath + ":" + reference
	if ref.Digest != "" {
		name = repoPath + "@" + reference
	}
	desc, rc, err := repository.Manifests().FetchReference(ctx, reference)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", name, ociError(err))
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", name, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("pull %s: %w: a manifest of more than %d KiB", name, ErrTooLarge, maxManifestBytes>>10)
	}
	// The registry's word is not taken for it: the manifest's bytes must
	// hash to the digest asked.
	if got := "sha256:" + sha256Hex(data); ref.Digest != "" && got != ref.Digest {
		return nil, fmt.Errorf("pull %s: the manifest's digest is %s, not the one asked", name, got)
	}
	var manifest struct {
		MediaType string               `json:"mediaType"`
		Layers    []ocispec.Descriptor `json:"layers"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return nil, fmt.Errorf("pull %s: the manifest does not parse: %w", name, err)
	}
	if len(manifest.Layers) == 0 {
		return nil, fmt.Errorf("pull %s: %s is no image manifest with layers", name, cmp.Or(manifest.MediaType, desc.MediaType))
	}
	layer := manifest.Layers[0]
	if ref.Layer.MediaType != "" {
		i := slices.IndexFunc(manifest.Layers, func(d ocispec.Descriptor) bool { return d.MediaType == ref.Layer.MediaType })
		if i < 0 {
			return nil, fmt.Errorf("pull %s: %w: no layer of media type %s", name, ErrChartNotFound, ref.Layer.MediaType)
		}
		layer = manifest.Layers[i]
	}
	if layer.Size > MaxChartArchiveBytes {
		return nil, fmt.Errorf("pull %s: %w: a layer of %d bytes, more than %d MiB", name, ErrTooLarge, layer.Size, MaxChartArchiveBytes>>20)
	}
	blob, err := content.FetchAll(ctx, repository.Blobs(), layer)
	if err != nil {
		return nil, fmt.Errorf("pull %s: layer %s: %w", name, layer.Digest, ociError(err))
	}
	// extract unpacks a tar+gzip layer; a chart archive is one, and helm
	// loads the chart from it as helm-controller does from the artifact.
	// copy takes the layer as it is, which must be a chart archive too.
	if op == "extract" && !bytes.HasPrefix(blob, []byte{0x1f, 0x8b}) {
		return nil, fmt.Errorf("pull %s: layer %s of media type %s is not tar+gzip, which extract needs", name, layer.Digest, layer.MediaType)
	}
	c, err := loader.LoadArchive(bytes.NewReader(blob))
	if err != nil {
		return nil, fmt.Errorf("load %s: layer %s: %w", name, layer.Digest, err)
	}
	source := registry.OCIScheme + "://" + name
	return helm.NewLoadedChart(source, sha256Hex(blob), c), nil
}

// maxManifestBytes bounds a manifest read: a chart's has a few layers.
const maxManifestBytes = 4 << 20

// resolveTag finds the tag of the chart's OCI repository that ref's
// version names: a tag equal to it, or to it with a v before it, else
// the tag of the newest version that matches it as a semver constraint
// ("" matching every stable version).
func (l *Loader) resolveTag(ctx context.Context, ref ChartRef, u *url.URL, repoPath string) (string, error) {
	if err := checkConstraint(ref.Version); err != nil {
		return "", err
	}
	tags, err := l.listTags(ctx, ref, u, repoPath)
	if err != nil {
		return "", err
	}
	tag, ok := matchTag(tags, ref.Version)
	if !ok {
		return "", fmt.Errorf("%w: no tag of %s matches %s", ErrChartNotFound, repoPath, versionText(ref.Version))
	}
	return tag, nil
}

// listTags lists the tags of the chart's OCI repository once for the
// run, each as published but for the _ that helm push writes for a +,
// given back: 1.0.0+build.7, v1.21.1.
//
// Helm's registry client is not asked: it drops the tags that are not
// strict semver, v1.21.1 among them, and writes the others as their
// version, which loses the v the chart has to be pulled with.
func (l *Loader) listTags(ctx context.Context, ref ChartRef, u *url.URL, repoPath string) ([]string, error) {
	return l.tags.do(ctx, repoPath+ref.accessKey(), bounded(l, func(ctx context.Context) ([]string, error) {
		repository, err := remote.NewRepository(repoPath)
		if err != nil {
			return nil, fmt.Errorf("list the tags of %s: %w", repoPath, err)
		}
		repository.Client, repository.PlainHTTP, err = l.registryAuth(ctx, ref, u)
		if err != nil {
			return nil, err
		}
		repository.TagListMaxPages = maxTagPages
		var tags []string
		err = repository.Tags(ctx, "", func(page []string) error {
			for _, t := range page {
				tags = append(tags, strings.ReplaceAll(t, "_", "+"))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list the tags of %s: %w", repoPath, ociError(err))
		}
		return tags, nil
	}))
}

// maxTagPages bounds the pages of a tag list read: registries answer
// with pages of a hundred tags or more, and a chart has far fewer
// versions than this allows.
const maxTagPages = 100

// matchTag picks the tag version names among tags: one equal to version,
// or to version with a v before it, else the newest whose version
// matches version as a constraint, "" matching every stable version. A
// tag's version is the tag read as strict semver, a v before it allowed,
// as Flux reads the tags of an OCI repository; tags that are no version
// are passed over. Of two tags of the same version, v1.2.0 and 1.2.0,
// the one without v is taken, as helm push writes it.
func matchTag(tags []string, version string) (string, bool) {
	if version != "" {
		for _, want := range []string{version, "v" + version} {
			if slices.Contains(tags, want) {
				return want, true
			}
		}
	}
	constraint, err := semver.NewConstraint(cmp.Or(version, "*"))
	if err != nil {
		return "", false
	}
	var best string
	var bestVersion *semver.Version
	for _, tag := range tags {
		v, ok := tagVersion(tag)
		if !ok || !constraint.Check(v) {
			continue
		}
		if bestVersion == nil || v.GreaterThan(bestVersion) ||
			(v.Equal(bestVersion) && strings.HasPrefix(best, "v") && !strings.HasPrefix(tag, "v")) {
			best, bestVersion = tag, v
		}
	}
	return best, bestVersion != nil
}

// tagVersion reads a tag as a chart version: strict semver, with or
// without a v before it.
func tagVersion(tag string) (*semver.Version, bool) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(tag, "v"))
	return v, err == nil
}

// pullOCI pulls the chart tagged tag and loads it.
func (l *Loader) pullOCI(ctx context.Context, ref ChartRef, u *url.URL, repoPath, tag string) (*helm.Chart, error) {
	client, err := l.registryClient(ctx, ref, u)
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
	return helm.NewLoadedChart(source, sha256Hex(res.Chart.Data), c), nil
}

// registryClient returns a helm registry client whose every request
// carries ctx (the client itself has none to give) and whose every
// response is bounded by MaxChartArchiveBytes. It uses the loader's
// credentials only, never a docker or helm login of the machine.
func (l *Loader) registryClient(ctx context.Context, ref ChartRef, u *url.URL) (*registry.Client, error) {
	authorizer, plainHTTP, err := l.registryAuth(ctx, ref, u)
	if err != nil {
		return nil, err
	}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(authorizer.Client), registry.ClientOptAuthorizer(*authorizer)}
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return client, nil
}

// registryAuth returns the client that talks to the registry of u: its
// every request carries ctx, its every response is bounded by
// MaxChartArchiveBytes, and it logs in with the source's secretRef or
// the loader's credentials only, never a docker or helm login of the
// machine. plainHTTP says whether the registry is spoken to over plain
// HTTP: when the source declares it insecure, or WithPlainHTTP allows it
// for loopback.
func (l *Loader) registryAuth(ctx context.Context, ref ChartRef, u *url.URL) (authorizer *auth.Client, plainHTTP bool, err error) {
	a, err := l.accessFor(ref, u.Host)
	if err != nil {
		return nil, false, err
	}
	hc := *a.client
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &contextTransport{ctx: ctx, base: base, limit: MaxChartArchiveBytes}
	authorizer = &auth.Client{Client: &hc, Cache: auth.NewCache()}
	authorizer.Credential = func(context.Context, string) (auth.Credential, error) { return auth.EmptyCredential, nil }
	if a.creds != nil {
		authorizer.Credential = auth.StaticCredential(u.Host, auth.Credential{Username: a.creds.Username, Password: a.creds.Password})
	}
	return authorizer, ref.PlainHTTP || l.plainHTTP && isLoopback(u.Hostname()), nil
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
