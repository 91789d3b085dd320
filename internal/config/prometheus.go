package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// completePrometheus validates the Prometheus and algorithm settings; errors
// name the key and never quote a credential.
func (c *Config) completePrometheus() []error {
	var errs []error
	if c.PrometheusURL == "" {
		errs = append(errs, errors.New("prometheus-url: required"))
	} else if err := checkURL(c.PrometheusURL, "http", "https"); err != nil {
		errs = append(errs, fmt.Errorf("prometheus-url: %w", err))
	}
	if c.PrometheusBearerToken != "" && c.PrometheusBearerTokenFile != "" {
		errs = append(errs, errors.New("prometheus-bearer-token-file: must not be set together with prometheus-bearer-token"))
	}
	bearer := c.PrometheusBearerToken != "" || c.PrometheusBearerTokenFile != ""
	if bearer && c.basicAuth() {
		errs = append(errs, errors.New("prometheus-username: basic authentication and a bearer token exclude each other"))
	}
	errs = append(errs, c.completeManagedAuth(bearer)...)
	if c.PrometheusPassword != "" && c.PrometheusPasswordFile != "" {
		errs = append(errs, errors.New("prometheus-password-file: must not be set together with prometheus-password"))
	}
	if _, err := c.prometheusHeaders(); err != nil {
		errs = append(errs, err)
	}
	if strings.ContainsAny(c.PrometheusLabelFilter, "{}") {
		errs = append(errs, errors.New(`prometheus-label-filter: must be label matchers without braces, e.g. cluster="prod"`))
	}
	for _, d := range []struct {
		key  string
		text string
		into *time.Duration
	}{{"prometheus-step", c.PrometheusStep, &c.Parsed.PrometheusStep}, {"prometheus-rate-window", c.PrometheusRateWindow, &c.Parsed.PrometheusRateWindow}} {
		v, err := parseAuto(d.text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.key, err))
		}
		*d.into = v
	}
	if c.PrometheusTimeout <= 0 {
		errs = append(errs, fmt.Errorf("prometheus-timeout: must be positive, got %v", c.PrometheusTimeout))
	}
	if c.PrometheusConcurrency < 1 {
		errs = append(errs, fmt.Errorf("prometheus-concurrency: must be at least 1, got %d", c.PrometheusConcurrency))
	}
	// The bounds of the extensions that override them, so that the run's
	// own window costs no more queries than a ResourceRecommend may ask.
	if err := collect.CheckWindow(c.Window); err != nil {
		errs = append(errs, fmt.Errorf("window: %w", err))
	}
	if err := collect.CheckHalfLife(c.HalfLife); err != nil {
		errs = append(errs, fmt.Errorf("half-life: %w", err))
	}
	if err := collect.CheckPeakInterval(c.MemoryPeakInterval); err != nil {
		errs = append(errs, fmt.Errorf("memory-peak-interval: %w", err))
	}
	// Startup peaks are read per hour: a longer window is no startup.
	if c.StartupWindow < 0 || c.StartupWindow > time.Hour {
		errs = append(errs, fmt.Errorf("startup-window: must be between 0 and 1h, got %s", c.StartupWindow))
	}
	if err := collect.CheckPercentile(c.Percentile); err != nil {
		errs = append(errs, fmt.Errorf("percentile: %w", err))
	}
	if c.MinSamples < 1 {
		errs = append(errs, fmt.Errorf("min-samples: must be at least 1, got %d", c.MinSamples))
	}
	if !(c.ChangeThreshold >= 0 && c.ChangeThreshold < 1) {
		errs = append(errs, fmt.Errorf("change-threshold: must be in [0, 1), got %v", c.ChangeThreshold))
	}
	return errs
}

// basicAuth reports whether basic authentication is configured.
func (c *Config) basicAuth() bool {
	return c.PrometheusUsername != "" || c.PrometheusPassword != "" || c.PrometheusPasswordFile != ""
}

// prometheusHeaders parses prometheus-headers. The values are kept as
// secrets, which the client's configuration never prints: a gateway's API
// key may come this way.
func (c *Config) prometheusHeaders() (*promconfig.Headers, error) {
	h := &promconfig.Headers{Headers: map[string]promconfig.Header{}}
	for _, kv := range c.PrometheusHeaders {
		name, value, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || !headerName.MatchString(name) {
			return nil, fmt.Errorf("prometheus-headers: want Name=value, got an entry named %q", name)
		}
		name = http.CanonicalHeaderKey(name)
		// Authentication has its own keys, which keep it out of logs.
		if name == "Authorization" {
			return nil, errors.New("prometheus-headers: set Authorization through prometheus-bearer-token or prometheus-username")
		}
		header := h.Headers[name]
		header.Secrets = append(header.Secrets, promconfig.Secret(value))
		h.Headers[name] = header
	}
	// Headers the client sets itself, such as Host or User-Agent.
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus-headers: %w", err)
	}
	return h, nil
}

// PrometheusHTTP is the configuration of the Prometheus API's HTTP client:
// a bearer token or basic authentication, whose files are read on every
// request; the CA, reloaded when its file changes; the extra headers; and
// the proxy of the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), as
// for every other client of a run. Redirects are followed, without
// credentials to another host.
func (c *Config) PrometheusHTTP() (promconfig.HTTPClientConfig, error) {
	hc := promconfig.DefaultHTTPClientConfig
	hc.ProxyFromEnvironment = true
	hc.BearerToken = promconfig.Secret(c.PrometheusBearerToken)
	hc.BearerTokenFile = c.PrometheusBearerTokenFile
	if c.basicAuth() {
		hc.BasicAuth = &promconfig.BasicAuth{Username: c.PrometheusUsername,
			Password: promconfig.Secret(c.PrometheusPassword), PasswordFile: c.PrometheusPasswordFile}
	}
	hc.TLSConfig = promconfig.TLSConfig{CAFile: c.PrometheusCAFile, InsecureSkipVerify: c.PrometheusInsecureSkipVerify}
	headers, err := c.prometheusHeaders()
	if err != nil {
		return hc, err
	}
	if len(headers.Headers) > 0 {
		hc.HTTPHeaders = headers
	}
	if c.PrometheusOAuth2TokenURL != "" {
		hc.OAuth2 = &promconfig.OAuth2{TokenURL: c.PrometheusOAuth2TokenURL, ClientID: c.PrometheusOAuth2ClientID,
			ClientSecretFile: c.PrometheusOAuth2ClientSecretFile, Scopes: c.PrometheusOAuth2Scopes,
			// The token endpoint is reached as the API is.
			ProxyConfig: promconfig.ProxyConfig{ProxyFromEnvironment: true}, TLSConfig: hc.TLSConfig}
	}
	// Validate also moves the bearer token where the client reads it.
	if err := hc.Validate(); err != nil {
		return hc, fmt.Errorf("prometheus client: %w", err)
	}
	return hc, nil
}

// UsageOptions are the settings of the usage reader.
func (c *Config) UsageOptions(log *slog.Logger) []usage.Option {
	return []usage.Option{
		usage.WithWindow(c.Window),
		usage.WithStep(c.Parsed.PrometheusStep),
		usage.WithRateWindow(c.Parsed.PrometheusRateWindow),
		usage.WithPeakInterval(c.MemoryPeakInterval),
		usage.WithStartupWindow(c.StartupWindow),
		usage.WithLabelFilter(c.PrometheusLabelFilter),
		usage.WithOwnership(c.PrometheusOwnership),
		usage.WithQueryTimeout(c.PrometheusTimeout),
		usage.WithLogger(log),
	}
}

// Algorithm are the run-wide settings of the algorithm, which a
// ResourceRecommend's extensions override.
func (c *Config) Algorithm() recommend.Options {
	threshold := c.ChangeThreshold
	if threshold == 0 {
		threshold = recommend.EveryChange
	}
	return recommend.Options{
		CPUPercentile:    c.Percentile,
		MemoryPercentile: c.Percentile,
		HalfLife:         c.HalfLife,
		MinSamples:       c.MinSamples,
		ChangeThreshold:  threshold,
	}
}

// completeManagedAuth validates the managed services' authentication:
// one method at most, with what it needs.
func (c *Config) completeManagedAuth(bearer bool) []error {
	var errs []error
	methods := []string{}
	for _, m := range []struct {
		key string
		on  bool
	}{
		// Which of these two is checked above.
		{"a bearer token or basic authentication", bearer || c.basicAuth()},
		{"prometheus-sigv4-region", c.PrometheusSigV4Region != ""},
		{"prometheus-oauth2-token-url", c.PrometheusOAuth2TokenURL != ""},
		{"prometheus-google-credentials", c.PrometheusGoogleCredentials},
	} {
		if m.on {
			methods = append(methods, m.key)
		}
	}
	if len(methods) > 1 {
		errs = append(errs, fmt.Errorf("prometheus authentication: set one method, got %s", strings.Join(methods, " and ")))
	}
	if c.PrometheusSigV4RoleARN != "" && c.PrometheusSigV4Region == "" {
		errs = append(errs, errors.New("prometheus-sigv4-role-arn: needs prometheus-sigv4-region"))
	}
	if c.PrometheusOAuth2TokenURL == "" {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"prometheus-oauth2-client-id", c.PrometheusOAuth2ClientID != ""},
			{"prometheus-oauth2-client-secret-file", c.PrometheusOAuth2ClientSecretFile != ""},
			{"prometheus-oauth2-scopes", len(c.PrometheusOAuth2Scopes) > 0},
		} {
			if k.set {
				errs = append(errs, fmt.Errorf("%s: needs prometheus-oauth2-token-url", k.key))
			}
		}
	} else {
		if err := checkURL(c.PrometheusOAuth2TokenURL, "http", "https"); err != nil {
			errs = append(errs, fmt.Errorf("prometheus-oauth2-token-url: %w", err))
		}
		if c.PrometheusOAuth2ClientID == "" || c.PrometheusOAuth2ClientSecretFile == "" {
			errs = append(errs, errors.New("prometheus-oauth2-token-url: needs prometheus-oauth2-client-id and prometheus-oauth2-client-secret-file"))
		}
	}
	return errs
}
