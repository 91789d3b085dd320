package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"

	promconfig "github.com/prometheus/common/config"

	"github.com/recommend-job/recommend-job/internal/config"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// newPrometheusAPI builds the client of the Prometheus-compatible API from
// the configuration's HTTP client settings (authentication, TLS, headers,
// proxy): usage's client, which decodes each answer once as it arrives.
func newPrometheusAPI(c *config.Config, opts ...usage.ClientOption) (*usage.Client, error) {
	hc, err := c.PrometheusHTTP()
	if err != nil {
		return nil, err
	}
	client, err := promconfig.NewClientFromConfig(hc, "prometheus")
	if err != nil {
		// Only the CA is read here; its error names the file.
		return nil, fmt.Errorf("prometheus-ca-file: %w", err)
	}
	if client.Transport, err = managedAuth(c, client.Transport); err != nil {
		return nil, err
	}
	client.Transport = gzipTransport{client.Transport}
	apiClient, err := usage.NewClient(c.PrometheusURL, client)
	if err != nil {
		return nil, fmt.Errorf("prometheus-url: %w", err)
	}
	return apiClient, nil
}

// gzipTransport asks for a compressed answer and decompresses it. The
// client library's transport leaves compression off, as it was made for
// scrapes, which ask themselves; a week of one namespace's history is
// several megabytes of JSON, a tenth of that compressed.
type gzipTransport struct{ next http.RoundTripper }

func (t gzipTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") != "" {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
		return resp, err
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("decompressing the answer: %w", err)
	}
	resp.Body = gzipBody{zr, resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength, resp.Uncompressed = -1, true
	return resp, nil
}

// gzipBody reads the decompressed answer and closes the connection's body.
type gzipBody struct {
	*gzip.Reader
	body io.Closer
}

func (b gzipBody) Close() error { return b.body.Close() }
