package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

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
	if c.PrometheusBearerToken != "" && c.PrometheusBearerTokenFile != "" {
		errs = append(errs, errors.New("prometheus-bearer-token-file: must not be set together with prometheus-bearer-token"))
	}
	bearer := c.PrometheusBearerToken != "" || c.PrometheusBearerTokenFile != ""
	basic := c.PrometheusUsername != "" || c.PrometheusPassword != "" || c.PrometheusPasswordFile != ""
	if bearer && basic {
		errs = append(errs, errors.New("prometheus-username: basic authentication and a bearer token exclude each other"))
	}
	if c.PrometheusPassword != "" && c.PrometheusPasswordFile != "" {
		errs = append(errs, errors.New("prometheus-password-file: must not be set together with prometheus-password"))
	}
	if _, err := c.prometheusHeaders(); err != nil {
		errs = append(errs, err)
	}
	if strings.ContainsAny(c.PrometheusLabelFilter, "{}") {
		errs = append(errs, errors.New(`prometheus-label-filter: must be label matchers without braces, e.g. cluster="prod"`))
	}
	for key, d := range map[string]interface{ Seconds() float64 }{
		"prometheus-step": c.PrometheusStep, "prometheus-rate-window": c.PrometheusRateWindow,
		"prometheus-timeout": c.PrometheusTimeout,
	} {
		if d.Seconds() <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %v", key, d))
		}
	}
	// The bounds of the extensions that override them.
	if err := collect.CheckHalfLife(c.HalfLife); err != nil {
		errs = append(errs, fmt.Errorf("half-life: %w", err))
	}
	if err := collect.CheckPeakInterval(c.MemoryPeakInterval); err != nil {
		errs = append(errs, fmt.Errorf("memory-peak-interval: %w", err))
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

// prometheusHeaders parses prometheus-headers into canonical names.
func (c *Config) prometheusHeaders() (http.Header, error) {
	h := http.Header{}
	for _, kv := range c.PrometheusHeaders {
		name, value, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || !headerName.MatchString(name) {
			return nil, fmt.Errorf("prometheus-headers: want Name=value, got an entry named %q", name)
		}
		// Authentication has its own keys, which keep it out of logs.
		if http.CanonicalHeaderKey(name) == "Authorization" {
			return nil, errors.New("prometheus-headers: set Authorization through prometheus-bearer-token or prometheus-username")
		}
		h.Add(name, value)
	}
	return h, nil
}

// newPrometheusAPI builds the client of the Prometheus-compatible API with
// the configured authentication, TLS and headers.
func newPrometheusAPI(c *Config) (promv1.API, error) {
	headers, err := c.prometheusHeaders()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.PrometheusCAFile != "" || c.PrometheusInsecureSkipVerify {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.PrometheusInsecureSkipVerify} // only when asked for
		if c.PrometheusCAFile != "" {
			pem, err := os.ReadFile(c.PrometheusCAFile)
			if err != nil {
				return nil, fmt.Errorf("prometheus-ca-file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, errors.New("prometheus-ca-file: no PEM certificate in the file")
			}
		}
		transport.TLSClientConfig = tc
	}
	rt := &authTransport{next: transport, headers: headers, token: c.PrometheusBearerToken, tokenFile: c.PrometheusBearerTokenFile,
		username: c.PrometheusUsername, password: c.PrometheusPassword, passwordFile: c.PrometheusPasswordFile}
	client, err := api.NewClient(api.Config{Address: c.PrometheusURL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus-url: %w", err)
	}
	return promv1.NewAPI(client), nil
}

// authTransport adds the configured headers and credentials to every
// request. Files are read on every request, so that rotated credentials
// (a projected service account token, a remounted Secret) are picked up.
type authTransport struct {
	next                             http.RoundTripper
	headers                          http.Header
	token, tokenFile                 string
	username, password, passwordFile string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for name, values := range t.headers {
		req.Header[name] = values
	}
	switch {
	case t.token != "" || t.tokenFile != "":
		token, err := secret(t.token, t.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus-bearer-token-file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	case t.username != "" || t.password != "" || t.passwordFile != "":
		password, err := secret(t.password, t.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus-password-file: %w", err)
		}
		req.SetBasicAuth(t.username, password)
	}
	return t.next.RoundTrip(req)
}

// secret is value, or the trimmed content of file when value is empty. The
// error names neither the content nor, beyond the file, anything else.
func secret(value, file string) (string, error) {
	if value != "" || file == "" {
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// usageOptions are the reader's settings from c.
func usageOptions(c *Config, log *slog.Logger) []usage.Option {
	return []usage.Option{
		usage.WithWindow(c.Window),
		usage.WithStep(c.PrometheusStep),
		usage.WithRateWindow(c.PrometheusRateWindow),
		usage.WithPeakInterval(c.MemoryPeakInterval),
		usage.WithLabelFilter(c.PrometheusLabelFilter),
		usage.WithOwnership(c.PrometheusOwnership),
		usage.WithQueryTimeout(c.PrometheusTimeout),
		usage.WithLogger(log),
	}
}

// algorithmOptions are the run-wide algorithm settings from c.
func algorithmOptions(c *Config) recommend.Options {
	threshold := c.ChangeThreshold
	if threshold == 0 {
		threshold = -1 // every change is written
	}
	return recommend.Options{
		CPUPercentile:    c.Percentile,
		MemoryPercentile: c.Percentile,
		HalfLife:         c.HalfLife,
		MinSamples:       c.MinSamples,
		ChangeThreshold:  threshold,
	}
}
