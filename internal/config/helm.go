package config

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"strings"

	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
)

// chartCredentials are the basic-auth credentials of chart repositories
// and OCI registries, by repository URL. Config holds them behind a
// pointer, which fmt prints as an address, so that printing a Config
// cannot show a password.
type chartCredentials struct {
	byURL map[string]chartfetch.Credentials
}

// completeHelm reads helm-repository-config, so that a file that cannot
// be read or parsed fails the run before it starts.
func (c *Config) completeHelm() []error {
	var errs []error
	if c.ChartCAFile != "" {
		pool, err := loadChartCAs(c.ChartCAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("chart-ca-file: %w", err))
		}
		c.chartCAs = pool
	}
	if c.ChartSecretsDir != "" {
		if fi, err := os.Stat(c.ChartSecretsDir); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("chart-secrets-dir: %s is not a directory", c.ChartSecretsDir))
		}
	}
	for _, h := range c.RepositoryFetchHosts {
		if u, err := url.Parse("//" + h); err != nil || h == "" || u.Host != h || u.User != nil {
			errs = append(errs, fmt.Errorf("repository-fetch-hosts: %q is not a host or host:port", h))
		}
	}
	if c.HelmRepositoryConfig == "" {
		return errs
	}
	creds, err := loadChartCredentials(c.HelmRepositoryConfig)
	if err != nil {
		return append(errs, fmt.Errorf("helm-repository-config: %w", err))
	}
	c.chartCredentials = creds
	return errs
}

// loadChartCAs returns the system's CAs with those of file added: a
// private CA is trusted besides them, never instead of them.
func loadChartCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}

// loadChartCredentials reads a Helm repositories file (the
// repositories.yaml that helm repo add writes) and keeps the user name and
// password of each entry that has one, by its URL; the other fields (TLS
// files, pass_credentials_all) are not used. Errors name the file and the
// entry, never a password nor a URL, which may hold one.
func loadChartCredentials(file string) (*chartCredentials, error) {
	f, err := repo.LoadFile(file)
	if err != nil {
		if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
			return nil, pathErr
		}
		return nil, fmt.Errorf("%s: not a Helm repositories file: %s", file, parseProblem(err))
	}
	creds := &chartCredentials{byURL: map[string]chartfetch.Credentials{}}
	owner := map[string]string{}
	for i, e := range f.Repositories {
		if e == nil {
			continue
		}
		name := e.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		if e.URL == "" {
			return nil, fmt.Errorf("%s: repository %q: no url", file, name)
		}
		if err := checkURL(e.URL, "http", "https", "oci"); err != nil {
			return nil, fmt.Errorf("%s: repository %q: url: %w", file, name, err)
		}
		if e.Username == "" && e.Password == "" {
			continue
		}
		key, _ := repositoryKey(e.URL)
		c := chartfetch.Credentials{Username: e.Username, Password: e.Password}
		if prev, ok := creds.byURL[key]; ok && prev != c {
			return nil, fmt.Errorf("%s: repositories %q and %q have the same url and different credentials", file, owner[key], name)
		}
		creds.byURL[key], owner[key] = c, name
	}
	return creds, nil
}

// yamlLine is where a YAML parser's message says the problem is.
var yamlLine = regexp.MustCompile(`\bline [0-9]+\b`)

// parseProblem says what is wrong with a repositories file without
// quoting it: the YAML parser's messages may quote the file's content
// (an unknown anchor, a map used as a key), which may be a password.
func parseProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("%s must be a %s, not a %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	if line := yamlLine.FindString(err.Error()); line != "" {
		return "invalid YAML at " + line
	}
	return "invalid YAML"
}

// lookup gives the credentials of the repository at repoURL, as
// chartfetch.WithCredentials asks for them; none when no file was given.
func (c *chartCredentials) lookup(repoURL string) (chartfetch.Credentials, bool) {
	if c == nil {
		return chartfetch.Credentials{}, false
	}
	key, ok := repositoryKey(repoURL)
	if !ok {
		return chartfetch.Credentials{}, false
	}
	creds, ok := c.byURL[key]
	return creds, ok
}

// repositoryKey is what two spellings of a repository URL share: the
// scheme and host in lower case and the path without its trailing
// slashes; a user part, query and fragment are left out. A HelmRepository
// or an Application may write https://charts.example.com/ where helm repo
// add wrote https://charts.example.com.
func repositoryKey(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", false
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/"), true
}

// withoutUserInfo is raw without the user part of its URL, for a URL
// that may carry credentials (git-url) and is handed to code that may
// quote it; raw as it is when it is not such a URL (user@host:path).
func withoutUserInfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || u.Host == "" {
		return raw
	}
	u.User = nil
	return u.String()
}
