package chartfetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// LoadDir loads a chart directory as the package's LoadDir does, and
// fetches the dependencies its Chart.yaml takes from chart repositories
// and its charts/ does not hold, as helm dependency build does: with
// Helm's dependency manager, at the versions its Chart.lock pins (the
// newest matching ones without it), each repository with the credentials
// the Loader has for it (helm-repository-config). What a chart directory
// fetched is kept for the run: the same files fetch once.
func (l *Loader) LoadDir(ctx context.Context, fsys fs.FS, dir string) (*helm.Chart, error) {
	return loadChart(fsys, dir, func(files []*archive.BufferedFile, c *chartv2.Chart) ([]*chartv2.Chart, string, error) {
		return l.remoteDependencies(ctx, files, c)
	})
}

// remoteFetch returns the dependencies of chart c (loaded from files) that
// chart repositories hold, and a digest of them; none when c has none.
type remoteFetch func(files []*archive.BufferedFile, c *chartv2.Chart) ([]*chartv2.Chart, string, error)

// fetchedDependencies are a chart directory's dependencies from chart
// repositories, as archives: each caller loads its own charts, as
// processing dependencies changes them.
type fetchedDependencies struct {
	archives [][]byte
	digest   string
}

// remoteDependencies fetches the dependencies of c from chart repositories
// that its charts/ does not hold, once per run for the same files.
func (l *Loader) remoteDependencies(ctx context.Context, files []*archive.BufferedFile, c *chartv2.Chart) ([]*chartv2.Chart, string, error) {
	wanted := remoteWanted(c)
	if len(wanted) == 0 {
		return nil, "", nil
	}
	for _, d := range wanted {
		if !l.dependencyHostAllowed(d.Repository) {
			return nil, "", fmt.Errorf("%w: chart %s takes the dependency %s from %s, whose host repository-fetch-hosts does not name; not fetched",
				ErrDependencyRefused, c.Name(), d.Name, d.Repository)
		}
	}
	got, err := l.dependencies.do(ctx, filesDigest(files), bounded(l, func(ctx context.Context) (fetchedDependencies, error) {
		return l.buildDependencies(ctx, c, wanted)
	}))
	if err != nil {
		return nil, "", fmt.Errorf("fetching the dependencies of %s: %w", c.Name(), err)
	}
	var out []*chartv2.Chart
	for _, data := range got.archives {
		dep, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, "", fmt.Errorf("loading a dependency of %s: %w", c.Name(), err)
		}
		out = append(out, dep)
	}
	return out, got.digest, nil
}

// ErrDependencyRefused means a chart directory of the repository takes a
// dependency from a chart repository whose host the run does not allow
// (WithDependencyHosts): a file of the repository does not choose where
// the job connects to.
var ErrDependencyRefused = errors.New("dependency not fetched")

// WithDependencyHosts names the hosts (host or host:port) from which the
// dependencies that chart directories of the repository declare may be
// fetched; without it, none is.
func WithDependencyHosts(hosts []string) LoaderOption {
	return func(l *Loader) { l.dependencyHosts = slices.Clone(hosts) }
}

// dependencyHostAllowed reports whether the host of a dependency's
// repository URL is one WithDependencyHosts names, with its port when it
// names one.
func (l *Loader) dependencyHostAllowed(repository string) bool {
	u, err := url.Parse(repository)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	for _, h := range l.dependencyHosts {
		if strings.EqualFold(h, u.Host) || !strings.Contains(h, ":") && strings.EqualFold(h, u.Hostname()) {
			return true
		}
	}
	return false
}

// remoteWanted are c's dependencies from an http(s) chart repository that
// its charts/ does not hold, at the version its Chart.lock pins when it
// pins one.
func remoteWanted(c *chartv2.Chart) []*chartv2.Dependency {
	var out []*chartv2.Dependency
	for _, d := range c.Metadata.Dependencies {
		if d == nil || !strings.HasPrefix(d.Repository, "http://") && !strings.HasPrefix(d.Repository, "https://") ||
			slices.ContainsFunc(c.Dependencies(), func(x *chartv2.Chart) bool { return x.Name() == d.Name }) {
			continue
		}
		want := &chartv2.Dependency{Name: d.Name, Version: d.Version, Repository: d.Repository}
		if c.Lock != nil {
			for _, locked := range c.Lock.Dependencies {
				if locked != nil && locked.Name == d.Name && locked.Repository == d.Repository {
					want.Version = locked.Version
				}
			}
		}
		out = append(out, want)
	}
	return out
}

// buildDependencies runs Helm's dependency manager in a directory of its
// own on a chart that declares only wanted, with a repositories file of
// their repositories alone and the Loader's credentials for them: the
// manager reaches no other repository, and file:// dependencies, which
// loadDir reads from the repository, never reach it.
func (l *Loader) buildDependencies(ctx context.Context, c *chartv2.Chart, wanted []*chartv2.Dependency) (fetchedDependencies, error) {
	dir, err := os.MkdirTemp("", "recommend-job-dependencies-")
	if err != nil {
		return fetchedDependencies{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary copy
	chartDir := filepath.Join(dir, "chart")
	if err := os.Mkdir(chartDir, 0o700); err != nil {
		return fetchedDependencies{}, err
	}
	meta, err := yaml.Marshal(chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: c.Name(), Version: c.Metadata.Version, Dependencies: wanted})
	if err != nil {
		return fetchedDependencies{}, err
	}
	if err := os.WriteFile(filepath.Join(chartDir, "Chart.yaml"), meta, 0o600); err != nil {
		return fetchedDependencies{}, err
	}
	repos := repo.NewFile()
	for _, d := range wanted {
		if repos.Has(repoName(d.Repository)) {
			continue
		}
		entry := &repo.Entry{Name: repoName(d.Repository), URL: d.Repository}
		if l.credentials != nil {
			if creds, ok := l.credentials(d.Repository); ok {
				entry.Username, entry.Password = creds.Username, creds.Password
			}
		}
		repos.Add(entry)
	}
	reposFile := filepath.Join(dir, "repositories.yaml")
	if err := repos.WriteFile(reposFile, 0o600); err != nil {
		return fetchedDependencies{}, err
	}
	timeout := l.timeout
	if deadline, ok := ctx.Deadline(); ok {
		if timeout = min(timeout, time.Until(deadline)); timeout <= 0 {
			return fetchedDependencies{}, context.Cause(ctx)
		}
	}
	m := &downloader.Manager{
		Out:              io.Discard,
		ChartPath:        chartDir,
		RepositoryConfig: reposFile,
		RepositoryCache:  filepath.Join(dir, "cache"),
		ContentCache:     filepath.Join(dir, "content"),
		Getters: getter.Providers{{Schemes: []string{"http", "https"}, New: func(opts ...getter.Option) (getter.Getter, error) {
			// Each request ends within the fetch timeout: the manager
			// takes no context.
			return getter.NewHTTPGetter(append(opts, getter.WithTimeout(timeout))...)
		}}},
	}
	if err := m.Update(); err != nil {
		return fetchedDependencies{}, fmt.Errorf("helm's dependency manager: %w", err)
	}
	archives, err := filepath.Glob(filepath.Join(chartDir, "charts", "*.tgz"))
	if err != nil {
		return fetchedDependencies{}, err
	}
	sort.Strings(archives)
	var out fetchedDependencies
	sum := sha256.New()
	for _, name := range archives {
		data, err := readBounded(name, MaxChartArchiveBytes)
		if err != nil {
			return fetchedDependencies{}, err
		}
		out.archives = append(out.archives, data)
		sum.Write([]byte(filepath.Base(name) + "\x00" + sha256Hex(data) + "\x00"))
	}
	out.digest = hex.EncodeToString(sum.Sum(nil))
	return out, nil
}

// repoName is the name the repositories file gives a dependency's
// repository.
func repoName(url string) string { return "dependency-" + sha256Hex([]byte(url))[:16] }

// readBounded reads a file of at most limit bytes.
func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d MiB", ErrTooLarge, filepath.Base(name), limit>>20)
	}
	return data, nil
}
